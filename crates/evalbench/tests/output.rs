//! Standard output that fails: a full disk is an error (exit 2, said on
//! stderr), a reader that went away (`| head`) ends the command quietly;
//! never a panic, never output lost without a word.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

fn to_dev_full(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    evalbench().args(args).stdout(full).output().unwrap()
}

/// The command with its standard output's reader closed before it writes.
fn to_closed_pipe(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut child = evalbench().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn strace_file(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("strace.txt");
    let ok = Command::new("strace")
        .args(["-f", "-ttt", "-T", "-o"])
        .arg(&f)
        .args(["sh", "-c", "ls / >/dev/null; cat /etc/hostname >/dev/null"])
        .status()
        .unwrap();
    assert!(ok.success());
    f
}

#[test]
fn a_full_disk_is_exit_2_and_a_closed_pipe_a_quiet_end() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(&tmp.path().join("b"), &[]);
    let trace = strace_file(tmp.path());
    let os = |s: &str| std::ffi::OsString::from(s);
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![os("decode"), os("strace"), trace.clone().into(), os("--json")],
        vec![os("decode"), os("strace"), trace.into()],
        vec![os("summarize"), os("--quiet"), bundle.clone().into(), os("-o"), tmp.path().join("s").into()],
        vec![
            os("summarize"),
            os("--quiet"),
            os("--json"),
            bundle.clone().into(),
            os("-o"),
            tmp.path().join("s2").into(),
        ],
        vec![os("compare"), bundle.clone().into(), bundle.clone().into()],
        vec![os("compare"), os("--json"), bundle.clone().into(), bundle.clone().into()],
        vec![os("lab"), os("gen-flake"), os("--out"), tmp.path().join("f").into()],
    ];
    for c in &cases {
        let args: Vec<&std::ffi::OsStr> = c.iter().map(|a| a.as_os_str()).collect();
        let shown = format!("{c:?}");
        let full = to_dev_full(&args);
        let err = String::from_utf8_lossy(&full.stderr);
        assert!(!err.contains("panicked"), "{shown} > /dev/full: {err}");
        // gen-flake prints nothing: nothing to lose, success.
        if c[0] == "lab" {
            assert_eq!(full.status.code(), Some(0), "{shown}: {err}");
            continue;
        }
        assert_eq!(full.status.code(), Some(2), "{shown} > /dev/full must fail: {err}");
        assert!(err.contains("writing to standard output") && err.contains("No space left"), "{shown}: {err}");
        let closed = to_closed_pipe(&args);
        let err = String::from_utf8_lossy(&closed.stderr);
        assert_eq!(closed.status.code(), Some(0), "{shown} | (closed): {err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("standard output"),
            "{shown}: {err}"
        );
    }
}
