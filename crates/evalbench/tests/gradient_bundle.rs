//! Conformance with the bundles Gradient's own benchmark writes, from its
//! documents (docs/GRADIENT-FORMAT.md), not from our lab: hand-written
//! fixtures in `tests/data/` in Gradient's shapes. Each asserts what
//! Gradient's `test_summarize.py` expects of its `summarize.py` (the offset
//! of a skewed pair, a pass without pairs unaligned, one pid on two hosts
//! kept apart, a truncated last line skipped) and what our outputs must show
//! of every file, without changing one of them.
//!
//! The whole bundle (`tests/data/gradient-bundle`): four passes, each with
//! `trace/server-11.jsonl`, `worker-22.jsonl` (its last line cut mid-object)
//! and `eval-33.jsonl`, no span ids; the worker's clock 250 ms behind the
//! server's (its job arrives 1 ms after assign_job ends, its reports 1 ms
//! before the job_event that receives them less its queue wait: offset
//! +250,000 µs); run.json `{eval_id, cold, instrumented, evaluated_s}`;
//! evaluation_metric.json; pg/ in Gradient's shapes; flame.svg without
//! folded stacks and strace files in the instrumented passes; Gradient's own
//! summary.txt, summary.json and cold-clean/trace.json.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A copy of a fixture in a directory of its own (commands write beside passes).
fn copy(name: &str, into: &Path) -> PathBuf {
    let to = into.join(name);
    let status = std::process::Command::new("cp").arg("-r").arg(data(name)).arg(&to).status().unwrap();
    assert!(status.success());
    to
}

/// Every file below `dir` with its bytes, by path.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn summary_json(bundle: &Path) -> serde_json::Value {
    let out = run_ok(
        evalbench().args(["summarize", "--json", "--quiet", "--no-trace", "-o"]).arg(bundle.join("ours")).arg(bundle),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn pass<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["passes"].as_array().unwrap().iter().find(|p| p["pass"] == name).unwrap_or_else(|| panic!("no pass {name}"))
}

#[test]
fn a_skewed_pair_gives_its_exact_offset_keyed_on_job_id() {
    let tmp = tempfile::tempdir().unwrap();
    let b = copy("gradient-bundle", tmp.path());
    let s = summary_json(&b);
    for name in ["cold-clean", "warm-clean"] {
        let p = pass(&s, name);
        // Gradient's summarize.py: (min up - min down) // 2 = (251,000 - -249,000) / 2.
        assert_eq!((p["aligned"].as_bool(), p["worker_offset_us"].as_i64()), (Some(true), Some(250_000)), "{name}");
        assert_eq!((p["upstream_pairs"].as_u64(), p["downstream_pairs"].as_u64()), (Some(2), Some(1)), "{name}");
    }
}

#[test]
fn a_truncated_last_line_is_skipped_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let b = copy("gradient-bundle", tmp.path());
    let s = summary_json(&b);
    let p = pass(&s, "cold-clean");
    // The worker wrote 8 lines, the last cut: 7 spans, and the 8th named as malformed.
    let worker: u64 = p["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["process"] == "worker")
        .map(|x| x["count"].as_u64().unwrap())
        .sum();
    assert_eq!(worker, 7, "{}", p["spans"]);
    assert_eq!((p["malformed_lines"].as_u64(), p["processes"].as_u64()), (Some(1), Some(3)));
    let text = String::from_utf8(
        run_ok(evalbench().args(["summarize", "--quiet", "--no-trace", "-o"]).arg(tmp.path().join("o")).arg(&b)).stdout,
    )
    .unwrap();
    assert!(text.contains("cold-clean/trace/worker-22.jsonl:8: not a JSON object"), "{text}");
}

