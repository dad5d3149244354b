//! `evalbench summarize` on bundles written by real instrumented processes.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use common::*;

const SEED_SPANS: &[(&str, &[&str])] = &[
    (
        "server",
        &[
            "assign_queued_evals",
            "offer_jobs",
            "on_request_job_chunk",
            "record_scores",
            "on_request_job",
            "request_job",
            "claim_dispatch",
            "send_credentials",
            "assign_job",
            "job_event",
            "handle_eval_result",
            "assess_cached",
            "record",
            "flush",
            "record_one",
            "commit_one",
            "transact_once",
            "apply_batch",
            "after_commit",
            "known_derivations",
            "eval_stream_completed",
        ],
    ),
    (
        "worker",
        &[
            "on_job_offer",
            "score_candidates",
            "send_scores",
            "request_job",
            "job",
            "fetch_repository",
            "clone_and_checkout",
            "run_input_update",
            "fetch_inputs",
            "missing_paths",
            "evaluate_flake",
            "evaluate_derivations",
            "wave",
            "parse_drv_wave",
            "query_known_derivations",
            "report_eval_result",
        ],
    ),
    ("eval", &["open", "lock_flake", "discover", "plan_shards", "resolve"]),
];

#[test]
fn summary_of_a_skewed_bundle_aligns_within_the_bound_and_reports_clean_passes_only() {
    let tmp = tempfile::tempdir().unwrap();
    let skew_ms = 1500;
    let bundle = sample(
        &tmp.path().join("b"),
        &["--worker-clock-skew-ms", &skew_ms.to_string(), "--ci-jobs", "6", "--drvs", "80"],
    );
    let out = run_ok(evalbench().args(["summarize", "--quiet"]).arg(&bundle));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text, std::fs::read_to_string(bundle.join("summary.txt")).unwrap(), "stdout is summary.txt");

    let summary = read_json(&bundle.join("summary.json"));
    let passes = summary["passes"].as_array().unwrap();
    let names: Vec<&str> = passes.iter().map(|p| p["pass"].as_str().unwrap()).collect();
    assert_eq!(names, ["cold-clean", "warm-clean"]);
    let skipped: Vec<&str> =
        summary["not_summarized"].as_array().unwrap().iter().map(|p| p["pass"].as_str().unwrap()).collect();
    assert_eq!(skipped, ["cold-instrumented", "warm-instrumented"]);
    assert!(text.contains("== cold-clean") && text.contains("== warm-clean"));
    assert!(!text.contains("== cold-instrumented") && !text.contains("== warm-instrumented"));

    for p in passes {
        let truth = -skew_ms * 1000;
        let offset = p["worker_offset_us"].as_i64().unwrap();
        let bound = p["offset_bound_us"].as_i64().unwrap();
        assert_eq!(p["aligned"], true);
        assert_eq!(p["upstream_pairs"], 12, "80 derivations report in two waves of at most 64, per job");
        assert_eq!(p["downstream_pairs"], 6);
        assert!((offset - truth).abs() <= bound, "{}: offset {offset} truth {truth} bound {bound}", p["pass"]);
        assert!(bound < 200_000, "a loopback bound is far below the skew: {bound}");
        assert!(p["evaluation_metric"]["derivations"].as_u64().unwrap() == 480);
        assert_eq!(p["wall_source"], "run.json");
        assert!(p["wall_s"].as_f64().unwrap() > 0.0);
        // Spans sorted by total, and every seed span present with consistent statistics.
        let spans = p["spans"].as_array().unwrap();
        let totals: Vec<i64> = spans.iter().map(|s| s["total_us"].as_i64().unwrap()).collect();
        assert!(totals.windows(2).all(|w| w[0] >= w[1]));
        let have: BTreeSet<(String, String)> =
            spans.iter().map(|s| (s["process"].as_str().unwrap().into(), s["name"].as_str().unwrap().into())).collect();
        for (process, names) in SEED_SPANS {
            for n in *names {
                assert!(have.contains(&(process.to_string(), n.to_string())), "{}: missing {process}/{n}", p["pass"]);
            }
        }
        for s in spans {
            let (c, t) = (s["count"].as_i64().unwrap(), s["total_us"].as_i64().unwrap());
            let (p50, p95, max, mean) = (
                s["p50_us"].as_i64().unwrap(),
                s["p95_us"].as_i64().unwrap(),
                s["max_us"].as_i64().unwrap(),
                s["mean_us"].as_i64().unwrap(),
            );
            assert!(p50 <= p95 && p95 <= max && mean == t / c, "{s}");
        }
        // Counts agree with the raw files.
        let raw = span_lines(&bundle.join(p["pass"].as_str().unwrap()));
        assert_eq!(p["span_count"].as_u64().unwrap() as usize, raw.len());
        let resolve = spans.iter().find(|s| s["name"] == "resolve").unwrap();
        assert_eq!(resolve["count"], 480);
    }
}

