//! Gradient's diagnostic report wherever a bundle is taken: summarize's
//! answer in its first lines, inspect's page, compare's gate on nix's exact
//! counts, history add. On the hand-written schema-19 report (every table,
//! anonymised, a busy worker); the lab's own reports are read in lab.rs.

mod common;

use common::*;

#[test]
fn summarize_answers_a_report_in_its_first_twenty_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let r = gradient_report(tmp.path(), "gradient-report-01a05a38-2026-11-25.db", "");
    let o = run_ok(evalbench().arg("summarize").arg(&r).arg("-q"));
    let text = String::from_utf8(o.stdout).unwrap();
    let head: String = text.lines().take(20).collect::<Vec<_>>().join("\n");
    for want in [
        "building took longest, 150.000 s (62.5% of the evaluation)",
        "evaluating the flake 42.000 s (17.5%)",
        "queued 2.500 s (1.0%)",
        "fn_calls 12,048,817",
        "eval_flake 41.800 s",
        "eval job 0.200 s to ready, 2.000 s to dispatch",
        "eval_flake 41.800 s [eval_cache_pull 1.500 s]",
        "unknown_23 0.500 s",
        "CPU 97% mean, 300 of 16000 MiB free at least, 6 jobs at most; 15 samples: busy, short of memory",
        "5 derivations, 4 dependency edges",
        "commit 9f2c4b7e1a0d3c5b8e6f4a2d1c0b9e8f7a6d5c4b",
        "upstream_metric 2 of 31 rows (last 7 days), build_log 1 of 3 rows (failed attempts only)",
        "1 warning, 1 error",
    ] {
        assert!(head.contains(want), "{want:?} not in the first 20 lines:\n{head}");
    }
    // The default output: a directory named after the report, summary.json a script reads.
    let dir = tmp.path().join("gradient-report-01a05a38-2026-11-25");
    let j = read_json(&dir.join("summary.json"));
    assert_eq!(j["kind"], "gradient-diagnostic-report");
    assert_eq!(j["stages"][4]["name"], "building");
    assert_eq!(j["counters"]["nrFunctionCalls"], 12_048_817.0);
    assert_eq!(std::fs::read_to_string(dir.join("summary.txt")).unwrap(), text);
}

#[test]
fn inspect_draws_the_timeline_and_escapes_what_the_report_says() {
    let tmp = tempfile::tempdir().unwrap();
    let r = gradient_report(tmp.path(), "r.db", "");
    let out = tmp.path().join("page");
    run_ok(evalbench().arg("inspect").arg(&r).arg("-o").arg(&out));
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("substitute_fetch"), "no timeline");
    assert!(!page.contains("<script>"), "a message's markup reached the page");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn compare_gates_on_exact_counts_and_refuses_an_unknown_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let a = gradient_report(tmp.path(), "a.db", "");
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&a, &copy).unwrap();
    let more = gradient_report(tmp.path(), "more.db", "UPDATE evaluation_metric SET fn_calls = fn_calls * 3");
    let gate = |b: &std::path::Path| {
        evalbench().arg("compare").arg(&a).arg(b).args(["--fail-on-regression", "5"]).output().unwrap()
    };
    let o = gate(&more);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("fn_calls (nrFunctionCalls) grew +200.000%"), "{err}");
    let o = gate(&copy);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("nix's 5 exact counts are the same"));
    let newer = gradient_report(tmp.path(), "newer.db", "UPDATE report_meta SET schema_version = 23");
    let o = gate(&newer);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("newer.db: schema version 23") && err.contains("reads version 19"), "{err}");
    // whatif walks spans, which a report has not: said.
    let o = evalbench().arg("whatif").arg(&a).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds no spans"), "{}", String::from_utf8_lossy(&o.stderr));
    // A report against a directory that is no bundle: the bundle's error.
    let o = evalbench().arg("compare").arg(&a).arg(tmp.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn history_keeps_a_report_under_its_task_commit_and_creation() {
    let tmp = tempfile::tempdir().unwrap();
    let r = gradient_report(tmp.path(), "r.db", "");
    let db = tmp.path().join("h.sqlite");
    run_ok(evalbench().args(["history", "add"]).arg(&r).arg("--db").arg(&db));
    let o = evalbench().args(["history", "add"]).arg(&r).arg("--db").arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "the same evaluation twice");
    assert!(String::from_utf8_lossy(&o.stderr).contains("already in the history"));
    let j: serde_json::Value =
        serde_json::from_slice(&run_ok(evalbench().args(["history", "show", "--json", "--db"]).arg(&db)).stdout)
            .unwrap();
    let series = j.to_string();
    assert!(series.contains("gradient:7d3e1f20-aa10-4c55-9e61-0b2f6c1d4e88/packages.x86_64-linux.*"), "{series}");
    assert!(series.contains("production"), "{series}");
    assert_eq!(j["commits"][0]["commit"], "9f2c4b7e1a0d3c5b8e6f4a2d1c0b9e8f7a6d5c4b");
    // Dated by created_at (2026-11-24 09:00:00 UTC), read as UTC.
    assert_eq!(j["commits"][0]["commit_time"], 1_795_510_800);
}

#[test]
fn a_report_is_compared_with_a_run_of_a_lab_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let r = gradient_report(tmp.path(), "r.db", "");
    let lab_a = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab-a");
    let o = evalbench().arg("compare").arg(&r).arg(&lab_a).args(["--json"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("its run cold-clean beside the report"), "{err}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // lab-a's cold-clean counts as its run.json has them: every one of the five compared, exactly.
    let run = read_json(&lab_a.join("cold-clean/run.json"));
    let calls = j["counters"].as_array().unwrap().iter().find(|c| c["name"] == "nrFunctionCalls").unwrap();
    assert_eq!(calls["b"], run["evaluation_metric"]["fn_calls"], "{calls}");
    assert_eq!(calls["a"], 12_048_817.0);
    assert_eq!(j["counters"].as_array().unwrap().len(), 5);
    assert_eq!(j["counts"], serde_json::json!([]), "a bundle's run counts no derivations: left out, not 0");
}