#[test]
fn a_pass_without_pairs_stays_unaligned() {
    let tmp = tempfile::tempdir().unwrap();
    let b = copy("gradient-cases", tmp.path()).join("lonely");
    let s = summary_json(&b);
    let p = pass(&s, "cold-clean");
    assert_eq!((p["aligned"].as_bool(), p["worker_offset_us"].as_i64()), (Some(false), Some(0)), "{p}");
}

#[test]
fn one_pid_on_two_hosts_stays_two_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let b = copy("gradient-cases", tmp.path()).join("samepid");
    let s = summary_json(&b);
    let p = pass(&s, "cold-clean");
    assert_eq!(p["processes"].as_u64(), Some(2), "{p}");
    // And in the trace Perfetto reads: two processes, the flush and the wave in different ones.
    run_ok(evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("t")).arg(&b));
    let trace = read_json(&tmp.path().join("t/cold-clean/trace.json"));
    let pid_of = |name: &str| {
        trace["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == name && e["ph"] == "X").unwrap()["pid"]
            .clone()
    };
    assert_ne!(pid_of("flush"), pid_of("wave"));
}

#[test]
fn the_whole_bundle_is_read_shown_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let b = copy("gradient-bundle", tmp.path());
    let before = files(&b);

    // summarize into the bundle: Gradient's own summary and trace stay; ours go to evalbench/.
    let out = run_ok(evalbench().arg("summarize").arg(&b));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("another tool's") && stderr.contains("ours go to"), "{stderr}");
    let after: BTreeMap<_, _> = files(&b).into_iter().filter(|(p, _)| !p.starts_with("evalbench")).collect();
    assert_eq!(after, before, "summarize changed a file of the bundle");
    let text = std::fs::read_to_string(b.join("evalbench/summary.txt")).unwrap();
    for want in [
        "offset +250000 us",
        "fn_calls=45130",
        "total_thunks=120345",
        // The path without ids or a request time, said as made.
        "path made:       inferred",
        "path made:       start: run.json has no evaluate request",
        "path made:       end: the start plus evaluated_s, which run.json gives rounded to 0.1 s",
        "eval resolve",
    ] {
        assert!(text.contains(want), "summary.txt lacks {want:?}:\n{text}");
    }
    assert!(!text.contains("critical path    none"), "{text}");
    // Spans nest by time: the eval's resolve spans are inside open, so open's own time is what is left.
    let s = read_json(&b.join("evalbench/summary.json"));
    let steps = pass(&s, "cold-clean")["critical_path"]["steps"].as_array().unwrap().clone();
    let step = |p: &str, n: &str| {
        steps.iter().find(|x| x["process"] == p && x["name"] == n).map(|x| x["on_path_us"].as_i64().unwrap())
    };
    assert_eq!(step("eval", "resolve"), Some(700_000), "{steps:?}");
    assert!(step("eval", "open").is_some_and(|o| o < 990_000 - 700_000), "open's own time, not its whole: {steps:?}");
    // A second summarize into the bundle replaces only its own.
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&b));
    // -o at the bundle itself is refused, naming Gradient's file.
    let refused = evalbench().args(["summarize", "--quiet", "-o"]).arg(&b).arg(&b).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("summary.txt: not written by evalbench"), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refusing to replace or write into it"), "{refused:?}");

    // inspect: every file shown.
    inspect_shows_every_file(&b, &tmp.path().join("report"));
    let after: BTreeMap<_, _> = files(&b).into_iter().filter(|(p, _)| !p.starts_with("evalbench")).collect();
    assert_eq!(after, before, "inspect changed a file of the bundle");
}