/// Checks a trace.json against the raw spans it was made from.
fn check_trace(pass_dir: &std::path::Path, offset_of: &dyn Fn(&serde_json::Value) -> i64) {
    let trace = read_json(&pass_dir.join("trace.json"));
    let events = trace["traceEvents"].as_array().unwrap();
    let mut process_names: HashMap<u64, String> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M" && e["name"] == "process_name") {
        process_names.insert(e["pid"].as_u64().unwrap(), e["args"]["name"].as_str().unwrap().to_string());
    }
    let lanes: BTreeSet<&str> = process_names
        .values()
        .filter(|n| !n.starts_with("critical path"))
        .map(|n| n.split(' ').next().unwrap())
        .collect();
    assert_eq!(lanes, BTreeSet::from(["eval", "server", "worker"]));
    // The critical path is a process of its own, whose slices tile the evaluated time.
    assert_eq!(process_names.values().filter(|n| n.starts_with("critical path")).count(), 1, "{process_names:?}");
    let path_us: i64 = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "critical_path")
        .map(|e| e["dur"].as_i64().unwrap())
        .sum();
    let evaluated = (read_json(&pass_dir.join("run.json"))["evaluated_s"].as_f64().unwrap() * 1e6).round() as i64;
    let bound = trace["otherData"]["alignment"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["bound_us"].as_i64())
        .max()
        .unwrap_or(0);
    assert!((path_us - evaluated).abs() <= bound.max(1), "path {path_us} µs, evaluated {evaluated} µs");
    assert!(
        events.iter().any(|e| e["ph"] == "s" && e["cat"] == "critical_path"),
        "a flow where the path crosses processes"
    );
    let spans: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["ph"] == "X" && e["cat"] != "critical_path").collect();
    let raw = span_lines(pass_dir);
    assert_eq!(spans.len(), raw.len());
    // Every raw span appears once, moved by its host's offset onto the server clock.
    let mut expected: HashMap<(String, u64), i64> = HashMap::new();
    for r in &raw {
        expected.insert(
            (
                r["process"].as_str().unwrap().to_string(),
                r["id"].as_u64().unwrap() * 1_000_000 + r["pid"].as_u64().unwrap(),
            ),
            r["ts_us"].as_i64().unwrap() + offset_of(r),
        );
    }
    for e in &spans {
        let process = process_names[&e["pid"].as_u64().unwrap()].split(' ').next().unwrap().to_string();
        let real_pid: u64 = process_names[&e["pid"].as_u64().unwrap()]
            .rsplit("pid ")
            .next()
            .unwrap()
            .trim_end_matches(')')
            .parse()
            .unwrap();
        let key = (process, e["args"]["span.id"].as_u64().unwrap() * 1_000_000 + real_pid);
        assert_eq!(Some(&e["ts"].as_i64().unwrap()), expected.get(&key), "{e}");
    }
    every_track_nests(&spans);
    // Children of a job on the worker stay on the job's track (exact nesting through id/parent).
    let job = spans.iter().find(|e| e["name"] == "job").unwrap();
    let child = spans
        .iter()
        .find(|e| {
            e["name"] == "fetch_repository"
                && e["args"]["span.parent"] == job["args"]["span.id"]
                && e["pid"] == job["pid"]
        })
        .unwrap();
    assert_eq!(child["tid"], job["tid"]);
}

/// Every track nests: on each (pid, tid), intervals are nested or disjoint.
fn every_track_nests(spans: &[&serde_json::Value]) {
    // Every track nests: on each (pid, tid), intervals are nested or disjoint.
    let mut tracks: HashMap<(u64, u64), Vec<(i64, i64)>> = HashMap::new();
    for e in spans {
        let (ts, dur) = (e["ts"].as_i64().unwrap(), e["dur"].as_i64().unwrap());
        tracks.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push((ts, ts + dur));
    }
    for v in tracks.values_mut() {
        v.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut stack: Vec<i64> = Vec::new();
        for &(s, e) in v.iter() {
            while stack.last().is_some_and(|&end| end <= s) {
                stack.pop();
            }
            if let Some(&end) = stack.last() {
                assert!(e <= end, "overlap without nesting on a track");
            }
            stack.push(e);
        }
    }
}

