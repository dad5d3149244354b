//! What a verdict between two sessions may say, held to account by
//! construction (seeded synthetic bundles, as `verdicts.rs`):
//!
//! - a side whose evaluated seconds drift through its runs bounds every row
//!   of the pass: spans moved by less than that drift are not called, and
//!   the pass says where the drift was measured; the same rows measured in
//!   one interleaved session are called;
//! - a side whose runs were made while other processes used the machine
//!   gets no time verdict, the other processes' CPU named as the reason,
//!   while nix's exact counters are still judged;
//! - between sessions a row that moved by less than a hundredth of the
//!   evaluated seconds is not called, whatever its percentage; in one session it is;
//! - a bundle compared with itself says so.

mod common;

use std::path::Path;

use common::synthetic::*;
use common::*;

fn compare_json(a: &Path, b: &Path, extra: &[&str]) -> serde_json::Value {
    let out = evalbench()
        .arg("compare")
        .arg(a)
        .arg(b)
        .args(["--json", "--between-sessions", "0"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every run.json of a bundle's pass, in run order, edited by `f(run index, value)`.
fn edit_runs(bundle: &Path, pass: &str, runs: usize, f: impl Fn(usize, &mut serde_json::Value)) {
    for k in 1..=runs {
        let name = if k == 1 { pass.to_string() } else { format!("{pass}.{k}") };
        let p = bundle.join(name).join("run.json");
        let mut v = read_json(&p);
        f(k - 1, &mut v);
        std::fs::write(&p, v.to_string()).unwrap();
    }
}

fn called(v: &serde_json::Value, pass: &str) -> Vec<String> {
    let p = v["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == pass).unwrap();
    p["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| matches!(r["verdict"]["kind"].as_str(), Some("faster" | "slower")))
        .map(|r| r["what"].as_str().unwrap().to_string())
        .collect()
}

fn set_session(bundle: &Path, runs: usize, session: &str) {
    for pass in PASSES {
        edit_runs(bundle, pass, runs, |_, v| {
            v["provenance"] = serde_json::json!({"session": session, "interleaved_with": "other"})
        });
    }
}

#[test]
fn a_drifting_side_bounds_every_row_between_sessions_and_not_within_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    const RUNS: usize = 24;
    // B: three spans 25% slower, nothing else.
    write_bundle(&a, &Truth::baseline(), RUNS, 1);
    write_bundle(&b, &Truth::baseline().shifted(&[(3, 1.25), (17, 1.25), (41, 1.25)], 1.0), RUNS, 2);
    let steady = compare_json(&a, &b, &[]);
    let mut found = called(&steady, "cold-clean");
    found.sort();
    assert_eq!(found, ["eval step_03", "eval step_17", "eval step_41"], "steady sides: the three are found");
    // A's evaluated seconds climb 70% through its runs, as a machine that
    // slowed under the session (its blocks' medians lie about 40% apart):
    // no span may be called within that drift.
    edit_runs(&a, "cold-clean", RUNS, |i, v| {
        v["evaluated_s"] = serde_json::json!(6.0 * (1.0 + 0.7 * i as f64 / (RUNS - 1) as f64))
    });
    let drifted = compare_json(&a, &b, &["--fail-on-regression", "5"]);
    assert_eq!(called(&drifted, "cold-clean"), Vec::<String>::new(), "{drifted}");
    let pass = &drifted["passes"].as_array().unwrap()[0];
    let bound = &pass["conditions"]["drift"];
    assert_eq!((bound["side"].as_str(), bound["on"].as_str()), (Some("A"), Some("evaluated seconds")), "{bound}");
    assert!(bound["fraction"].as_f64().unwrap() > 0.3, "{bound}");
    let row = pass["spans"].as_array().unwrap().iter().find(|r| r["what"] == "eval step_17").unwrap();
    assert!(row["verdict"]["text"].as_str().unwrap().contains("inside the machine's drift of"), "{row}");
    assert!(pass["conditions"]["trends"][0]["side"] == "A", "the climb is named as a trend: {}", pass["conditions"]);
    // The other pass did not drift: its rows keep their own tests.
    let mut warm = called(&drifted, "warm-clean");
    warm.sort();
    assert_eq!(warm, ["eval step_03", "eval step_17", "eval step_41"]);
    // The same runs measured interleaved in one session: the drift fell on both alike.
    set_session(&a, RUNS, "s1");
    set_session(&b, RUNS, "s1");
    let one = compare_json(&a, &b, &[]);
    let mut found = called(&one, "cold-clean");
    found.sort();
    assert_eq!(found, ["eval step_03", "eval step_17", "eval step_41"], "{}", one["passes"][0]["conditions"]);
    assert!(one["passes"][0]["conditions"]["drift"].is_null());
}

#[test]
fn between_sessions_a_row_must_move_by_a_hundredth_of_the_evaluation() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    const RUNS: usize = 24;
    // Two spans 30% slower on B: one of 2-30 ms (under a hundredth of the
    // cold pass's 6 s), one over 300 ms. Past the 20% allowance, both.
    let truth = Truth::baseline();
    let small = truth.span_us.iter().position(|&us| (2_000.0..30_000.0).contains(&us)).unwrap();
    let large = truth.span_us.iter().position(|&us| us > 300_000.0).unwrap();
    write_bundle(&a, &truth, RUNS, 7);
    write_bundle(&b, &Truth::baseline().shifted(&[(small, 1.3), (large, 1.3)], 1.0), RUNS, 8);
    let json = |a: &Path, b: &Path| {
        let out = run_ok(evalbench().arg("compare").arg(a).arg(b).arg("--json"));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (small, large) = (format!("eval step_{small:02}"), format!("eval step_{large:02}"));
    let row = |v: &serde_json::Value, what: &str| {
        v["passes"][0]["spans"].as_array().unwrap().iter().find(|r| r["what"] == what).unwrap()["verdict"].clone()
    };
    let two = json(&a, &b);
    assert_eq!(called(&two, "cold-clean"), vec![large.clone()], "two sessions: the large one only");
    let v = row(&two, &small);
    assert_eq!((v["kind"].as_str(), v["reason"].as_str()), (Some("inside noise"), Some("between_sessions")), "{v}");
    assert!(v["text"].as_str().unwrap().contains("under a hundredth of the pass's evaluated seconds"), "{v}");
    // Measured in one session, both are called.
    set_session(&a, RUNS, "s1");
    set_session(&b, RUNS, "s1");
    let mut one = called(&json(&a, &b), "cold-clean");
    one.sort();
    let mut want = vec![small, large];
    want.sort();
    assert_eq!(one, want, "one session");
}

#[test]
fn a_busy_side_gets_no_time_verdict_but_its_counters_are_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    const RUNS: usize = 16;
    write_bundle(&a, &Truth::baseline(), RUNS, 3);
    // B is 30% slower throughout, and nix did more work.
    write_bundle(&b, &Truth::baseline().shifted(&[(5, 1.3)], 1.3), RUNS, 4);
    with_counters(&a, 1000, 500);
    with_counters(&b, 1200, 500);
    let quiet = |_: usize, v: &mut serde_json::Value| {
        v["machine"] = serde_json::json!({"window_s": 6.0,
        "lab_cores": 1.0, "other_cores": 0.02, "steal_cores": 0.0, "dirty_kib": 0, "writeback_kib": 0})
    };
    for pass in PASSES {
        edit_runs(&a, pass, RUNS, quiet);
        edit_runs(&b, pass, RUNS, quiet);
    }
    let v = compare_json(&a, &b, &[]);
    assert_eq!(v["passes"][0]["wall"]["kind"], "slower", "a quiet machine: the change is called");
    // Runs 9-16 of B's cold-clean ran beside two busy loops.
    edit_runs(&b, "cold-clean", RUNS, |i, v| {
        if i >= 8 {
            v["machine"]["other_cores"] = serde_json::json!(0.95);
        }
    });
    let out = evalbench()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--between-sessions", "0", "--fail-on-regression", "5"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(flat(&text).contains("B: other processes used 0.95 cores (median) during runs 9-16 (8 of 16)"), "{text}");
    let v = compare_json(&a, &b, &[]);
    let cold = &v["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-clean").unwrap();
    assert_eq!(cold["wall"]["kind"], "withheld", "{}", cold["wall"]);
    assert!(cold["spans"].as_array().unwrap().iter().all(|r| r["verdict"]["kind"] == "withheld"));
    let calls = cold["counters"].as_array().unwrap().iter().find(|c| c["name"] == "nrFunctionCalls").unwrap();
    assert_eq!(calls["kind"], "more", "exact counters are still judged: {calls}");
    // The gate fires on the counter, never on a withheld time.
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrFunctionCalls") && !stderr.contains("cold-clean evaluated:"), "{stderr}");
    // warm-clean ran on a quiet machine: judged as before.
    let warm = &v["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "warm-clean").unwrap();
    assert_eq!(warm["wall"]["kind"], "slower");
}

#[test]
fn a_bundle_compared_with_itself_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    write_bundle(&a, &Truth::baseline(), 8, 5);
    set_session(&a, 8, "s1");
    for pass in PASSES {
        edit_runs(&a, pass, 8, |i, v| {
            v["requested_us"] = serde_json::json!(1_800_000_000_000_000i64 + i as i64);
            v["evaluation_id"] = serde_json::json!(format!("e{i}"));
        });
    }
    let text = String::from_utf8_lossy(&run_ok(evalbench().arg("compare").arg(&a).arg(&a)).stdout).into_owned();
    assert!(flat(&text).contains("A and B are one bundle (the same runs)"), "{text}");
    assert!(
        text.lines().nth(2).is_some_and(|l| l.starts_with("A and B are one bundle")),
        "said first, above the answer:\n{text}"
    );
    assert_eq!(text.matches("one bundle").count(), 1, "said once:\n{text}");
    assert!(!text.contains("interleaved"), "{text}");
    // A copy of it is still the same runs.
    let copy = tmp.path().join("copy");
    run_ok(std::process::Command::new("cp").arg("-r").arg(&a).arg(&copy));
    assert!(
        String::from_utf8_lossy(&run_ok(evalbench().arg("compare").arg(&a).arg(&copy)).stdout).contains("one bundle")
    );
}