/// inspect's page shows every file of the bundle: its phases by Gradient's codes, both hosts'
/// flame graphs, auto_explain behind journald's prefix.
fn inspect_shows_every_file(b: &Path, report: &Path) {
    run_ok(evalbench().arg("inspect").arg(b).arg("-o").arg(report));
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    let svgs: String = std::fs::read_dir(report)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    for want in
        ["24.512 ms", "not recorded", "How this path was made: inferred", "worker/strace/worker.22", "fn_calls=45130"]
    {
        assert!(page.contains(want), "the page lacks {want:?}");
    }
    // Phases by Gradient's codes, named as its inspector names them; wait events from the flat rows.
    for want in [
        "fetch",
        "eval_flake",
        "eval_derivations",
        "known_derivations_wait",
        "IO:WalSync",
        "Client:ClientRead",
        "Lock:transactionid",
    ] {
        assert!(svgs.contains(want), "no chart shows {want:?}");
    }
    assert_eq!(
        page.matches("data:image/svg+xml;base64,").count(),
        4,
        "both hosts' flame.svg in both instrumented passes"
    );
    assert!(!page.contains("999 Hz"));
    assert_eq!(
        page.matches("2 plans, 0 malformed").count(),
        2,
        "auto_explain behind journald's prefix is read, in both instrumented passes"
    );
}

#[test]
fn the_counters_of_evaluation_metric_are_judged_and_gated() {
    let tmp = tempfile::tempdir().unwrap();
    let a = copy("gradient-bundle", tmp.path());
    let b = tmp.path().join("b");
    std::fs::create_dir(&b).unwrap();
    let b = {
        let s =
            std::process::Command::new("cp").arg("-r").arg(data("gradient-bundle")).arg(b.join("x")).status().unwrap();
        assert!(s.success());
        b.join("x")
    };
    // B: three times the thunks, the function calls and every statement's time.
    for p in ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented"] {
        let m = b.join(p).join("evaluation_metric.json");
        let mut v = read_json(&m);
        for k in ["fn_calls", "total_thunks"] {
            v[0][k] = (v[0][k].as_u64().unwrap() * 3).into();
        }
        std::fs::write(&m, v.to_string()).unwrap();
        let st = b.join(p).join("pg/pg_stat_statements.json");
        let mut v = read_json(&st);
        for r in v.as_array_mut().unwrap() {
            r["total_ms"] = (r["total_ms"].as_f64().unwrap() * 3.0).into();
            r["mean_ms"] = (r["mean_ms"].as_f64().unwrap() * 3.0).into();
        }
        std::fs::write(&st, v.to_string()).unwrap();
    }
    let before = files(&a);
    let same = evalbench().args(["compare", "--fail-on-regression", "5"]).arg(&a).arg(&a).output().unwrap();
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stderr));
    let out = evalbench().args(["compare", "--fail-on-regression", "5"]).arg(&a).arg(&b).output().unwrap();
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
    assert!(err.contains("cold-clean nrFunctionCalls") && err.contains("cold-clean nrThunks"), "{err}");
    assert!(text.contains("nrFunctionCalls") && text.contains("45,130") && text.contains("135,390"), "{text}");
    // Statement totals are read from total_ms (never 0), and tripled.
    assert!(text.contains("24.512") && text.contains("73.536") && text.contains("+200.0%"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&evalbench().args(["compare", "--json"]).arg(&a).arg(&b).output().unwrap().stdout)
            .unwrap();
    assert!(json.to_string().contains("evaluation_metric.total_eval_ms"), "the ms columns are compared as times");

    // history keeps the counters under the commit.
    let db = tmp.path().join("h.sqlite");
    run_ok(
        evalbench()
            .args(["history", "add"])
            .arg(&a)
            .args(["--commit", "aaaa", "--commit-time", "2026-01-01T00:00:00Z", "--db"])
            .arg(&db),
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let kept = |name: &str| -> Vec<f64> {
        let mut q = conn.prepare("SELECT value FROM counter_totals WHERE name = ?1").unwrap();
        q.query_map([name], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(kept("nrFunctionCalls"), [45130.0; 4]);
    assert_eq!(kept("nrThunks"), [120345.0; 4]);
    assert_eq!(kept("evaluation_metric.total_eval_ms"), [990.0; 4]);
    assert_eq!(files(&a), before, "compare or history changed a file of the bundle");
}