#[test]
fn trace_json_for_every_pass_on_the_server_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(&tmp.path().join("b"), &["--worker-clock-skew-ms", "-700", "--ci-jobs", "3", "--drvs", "40"]);
    run_ok(evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("o")).arg(&bundle));
    let summary = read_json(&tmp.path().join("o/summary.json"));
    for pass in ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented"] {
        let trace = read_json(&tmp.path().join("o").join(pass).join("trace.json"));
        let offset = trace["otherData"]["alignment"]["hosts"][0]["offset_us"].as_i64().unwrap();
        if let Some(p) = summary["passes"].as_array().unwrap().iter().find(|p| p["pass"] == pass) {
            assert_eq!(p["worker_offset_us"].as_i64().unwrap(), offset);
        }
        // Copy spans next to the trace so the checker reads raw and exported side by side.
        let dir = tmp.path().join("o").join(pass);
        std::fs::create_dir_all(dir.join("trace")).unwrap();
        for e in std::fs::read_dir(bundle.join(pass).join("trace")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, dir.join("trace").join(p.file_name().unwrap())).unwrap();
        }
        std::fs::copy(bundle.join(pass).join("run.json"), dir.join("run.json")).unwrap();
        check_trace(&dir, &|r| if r["process"] == "server" { 0 } else { offset });
    }
}

#[test]
fn several_worker_hosts_each_get_their_own_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(
        &tmp.path().join("b"),
        &[
            "--workers",
            "2",
            "--worker-clock-skew-ms",
            "400",
            "--skew-per-worker",
            "--ci-jobs",
            "8",
            "--drvs",
            "20",
            "--passes",
            "cold-clean",
        ],
    );
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&bundle));
    let summary = read_json(&bundle.join("summary.json"));
    let hosts = summary["passes"][0]["hosts"].as_array().unwrap();
    let mut seen = 0;
    for h in hosts {
        let name = h["host"].as_str().unwrap();
        let k: i64 = name.trim_start_matches("worker-").parse().unwrap();
        let truth = -400_000 * (k + 1);
        if h["aligned"] == false {
            // A worker that got no job has no pairs: unaligned, offset 0, and said so.
            assert_eq!(h["offset_us"], 0);
            assert!(h["note"].as_str().unwrap().contains("unaligned"));
            continue;
        }
        seen += 1;
        let (o, b) = (h["offset_us"].as_i64().unwrap(), h["bound_us"].as_i64().unwrap());
        assert!((o - truth).abs() <= b, "{name}: offset {o} truth {truth} bound {b}");
        assert_eq!(h["processes"], serde_json::json!(["eval", "worker"]));
    }
    assert!(seen >= 1);
}

#[test]
fn archives_summarize_like_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle =
        sample(&tmp.path().join("b"), &["--passes", "cold-clean,warm-clean", "--ci-jobs", "2", "--drvs", "10"]);
    let archive = tmp.path().join("evalbench.tar.gz");
    evalbench_bundle::pack_dir(&bundle, &archive, &[]).unwrap();
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&bundle));
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(&archive));
    let a = read_json(&bundle.join("summary.json"));
    let b = read_json(&tmp.path().join("evalbench/summary.json"));
    assert_eq!(a["passes"], b["passes"]);
    assert!(tmp.path().join("evalbench/cold-clean/trace.json").is_file());
}

