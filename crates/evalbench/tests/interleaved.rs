//! `run --baseline`: two flakes measured in one session, pass by pass
//! interleaved, each in a lab of its own, then compared. Real labs: the
//! hello flake (`--work 1500`) against a generated flake with more work per
//! package (`--work 1800`).
//!
//! - Both bundles are whole, share one session id and name each other.
//! - The passes alternate: A before B in odd rounds, B before A in even ones
//!   (read from the requested times in run.json).
//! - The sides cross between the two labs (round 2 runs each on the
//!   other's), and each side's runs evaluate its own flake wherever they ran.
//! - The comparison is written beside them, says the two were measured in
//!   one session, and the gate fires on nix's exact counters.
//! - Both labs are stopped.

mod common;

use std::path::Path;

use common::*;

fn requested(dir: &Path) -> i64 {
    read_json(&dir.join("run.json"))["requested_us"].as_i64().unwrap()
}

#[test]
fn a_baseline_is_measured_interleaved_in_one_session() {
    let tmp = reachable_tmp("evalbench-interleaved-test.");
    let (out, lab, flake) = (tmp.path().join("out"), tmp.path().join("lab"), tmp.path().join("flake-1800"));
    run_ok(evalbench().args(["lab", "gen-flake", "--work", "1800", "--out"]).arg(&flake));
    let hello = tmp.path().join("hello");
    run_ok(evalbench().args(["lab", "gen-flake", "--work", "1500", "--out"]).arg(&hello));
    let res = evalbench()
        .args([
            "run",
            "--passes",
            "cold-clean,warm-clean",
            "--repeat",
            "2",
            "--no-report",
            "--fail-on-regression",
            "5%",
            "--out",
        ])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .arg("--baseline")
        .arg(&hello)
        .arg("--flake")
        .arg(&flake)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    let stdout = String::from_utf8_lossy(&res.stdout);
    // nix did 20% more work per package on B: the gate fires without any time verdict.
    assert_eq!(res.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("regression past 5%: cold-clean nrFunctionCalls"), "{stderr}");
    assert!(stdout.contains("A: ") && stdout.contains("B: "), "the comparison printed: {stdout}");

    // Two whole bundles, one session, each naming the other.
    let (a, b) = (out.join("a"), out.join("b"));
    let pa = &read_json(&a.join("cold-clean.2/run.json"))["provenance"];
    let pb = &read_json(&b.join("warm-clean/run.json"))["provenance"];
    assert!(pa["session"].as_str().is_some_and(|s| !s.is_empty()), "{pa}");
    assert_eq!(pa["session"], pb["session"], "one session");
    assert_eq!(pa["interleaved_with"], flake.display().to_string());
    assert_eq!(pb["interleaved_with"], hello.display().to_string());
    assert_eq!(pa["workload"]["flake"], hello.display().to_string());
    for side in [&a, &b] {
        let s = read_json(&side.join("summary.json"));
        assert_eq!(s["passes"].as_array().unwrap().len(), 4, "{}: two passes, two runs each", side.display());
        assert_eq!(s["repeats"][0]["runs"], 2, "{}", side.display());
    }
    // Interleaved: A then B in round 1, B then A in round 2, for each pass.
    for pass in ["cold-clean", "warm-clean"] {
        assert!(requested(&a.join(pass)) < requested(&b.join(pass)), "{pass}: round 1 is A B");
        let again = format!("{pass}.2");
        assert!(requested(&b.join(&again)) < requested(&a.join(&again)), "{again}: round 2 is B A");
    }
    assert!(requested(&b.join("warm-clean")) < requested(&b.join("cold-clean.2")), "rounds follow one another");

    crossed_each_side_ran_on_both_labs(&a, &b);

    // The comparison beside them says where the two were measured.
    let cmp = read_json(&out.join("compare.json"));
    assert_eq!(cmp["same_session"], true, "{cmp}");
    assert!(cmp["gate"]["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str().unwrap().contains("nrFunctionCalls")));
    let text = std::fs::read_to_string(out.join("compare.txt")).unwrap();
    assert!(flat(&text).contains("measured in one session, interleaved"), "{text}");
    assert_eq!(text, stdout, "what was printed is what was written");
    assert!(flat(&text).contains("runs on A's lab and on B's: A 1 and 1, B 1 and 1"), "{text}");

    both_labs_stopped(&lab);
}

/// Crossed: round 1 runs each side on its own lab, round 2 on the
/// other's; each warm-up is made on both. Each lab then evaluated both
/// flakes, and each side's flake was the one evaluated: nix's exact
/// counters agree within a side, whichever lab ran it, and differ between the sides.
fn crossed_each_side_ran_on_both_labs(a: &Path, b: &Path) {
    let instance = |d: &Path| read_json(&d.join("run.json"))["instance"].as_u64();
    let calls = |d: &Path| read_json(&d.join("run.json"))["nix_stats"]["nrFunctionCalls"].as_u64().unwrap();
    for (side, own, other) in [(a, 0, 1), (b, 1, 0)] {
        for pass in ["cold-clean", "warm-clean", "warmup/cold-clean"] {
            assert_eq!(instance(&side.join(pass)), Some(own), "{}/{pass}", side.display());
            assert_eq!(instance(&side.join(format!("{pass}.2"))), Some(other), "{}/{pass}.2", side.display());
            if pass.contains("cold") {
                assert_eq!(
                    calls(&side.join(pass)),
                    calls(&side.join(format!("{pass}.2"))),
                    "{}/{pass}: one flake",
                    side.display()
                );
            }
        }
    }
    assert!(calls(&b.join("cold-clean")) > calls(&a.join("cold-clean")), "B's flake does more work");
    assert!(!a.join("warmup/cold-clean.3").exists(), "one warm-up on each lab");
}

/// Both labs are stopped.
fn both_labs_stopped(lab: &Path) {
    for side in ["a", "b"] {
        let state = read_json(&lab.join(side).join("lab.json"));
        assert!(
            state["server_pid"].is_null() && state["worker_pids"].as_array().unwrap().is_empty(),
            "{side}: {state}"
        );
        assert!(!lab.join(side).join("pg/data/postmaster.pid").exists(), "{side}");
    }
}

#[test]
fn a_baseline_needs_the_lab() {
    let tmp = tempfile::tempdir().unwrap();
    let res = evalbench()
        .args([
            "run",
            "--target",
            "gradient",
            "--target-config",
            "/nonexistent.json",
            "--baseline",
            "/nonexistent",
            "--out",
        ])
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&res.stderr).contains("--baseline interleaves two labs"),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
}

/// `run --flake REPO --baseline-rev HEAD~1`: the flake's previous commit is
/// checked out beside the user's tree, measured interleaved with it, and
/// removed; the user's checkout is as it was. The warm-up runs are kept
/// apart and counted in the plan, and nix's exact counters find the change.
#[test]
fn a_baseline_revision_is_checked_out_beside_the_tree_and_measured_interleaved() {
    let tmp = reachable_tmp("evalbench-baseline-rev-test.");
    let (out, lab, repo) = (tmp.path().join("out"), tmp.path().join("lab"), tmp.path().join("repo"));
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git").arg("-C").arg(&repo).args(args).output().unwrap();
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    for (work, msg) in [("1500", "work 1500"), ("1800", "work 1800")] {
        run_ok(evalbench().args(["lab", "gen-flake", "--packages", "20", "--work", work, "--out"]).arg(&repo));
        if msg == "work 1500" {
            git(&["init", "-q"]);
        }
        git(&["add", "-A"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", msg]);
    }
    let (head, before) = (git(&["rev-parse", "HEAD"]), git(&["rev-parse", "HEAD~1"]));
    let res = evalbench()
        .args(["run", "--passes", "cold-clean", "--repeat", "2", "--warmup", "1", "--no-report", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .arg("--flake")
        .arg(&repo)
        .args(["--baseline-rev", "HEAD~1", "--fail-on-regression", "5"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(1), "the counters gate: {stderr}");
    assert!(stderr.contains("regression past 5%: cold-clean nrFunctionCalls"), "{stderr}");
    let cmp = read_json(&out.join("compare.json"));
    assert_eq!(cmp["same_session"], true);
    let (pa, pb) = (&cmp["provenance"]["a"]["workload"], &cmp["provenance"]["b"]["workload"]);
    assert_eq!(pa["flake"], format!("{}@{}", repo.display(), &before[..12]), "{pa}");
    assert_eq!(pa["rev"], before, "{pa}");
    assert_eq!(pb["rev"], head, "{pb}");
    assert_ne!(pa["nar_hash"], pb["nar_hash"]);
    // The user's checkout: the same commit, nothing changed, no worktree left.
    assert_eq!(git(&["rev-parse", "HEAD"]), head);
    assert_eq!(git(&["status", "--porcelain"]), "");
    assert_eq!(git(&["worktree", "list"]).lines().count(), 1, "{}", git(&["worktree", "list"]));
    // One warm-up run a side, kept apart, in the plan, in no statistic.
    for side in ["a", "b"] {
        let b = out.join(side);
        assert!(b.join("warmup/cold-clean/run.json").is_file(), "{side}");
        assert!(!b.join("cold-clean.3").exists(), "{side}");
        let s = read_json(&b.join("summary.json"));
        assert_eq!(s["repeats"][0]["runs"], 2, "{side}");
        assert_eq!(read_json(&b.join("cold-clean/run.json"))["provenance"]["plan"]["warmup_clean"], 1);
    }
}
