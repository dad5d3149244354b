//! `decode nix-trace` on a real trace of nix 2.8, against counts made here
//! independently, line by line: calls per call site, self time per stack.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// A real trace: nix evaluating a generated flake with --trace-function-calls.
fn real_trace(dir: &Path) -> std::path::PathBuf {
    let flake = dir.join("flake");
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "20", "--work", "200", "--out"]).arg(&flake));
    let trace = dir.join("trace.txt");
    let out = Command::new("nix")
        .args(["eval", "--json", "--option", "eval-cache", "false", "--trace-function-calls"])
        .arg(format!("path:{}#packages.x86_64-linux", flake.display()))
        .args(["--apply", "ps: builtins.mapAttrs (n: p: p.drvPath) ps"])
        .env("NIX_CONFIG", NIX_CONFIG)
        .stderr(std::fs::File::create(&trace).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    trace
}

fn short(pos: &str) -> String {
    // /nix/store/<32 chars>-<name>/rest -> rest
    match pos.strip_prefix("/nix/store/").and_then(|r| r.split_once('/')) {
        Some((head, tail)) if head.len() > 33 => tail.to_string(),
        _ => pos.to_string(),
    }
}

#[test]
fn the_fold_is_exact_against_a_direct_count() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = real_trace(tmp.path());
    let text = std::fs::read_to_string(&trace).unwrap();
    // The independent count: entered lines per position; self time per full
    // stack by a plain stack of (path, start, children's time).
    let mut calls: BTreeMap<String, u64> = BTreeMap::new();
    let mut self_ns: BTreeMap<String, u64> = BTreeMap::new();
    let mut open: Vec<(String, String, u64, u64)> = Vec::new(); // (pos, path, start, child)
    let mut lines = 0u64;
    for l in text.lines() {
        let (entered, rest) =
            match (l.strip_prefix("function-trace entered "), l.strip_prefix("function-trace exited ")) {
                (Some(r), _) => (true, r),
                (_, Some(r)) => (false, r),
                _ => continue,
            };
        lines += 1;
        let (pos, ns) = rest.rsplit_once(" at ").unwrap();
        let (pos, ns) = (short(pos), ns.parse::<u64>().unwrap());
        if entered {
            *calls.entry(pos.clone()).or_default() += 1;
            let path = match open.last() {
                Some(p) => format!("{};{pos}", p.1),
                None => pos.clone(),
            };
            open.push((pos, path, ns, 0));
        } else {
            let (p, path, start, child) = open.pop().unwrap();
            assert_eq!(p, pos, "this trace is well nested");
            *self_ns.entry(path).or_default() += ns - start - child;
            if let Some(parent) = open.last_mut() {
                parent.3 += ns - start;
            }
        }
    }
    assert!(lines > 10_000, "a real trace: {lines} lines");
    let out = run_ok(evalbench().args(["decode", "nix-trace", "--json", "--max-depth", "0"]).arg(&trace));
    let records: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (summary, stacks) = records.split_last().unwrap();
    let summary = &summary["summary"];
    assert_eq!(summary["lines"], lines);
    assert_eq!(summary["calls"], calls.values().sum::<u64>());
    let got: BTreeMap<String, u64> = summary["by_position"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["position"].as_str().unwrap().to_string(), p["calls"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, calls, "calls per position");
    assert_eq!(stacks.len(), self_ns.len(), "one record per stack");
    for s in stacks {
        let path = s["stack"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect::<Vec<_>>().join(";");
        let want_us = self_ns[&path] as f64 / 1000.0;
        let got_us = s["self_us"].as_f64().unwrap();
        assert!((got_us - want_us).abs() <= 1.0, "{path}: {got_us} µs against {want_us} µs");
    }
    // The folded text is inferno's format: the same stacks, weights in µs.
    let folded = String::from_utf8(run_ok(evalbench().args(["decode", "nix-trace"]).arg(&trace)).stdout).unwrap();
    assert!(folded.lines().all(|l| l.rsplit_once(' ').is_some_and(|(_, n)| n.parse::<u64>().is_ok())));
}

#[test]
fn nix_2_30_flamegraph_profiles_are_read_as_samples() {
    // Hand-written: no Nix 2.30 can be installed here. Its format, from Nix's
    // manual: `file:line:col:name;...` then a space and the sample count.
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("nix.profile");
    std::fs::write(&f, "flake.nix:3:5:outputs;lib/fix.nix:1:7:fix 12\nflake.nix:3:5:outputs 3\n").unwrap();
    let out = run_ok(evalbench().args(["decode", "nix-trace", "--json"]).arg(&f));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["stack"], serde_json::json!(["flake.nix:3:5:outputs", "lib/fix.nix:1:7:fix"]));
    assert_eq!(lines[0]["samples"], 12);
    assert_eq!(lines[2]["summary"]["samples"], 15);
    // A line that is neither: an error naming the file and the line.
    std::fs::write(&f, "flake.nix:3:5:outputs 3\nnot a stack\n").unwrap();
    let bad = evalbench().args(["decode", "nix-trace"]).arg(&f).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("nix.profile") && err.contains("line 2"), "{err}");
}