/// The streamed reading (two reads, nothing held but the fold) gives what
/// loading the pass whole gives: alignment, window, counts, warnings,
/// totals and every statistic, whatever the chunks the files are cut in.
#[test]
fn streamed_totals_and_statistics_equal_the_loaded_ones() {
    use evalbench_analyze::{load, runs, scan, span_stats, stats::stats_of};
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(
        &tmp.path().join("b"),
        &[
            "--workers",
            "2",
            "--worker-clock-skew-ms",
            "700",
            "--skew-per-worker",
            "--ci-jobs",
            "4",
            "--drvs",
            "300",
            "--passes",
            "cold-clean,warm-clean",
        ],
    );
    let mid = with_window_and_a_cut_line(&bundle);

    let b = evalbench_bundle::Bundle::open(&bundle, evalbench_bundle::Limits::default()).unwrap();
    let mut outside = 0;
    for pass in &b.passes {
        let (data, align) = load(pass, evalbench_analyze::Fields::All);
        let whole = runs::totals(&data, pass);
        // The streamed scan reads durations, not nesting: its own times are
        // its totals. Everything it does compute must be the loaded figure.
        let stats: Vec<_> = span_stats(&data.streams)
            .into_iter()
            .map(|s| evalbench_analyze::SpanStat { own_us: s.total_us, ..s })
            .collect();
        outside += data.outside_window;
        assert!(align.hosts.iter().filter(|h| h.aligned).count() >= 1, "{}: a worker aligned", pass.name);
        for chunk in [u64::MAX, 65536, 4096, 1] {
            let (s, t) = runs::totals_scanned(pass, chunk);
            let what = format!("{} in chunks of {chunk} bytes", pass.name);
            assert_eq!(s.align, align, "{what}");
            assert_eq!(s.warnings, data.warnings, "{what}");
            assert_eq!((s.dropped, s.malformed_total), (data.dropped, data.malformed_total), "{what}");
            assert_eq!((s.spans, s.outside_window), (data.span_count() as u64, data.outside_window), "{what}");
            assert_eq!(s.extent, data.extent(&align), "{what}");
            assert_eq!(t.spans, whole.spans, "{what}");
            assert_eq!(t.statements, whole.statements, "{what}");
            let (_, durations) = scan::durations(pass, chunk);
            assert_eq!(stats_of(durations), stats, "{what}");
        }
    }
    assert!(outside > 0, "the window left spans out, both readings alike");
    assert!(
        b.passes.iter().any(|p| load(p, evalbench_analyze::Fields::All)
            .0
            .warnings
            .iter()
            .any(|w| w.line == Some(mid as u64 + 1))),
        "the cut line is named"
    );
}

/// A capture window over the middle of each pass (sample's passes record
/// none), so that the window's cut is read both ways too; a malformed line
/// in the middle of the server's file, to be named the same way. Its index.
fn with_window_and_a_cut_line(bundle: &Path) -> usize {
    for pass in ["cold-clean", "warm-clean"] {
        let raw = span_lines(&bundle.join(pass));
        let starts: Vec<i64> = raw.iter().map(|l| l["ts_us"].as_i64().unwrap()).collect();
        let (lo, hi) = (*starts.iter().min().unwrap(), *starts.iter().max().unwrap());
        let path = bundle.join(pass).join("run.json");
        let mut run = read_json(&path);
        run["target"] = "lab".into();
        run["capture_started_us"] = (lo + (hi - lo) / 4).into();
        run["capture_stopped_us"] = (hi - (hi - lo) / 4).into();
        std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();
    }
    let trace = bundle.join("cold-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    let text = std::fs::read_to_string(&server).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let mid = lines.len() / 2;
    lines[mid] = "{\"name\": cut";
    std::fs::write(&server, lines.join("\n") + "\n").unwrap();
    mid
}

/// On one CPU the span reader and the trace writer work in the calling
/// thread (what bench/self.sh counts); on every CPU, side by side: the same
/// summary and the same trace.json, byte for byte. This machine's CI has 2.
#[test]
fn one_cpu_and_every_cpu_write_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle =
        sample(&tmp.path().join("b"), &["--passes", "cold-clean,cold-instrumented", "--ci-jobs", "3", "--drvs", "300"]);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(cpus > 1, "this test needs more than one CPU to compare the two ways ({cpus} here)");
    run_ok(evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("every")).arg(&bundle));
    run_ok(
        std::process::Command::new("taskset")
            .args(["-c", "0", env!("CARGO_BIN_EXE_evalbench"), "summarize", "--quiet", "-o"])
            .arg(tmp.path().join("one"))
            .arg(&bundle),
    );
    for f in ["summary.txt", "summary.json", "cold-clean/trace.json", "cold-instrumented/trace.json"] {
        let (a, b) = (
            std::fs::read(tmp.path().join("every").join(f)).unwrap(),
            std::fs::read(tmp.path().join("one").join(f)).unwrap(),
        );
        let strip =
            |v: Vec<u8>| String::from_utf8(v).unwrap().replace(&tmp.path().join("every").display().to_string(), "OUT");
        assert!(
            strip(a) == strip(b).replace(&tmp.path().join("one").display().to_string(), "OUT"),
            "{f} differs between one CPU and {cpus}"
        );
    }
}
