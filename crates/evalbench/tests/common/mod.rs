//! Shared helpers: bundles made by the real sample pipeline.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn evalbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_evalbench"))
}

pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("evalbench runs");
    assert!(
        out.status.success(),
        "{:?} failed: {}\nstdout: {}\nstderr: {}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs the sample pipeline into `dir` with the given extra arguments.
pub fn sample(dir: &Path, extra: &[&str]) -> PathBuf {
    run_ok(evalbench().arg("sample").arg("--out").arg(dir).args(extra));
    dir.to_path_buf()
}

pub fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every span line of a pass's trace directory.
pub fn span_lines(pass_dir: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(pass_dir.join("trace")).unwrap() {
        let p = e.unwrap().path();
        for l in std::fs::read_to_string(&p).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v.get("name").is_some() {
                out.push(v);
            }
        }
    }
    out
}
