//! `evalbench run` end to end: four passes on the lab with every capture,
//! then the bundle checked file by file.

mod common;

use std::path::Path;

use common::*;

/// Every packet's timestamp (Unix µs) in a classic little-endian pcap, read
/// here, apart from the tool's own reader.
fn pcap_times(p: &Path) -> Vec<i64> {
    let b = std::fs::read(p).unwrap();
    assert_eq!(b[..4], [0xd4, 0xc3, 0xb2, 0xa1], "{}: a little-endian µs pcap", p.display());
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as i64;
    let (mut at, mut out) = (24, Vec::new());
    while at < b.len() {
        out.push(u32_at(at) * 1_000_000 + u32_at(at + 4));
        at += 16 + u32_at(at + 8) as usize;
    }
    assert_eq!(at, b.len(), "{}: whole records", p.display());
    out
}

/// Checks a clean pass against its window: no packet outside it, and the
/// summary counts exactly the spans that start inside it (on the server's
/// clock, the worker's moved by the offset the summary reports).
fn check_window(out: &Path, summary: &serde_json::Value, pass: &str) {
    let run = read_json(&out.join(pass).join("run.json"));
    let (from, to) = (run["capture_started_us"].as_i64().unwrap(), run["capture_stopped_us"].as_i64().unwrap());
    assert!(to > from, "{pass}: a window");
    for pcap in ["pg.pcap", "proto.pcap"] {
        let times = pcap_times(&out.join(pass).join(pcap));
        assert!(!times.is_empty(), "{pass}/{pcap}");
        let outside: Vec<&i64> = times.iter().filter(|t| !(from..=to).contains(*t)).collect();
        assert!(outside.is_empty(), "{pass}/{pcap}: {} of {} packets outside [{from}, {to}]: {outside:?}", outside.len(), times.len());
    }
    let s = summary["passes"].as_array().unwrap().iter().find(|p| p["pass"] == pass).unwrap();
    let offset = s["worker_offset_us"].as_i64().unwrap();
    let spans = span_lines(&out.join(pass));
    let inside = spans
        .iter()
        .filter(|v| {
            let off = if v["process"] == "server" { 0 } else { offset };
            (from..=to).contains(&(v["ts_us"].as_i64().unwrap() + off))
        })
        .count();
    assert_eq!(s["span_count"].as_u64().unwrap() as usize, inside, "{pass}: counted spans are those inside the window");
    assert_eq!(s["outside_window_spans"].as_u64().unwrap() as usize, spans.len() - inside, "{pass}");
    assert!(s["traced_wall_s"].as_f64().unwrap() <= (to - from) as f64 / 1e6 + 0.5, "{pass}: traced wall within the window: {s}");
}

fn magic(p: &Path) -> Vec<u8> {
    let b = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(!b.is_empty(), "{} is empty", p.display());
    b[..b.len().min(8)].to_vec()
}

/// summarize and compare find the path with the pass's spans given up
/// (their text dropped, the graph's edges made without them, each segment
/// refined as the walk finds it, or not kept at all): the same path, stretch
/// for stretch, as with the spans held (whatif, inspect). A real pass, with
/// pg.pcap's statements carved out of the server's stretches where captured.
fn same_path_with_the_spans_given_up(out: &Path, pass: &str) {
    use evalbench_analyze::{load_aligned, path};
    let b = evalbench_bundle::Bundle::open(out, evalbench_bundle::Limits::default()).unwrap();
    let p = b.passes.iter().find(|p| p.name == pass).unwrap();
    let (data, align) = load_aligned(p);
    let (_, held) = path::critical_path(&data, &align).unwrap();
    let (rest, given) = path::critical_path_owned(load_aligned(p).0, &align);
    let (_, given) = given.unwrap();
    assert!(rest.streams.is_empty(), "{pass}: the spans were given up");
    assert_eq!(held.segments, given.segments, "{pass}");
    assert_eq!(held.steps, given.steps, "{pass}");
    assert_eq!((held.total_us, held.to_us, &held.note), (given.total_us, given.to_us, &given.note), "{pass}");
    assert_eq!(path::critical_steps_owned(load_aligned(p).0, &align).unwrap(), held.steps, "{pass}: steps with no segment kept");
    // The pieces a statement cut a server stretch into are in time order:
    // every stretch starts where the one before it ended.
    assert!(held.segments.len() > 10, "{pass}");
    for w in held.segments.windows(2) {
        assert_eq!(w[0].to_us, w[1].from_us, "{pass}: {:?} then {:?}", w[0], w[1]);
    }
    let carved = held.segments.iter().filter(|s| s.process() == Some(path::POSTGRES)).count();
    assert_eq!(carved > 0, pass.ends_with("-clean"), "{pass}: {carved} stretches of statements");
    // Loaded with the text of only the names fields_read accepts (compare,
    // whatif): the same alignment, totals, counters and path, and no
    // other span's text held.
    let (lean, lean_align) = evalbench_analyze::load_aligned_lean(p);
    let json = |v: &evalbench_analyze::Alignment| serde_json::to_string(v).unwrap();
    assert_eq!(json(&lean_align), json(&align), "{pass}");
    assert_eq!(evalbench_analyze::runs::totals(&lean, p).spans, evalbench_analyze::runs::totals(&data, p).spans, "{pass}");
    assert_eq!(evalbench_analyze::counters::recycled_evaluators(&lean), evalbench_analyze::counters::recycled_evaluators(&data), "{pass}");
    let kept = lean.streams.iter().flat_map(|st| st.spans.iter().map(move |s| (st, s))).filter(|(st, s)| !st.fields(s).is_empty());
    assert!(kept.clone().count() > 0 && kept.clone().all(|(st, s)| evalbench_analyze::fields_read(st.name(s))), "{pass}");
    assert_eq!(path::critical_steps_owned(lean, &lean_align).unwrap(), held.steps, "{pass}: the path of the lean load");
    // Loaded with every other span's fields left in its file (summarize):
    // the same trace.json, its fields read back from the span files.
    let (placed, placed_align) = evalbench_analyze::load_aligned_placed(p, &evalbench_analyze::fields_read);
    assert_eq!(json(&placed_align), json(&align), "{pass}");
    let in_file = placed.streams.iter().flat_map(|st| st.spans.iter().filter(move |s| st.fields_in_file(s).is_some())).count();
    assert!(in_file * 2 > placed.span_count(), "{pass}: {in_file} of {} spans' fields left in their file", placed.span_count());
    let tmp = tempfile::tempdir().unwrap();
    let (a, c) = (tmp.path().join("whole.json"), tmp.path().join("placed.json"));
    evalbench_report::write_trace(&a, pass, &data.streams, &align, Some(&held)).unwrap();
    evalbench_report::write_trace(&c, pass, &placed.streams, &placed_align, Some(&held)).unwrap();
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&c).unwrap(), "{pass}: trace.json differs with the fields read back");
}

/// Runs a clean pass: the default, the main job's.
const RUNS: usize = evalbench_analyze::power::DEFAULT_CLEAN_RUNS as usize;

#[test]
fn four_passes_on_the_lab_make_a_whole_bundle() {
    let tmp = reachable_tmp("evalbench-run-test.");
    let out = tmp.path().join("out");
    let lab = tmp.path().join("lab");
    let skew_ms = 800i64;
    let res = evalbench()
        .args(["run", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .args(["--worker-clock-skew-ms", &skew_ms.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "run failed: {stderr}");

    for pass in ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented"] {
        let d = out.join(pass);
        let run = read_json(&d.join("run.json"));
        assert_eq!(run["status"], "Completed", "{pass}");
        assert!(run["evaluated_s"].as_f64().unwrap() > 0.0);
        assert!(run["evaluation_id"].as_str().is_some_and(|s| s.len() == 36));
        assert!(run["statuses"].as_array().unwrap().len() >= 3);
        let phases = read_json(&d.join("pg/job_phases.json"));
        let names: Vec<&str> = phases.as_array().unwrap().iter().map(|p| p["phase"].as_str().unwrap()).collect();
        assert_eq!(names, ["fetching", "evaluating_flake", "evaluating_derivations"], "{pass}");
        let trace = read_json(&d.join("trace.json"));
        assert!(trace["traceEvents"].as_array().unwrap().len() > 100);
        // The evaluator has a track of its own, named for it (not after the `open` span).
        let tracks: Vec<&str> = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .filter_map(|e| e["args"]["name"].as_str())
            .collect();
        if pass.starts_with("cold-") {
            assert!(tracks.contains(&"evaluator 0"), "{pass}: {tracks:?}");
        }
        assert!(std::fs::read_dir(d.join("trace")).unwrap().count() >= 3, "{pass}: server, worker and eval span files");
        // The critical path tiles the evaluated time, across an 800 ms skew.
        let path =
            serde_json::from_slice::<serde_json::Value>(&run_ok(evalbench().args(["whatif", "--json", "--pass", pass]).arg(&out)).stdout).unwrap();
        let (total, bound) = (path["path"]["total_us"].as_i64().unwrap(), path["path"]["bound_us"].as_i64().unwrap_or(0));
        let evaluated = (run["evaluated_s"].as_f64().unwrap() * 1e6).round() as i64;
        assert!((total - evaluated).abs() <= bound.max(1), "{pass}: path {total} µs, evaluated {evaluated} µs, bound {bound} µs");
        let on_path = |p: &str, n: &str| path["path"]["steps"].as_array().unwrap().iter().any(|s| s["process"] == p && s["name"] == n);
        assert!(on_path("worker", "fetch_repository") || on_path("worker", "fetch_inputs"), "{pass}: the worker's fetch is on the path");
        same_path_with_the_spans_given_up(&out, pass);
        // Where pg.pcap was captured, the database's round trips are on the path by statement.
        let database = path["path"]["steps"].as_array().unwrap().iter().any(|s| s["process"] == "postgres" && s["on_path_us"].as_i64().unwrap() > 0);
        assert_eq!(database, pass.ends_with("-clean"), "{pass}: statements on the path where pg.pcap was captured");
        if pass.ends_with("-clean") {
            for pcap in ["proto.pcap", "pg.pcap"] {
                let m = magic(&d.join(pcap));
                assert!(m[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || m[..4] == [0xa1, 0xb2, 0xc3, 0xd4], "{pass}/{pcap} is not a pcap file");
                assert!(std::fs::metadata(d.join(pcap)).unwrap().len() > 1000, "{pass}/{pcap} captured almost nothing");
            }
            let stmts = read_json(&d.join("pg/pg_stat_statements.json"));
            let stmts = stmts.as_array().unwrap();
            assert!(!stmts.is_empty() && stmts.len() <= 100);
            assert!(stmts.iter().all(|s| s["query"].is_string() && s["total_plan_time"].is_number()));
            assert!(stmts.iter().any(|s| s["query"].as_str().unwrap().contains("dispatched_job_phase")));
            let waits = read_json(&d.join("pg/wait_samples.json"));
            assert!(waits["samples"].as_array().unwrap().len() >= 3, "{pass}: samples every 100 ms");
            for f in ["perf.data", "pg/auto_explain.log", "worker/strace"] {
                assert!(!d.join(f).exists(), "{pass} must not have {f}");
            }
        } else {
            assert_eq!(magic(&d.join("perf.data")), b"PERFILE2");
            assert_eq!(magic(&d.join("worker/perf.data")), b"PERFILE2");
            for svg in ["flame.svg", "worker/flame.svg"] {
                assert!(std::fs::read_to_string(d.join(svg)).unwrap().contains("<svg"), "{pass}/{svg}");
            }
            let strace: Vec<_> = std::fs::read_dir(d.join("worker/strace")).unwrap().map(|e| e.unwrap().path()).collect();
            assert!(strace.len() >= 3, "{pass}: one strace file per thread and child, got {}", strace.len());
            let any = std::fs::read_to_string(&strace[0]).unwrap();
            let first = any.lines().next().unwrap_or("");
            assert!(first.split_whitespace().next().is_some_and(|t| t.contains('.') && t.parse::<f64>().is_ok()), "timestamps: {first}");
            let explain = std::fs::read_to_string(d.join("pg/auto_explain.log")).unwrap();
            assert!(explain.contains("duration:") && explain.contains("Query Text:"), "{pass}: auto_explain plans");
            assert!(!d.join("proto.pcap").exists());
        }
    }
    // nix's own statistics: as nix wrote them per evaluation, summed in
    // run.json; calls counted only where the pass is instrumented. A warm
    // pass is answered from the lab's eval cache: no nix evaluation at all.
    for pass in ["cold-clean", "cold-instrumented"] {
        let eval = out.join(pass).join("eval");
        let files: Vec<serde_json::Value> = ["nix-stats.discover.json", "nix-stats.0.json"].iter().map(|f| read_json(&eval.join(f))).collect();
        let run = read_json(&out.join(pass).join("run.json"));
        let calls: u64 = files.iter().map(|f| f["nrFunctionCalls"].as_u64().unwrap()).sum();
        assert!(calls > 100_000, "{pass}: {calls}");
        assert_eq!(run["nix_stats"]["nrFunctionCalls"].as_u64(), Some(calls), "{pass}: run.json sums the files");
        let bytes: u64 = files.iter().map(|f| f["gc"]["totalBytes"].as_u64().unwrap()).sum();
        assert_eq!(run["nix_stats"]["gc.totalBytes"].as_u64(), Some(bytes), "{pass}: nested keys joined with '.'");
        assert_eq!(files[1].get("primops").is_some(), pass.ends_with("instrumented"), "{pass}: NIX_COUNT_CALLS only when instrumented");
    }
    // nix's own profile in the instrumented pass only: folded as it streamed, summed, drawn.
    let prof = read_json(&out.join("cold-instrumented/eval/nix-profile.json"));
    assert!(prof["lines"].as_u64().unwrap() > 100_000 && prof["by_attribute"].as_array().unwrap().len() >= 101, "one root per attribute");
    let folded = std::fs::read_to_string(out.join("cold-instrumented/eval/nix-profile.folded")).unwrap();
    let self_us: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    let traced = prof["traced_us"].as_u64().unwrap();
    assert!(self_us as f64 >= 0.95 * traced as f64 && self_us <= traced + 1000, "self times {self_us} µs against {traced} µs traced");
    assert!(std::fs::read_to_string(out.join("cold-instrumented/eval/nix-flame.svg")).unwrap().contains("<svg"));
    // Read back, its weights are µs of self time, not samples.
    let back = run_ok(evalbench().args(["decode", "nix-trace", "--json"]).arg(out.join("cold-instrumented/eval/nix-profile.folded")));
    let summary_line: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&back.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(summary_line["summary"]["self_us"].as_u64(), Some(self_us), "{summary_line}");
    assert!(summary_line["summary"].get("samples").is_none(), "{summary_line}");
    assert!(!out.join("cold-clean/eval/nix-profile.folded").exists(), "clean passes stay unprofiled");
    // Attribute boundaries on nix's clock: each resolve span lasts about what
    // nix's trace gives the attribute itself (within 2x and 50 µs), however
    // far behind the trace the reader was; an RSS is the attribute's or absent.
    // A span also holds what the trace does not see (writing the .drv to the
    // store), which a loaded CI machine once stretched to 496 µs against
    // 158 traced: a few attributes may run long, never most, and never
    // shorter than their traced time (the reader's lag showed as both).
    let self_of: std::collections::BTreeMap<String, f64> =
        prof["by_attribute"].as_array().unwrap().iter().map(|a| (a["attr"].as_str().unwrap().to_string(), a["self_us"].as_f64().unwrap())).collect();
    let mut resolves = 0;
    let mut long = Vec::new();
    let (mut all_dur, mut all_own) = (0.0, 0.0);
    for e in std::fs::read_dir(out.join("cold-instrumented/trace")).unwrap() {
        let p = e.unwrap().path();
        if !p.file_name().unwrap().to_string_lossy().starts_with("eval.") {
            continue;
        }
        for l in std::fs::read_to_string(&p).unwrap().lines() {
            let s: serde_json::Value = serde_json::from_str(l).unwrap();
            if s["name"] != "resolve" {
                continue;
            }
            resolves += 1;
            let f = &s["fields"];
            assert!(f.get("rss_kb").is_none_or(|kb| kb.as_i64().unwrap() > 0), "an RSS of 0 is no RSS: {s}");
            let (dur, own) = (s["dur_us"].as_f64().unwrap(), self_of[f["attr"].as_str().unwrap()]);
            assert!(own <= 2.0 * dur + 50.0, "resolve {dur} µs against {own} µs traced: {s}");
            if dur > 2.0 * own + 50.0 {
                long.push(format!("resolve {dur} µs against {own} µs traced: {s}"));
            }
            (all_dur, all_own) = (all_dur + dur, all_own + own);
        }
    }
    assert_eq!(resolves, 101, "a resolve span per attribute");
    assert!(long.len() <= 5, "{} of 101 resolve spans run long: {long:#?}", long.len());
    assert!(all_dur <= 2.0 * all_own + 50.0 * 101.0, "resolve spans {all_dur} µs in all against {all_own} µs traced");
    let counts = |p: &str| read_json(&out.join(p).join("run.json"))["nix_stats"]["nrFunctionCalls"].clone();
    assert_eq!(counts("cold-clean"), counts("cold-instrumented"), "the same evaluation, the same count");
    for pass in ["warm-clean", "warm-instrumented"] {
        assert!(read_json(&out.join(pass).join("run.json")).get("nix_stats").is_none(), "{pass}: answered from the cache");
    }
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(text.contains("nix's counters") && text.contains("nrFunctionCalls"), "{text}");
    // A column per pass, its repeats in one: not 33 columns of the same count.
    let calls_line = text.lines().find(|l| l.trim_start().starts_with("nrFunctionCalls")).unwrap();
    assert!(calls_line.split_whitespace().count() <= 5 && text.contains(&format!("cold-clean x{RUNS}")), "{calls_line}");
    assert!(text.contains("== cold-clean") && text.contains("== warm-clean"));
    assert!(!text.contains("== cold-instrumented") && !text.contains("== warm-instrumented"));
    // The answer first: each clean pass's runs as one measurement, no run's
    // own section, short enough to read (issue 43's bounds for the main job).
    let lines: Vec<&str> = text.lines().collect();
    let runs = RUNS;
    let at = lines.iter().position(|l| l.starts_with("== cold-clean")).unwrap();
    assert!(at < 40 && lines[at].contains(&format!("{runs} runs, evaluated median")), "line {at}: {}", lines[at]);
    assert!(
        lines[at + 1].contains("runs in order")
            && lines[at + 1].split("  (").next().unwrap().chars().filter(|c| ('▁'..='█').contains(c)).count() == runs,
        "{}",
        lines[at + 1]
    );
    assert!(lines.len() <= 200, "{} lines", lines.len());
    let widest = lines.iter().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 160, "a line of {widest} characters");
    assert!(!text.contains("== cold-clean.2") && !text.contains("span (by total time)"), "no run's own section");
    let each = run_ok(evalbench().args(["summarize", "--quiet", "--no-trace", "--runs"]).arg(&out));
    let each = String::from_utf8(each.stdout).unwrap();
    assert!(each.contains(&format!("== cold-clean.{runs} (cold")) && each.contains("span (by total time)"), "summarize --runs: every run");
    assert!(!std::fs::read_to_string(out.join("summary.txt")).unwrap().contains("== cold-clean.2"), "summary.txt is still the answer");
    let summary = read_json(&out.join("summary.json"));
    for p in summary["passes"].as_array().unwrap() {
        let (o, b) = (p["worker_offset_us"].as_i64().unwrap(), p["offset_bound_us"].as_i64().unwrap());
        assert!((o + skew_ms * 1000).abs() <= b, "{}: offset {o} ± {b}, truth {}; hosts {}", p["pass"], -skew_ms * 1000, p["hosts"]);
    }
    // The default: clean passes repeated (the measured count), instrumented once.
    let clean_runs = RUNS;
    assert!(out.join(format!("cold-clean.{clean_runs}")).is_dir() && out.join(format!("warm-clean.{clean_runs}")).is_dir());
    assert!(!out.join(format!("cold-clean.{}", clean_runs + 1)).exists() && !out.join("cold-instrumented.2").exists());
    // What was measured, in every run.json, the summary and the page.
    for pass in ["cold-clean", "warm-clean.2", "warm-instrumented"] {
        let p = &read_json(&out.join(pass).join("run.json"))["provenance"];
        assert_eq!(p["workload"]["flake"], "hello-flake (embedded)", "{pass}: {p}");
        assert!(p["workload"]["nar_hash"].as_str().unwrap().starts_with("sha256-"), "{p}");
        assert!(p["workload"].get("rev").is_none(), "the embedded flake is no git checkout: {p}");
        assert!(p["system"]["nix_version"].as_str().unwrap().starts_with("nix (Nix) "), "{p}");
        assert!(p["system"]["postgres_version"].as_str().unwrap().starts_with("15"), "{p}");
        // The lab's own server settings, as PostgreSQL shows them; no port or path.
        let settings = &p["system"]["postgres_settings"];
        assert_eq!((settings["fsync"].as_str(), settings["autovacuum_naptime"].as_str()), (Some("off"), Some("1s")), "{p}");
        assert!(settings.get("port").is_none() && settings.get("unix_socket_directories").is_none(), "{p}");
        assert_eq!(p["system"]["target"], "lab");
        assert!(p["system"]["server_version"].as_str().unwrap().starts_with("evalbench-lab "), "{p}");
        assert!(p["machine"]["cores"].as_u64().unwrap() >= 1 && p["machine"]["memory_bytes"].as_u64().unwrap() > 1 << 30, "{p}");
        assert_eq!(p["plan"]["repeat_clean"], RUNS as u64);
        assert_eq!(p["plan"]["repeat_instrumented"], 1);
        assert_eq!(p["plan"]["eval_workers"], 1, "the lab's evaluators: {p}");
        assert!(p["evalbench"]["version"].is_string() && p["started"].as_str().unwrap().ends_with('Z'), "{p}");
    }
    assert_eq!(summary["provenance"]["workload"]["flake"], "hello-flake (embedded)");
    assert!(text.contains("workload   flake hello-flake (embedded); rev "), "{text}");
    // The window: nothing before the captures were armed or after the evaluation left EvaluatingDerivation counts.
    for pass in ["cold-clean", "warm-clean", "cold-clean.2"] {
        check_window(&out, &summary, pass);
    }
    let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
    assert!(page.contains("What was measured") && page.contains("hello-flake (embedded)"), "provenance on the page");
    assert!(
        page.contains("uncertain in text or start (on a connection the capture joined after it began") && !page.contains("began before the capture)"),
        "it is the server's pooled connections that began before the capture, not its statements"
    );
    assert!(page.contains("Pass warm-instrumented"));
    // The runs as one measurement: per clean pass its runs in order and its
    // median path, the median run in full, the other runs as rows.
    let runs = RUNS;
    assert!(page.len() <= 2 << 20, "the page is {} bytes", page.len());
    assert!(page.contains(&format!("cold-clean: {runs} runs")) && page.contains(&format!("(median of {runs} runs)")), "a pass's runs as one");
    let pass_sections = page.matches("<h2 id=\"pass-").count();
    assert_eq!(pass_sections, 4, "one full section per pass, its median run's");
    assert!(page.matches("cold-clean.2/trace.json").count() >= 1, "every run links its trace");
    let t = std::time::Instant::now();
    let work = tempfile::tempdir().unwrap();
    let dom = common::browser::browse(&out.join("report/index.html"), work.path(), None).dom;
    eprintln!("chromium loaded the report ({} bytes) in {:.2} s", page.len(), t.elapsed().as_secs_f64());
    let chart = dom.split("evaluated seconds of each run, in run order").nth(1).and_then(|r| r.split("</svg>").next()).unwrap_or("");
    assert_eq!(chart.matches("<circle").count(), runs, "a dot per run in the browser's DOM");
    assert!(dom.contains("median critical path"), "the median path drawn");
    assert!(page.contains("What a faster step would buy") && page.contains("runs on its own path (median and range)"), "predicted over the runs");
    // whatif predicts on every run of the pass, each on its own path; a
    // step is named as the path table prints it; a name typed wrong is met
    // with the nearest ones.
    let w: serde_json::Value =
        serde_json::from_slice(&run_ok(evalbench().args(["whatif", "-q", "--json", "--faster", "eval resolve=50%"]).arg(&out)).stdout).unwrap();
    let o = &w["over_runs"];
    assert_eq!(o["runs"], runs as u64, "{o}");
    let saved = |k: &str| o["saved_ms"][k].as_f64().unwrap();
    assert!(saved("min") > 0.0 && saved("min") <= saved("median") && saved("median") <= saved("max"), "{o}");
    assert!(o["predicted_s"]["median"].as_f64() < o["measured_s"]["median"].as_f64(), "{o}");
    let typo = evalbench().args(["whatif", "-q", "--faster", "resolv=50"]).arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&typo.stderr).contains("did you mean \"eval resolve\""), "{}", String::from_utf8_lossy(&typo.stderr));
    // A PostgreSQL step and a server span, each named as the path table
    // prints it: what is shortened is the step's time as the table counts
    // it, so halving it saves at most half its time on the path (a server
    // span's own time holds the round trips the table books under postgres).
    let steps = w["path"]["steps"].as_array().unwrap().clone();
    for process in ["postgres", "server"] {
        let s = steps.iter().find(|s| s["process"] == process).unwrap_or_else(|| panic!("a {process} step on the path: {steps:?}"));
        let label = format!("{process} {}", s["name"].as_str().unwrap());
        let p: serde_json::Value =
            serde_json::from_slice(&run_ok(evalbench().args(["whatif", "-q", "--json", "--faster", &format!("{label}=50")]).arg(&out)).stdout)
                .unwrap();
        let wi = &p["whatif"];
        assert_eq!(wi["faster"][0]["matched"], serde_json::json!([label]), "{wi}");
        let saved_us = (wi["measured_s"].as_f64().unwrap() - wi["predicted_s"].as_f64().unwrap()) * 1e6;
        let half = s["on_path_us"].as_f64().unwrap() / 2.0;
        // Each shortened stretch rounds to the microsecond.
        assert!(saved_us > 0.0 && saved_us <= half + s["segments"].as_f64().unwrap() + 1.0, "{label}: saved {saved_us} µs of {half} µs: {wi}");
        let predicted = wi["predicted"].as_array().unwrap();
        assert!(predicted.iter().any(|s| s["process"] == "postgres"), "the predicted path names statements too: {predicted:?}");
    }
    let pass = evalbench().args(["whatif", "-q", "--pass", "cold"]).arg(&out).output().unwrap();
    let said = String::from_utf8_lossy(&pass.stderr);
    assert!(said.contains("did you mean cold-clean or cold-instrumented?") && said.len() < 400, "{said}");
    assert!(page.contains("nix's counters side by side") && page.contains("<code>nrFunctionCalls</code>"), "counters on the page");
    assert!(page.contains("Calls by primop") && page.contains("<code>derivationStrict</code>"), "instrumented: nix's calls on the page");
    assert!(page.contains("Attributes by memory added"), "resolve spans carry the evaluator's RSS");
    assert!(page.contains("nix's profile") && page.contains("Call sites by self time") && page.contains("Attributes by function calls"));
    let products = std::fs::read_to_string(out.join("nix-support/hydra-build-products")).unwrap();
    let lines: Vec<&str> = products.lines().collect();
    assert_eq!(lines.len(), 4);
    for l in &lines {
        let path = l.split_whitespace().nth(2).unwrap();
        assert!(l.starts_with("file ") && Path::new(path).is_file(), "{l}");
    }
    // Hydra's metrics: evaluated seconds of each clean pass (as in run.json)
    // and the eval subprocess's peak RSS from the CI's evaluation_metric.
    let metrics = std::fs::read_to_string(out.join("nix-support/hydra-metrics")).unwrap();
    // With repeats, the median over them (an even count: the mean of the middle two).
    let middle = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    for pass in ["cold-clean", "warm-clean"] {
        let runs: Vec<serde_json::Value> =
            (1..=clean_runs).map(|k| read_json(&out.join(if k == 1 { pass.to_string() } else { format!("{pass}.{k}") }).join("run.json"))).collect();
        let evaluated = middle(runs.iter().map(|r| r["evaluated_s"].as_f64().unwrap()).collect());
        let want = format!("evalbench.{pass}.evaluated {evaluated:.6} s");
        assert!(metrics.lines().any(|l| l == want), "{want:?} in {metrics}");
        let rss = middle(runs.iter().map(|r| r["evaluation_metric"]["eval_peak_rss_kb"].as_f64().unwrap()).collect());
        assert!(rss > 10_000.0, "an evaluator's peak RSS in KiB: {rss}");
        assert!(metrics.lines().any(|l| l == format!("evalbench.{pass}.eval_peak_rss {rss:.0} KiB")), "{metrics}");
    }
    // The store's .drv files: only the flake's first evaluation can write
    // them (none, where another test or run evaluated it before); every
    // later run finds them. A first run that wrote is named in the summary.
    // The warm-up runs (warmup/, out of every statistic) were evaluated first.
    let mut evaluated: Vec<(i64, String, i64)> = [out.clone(), out.join("warmup")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>())
        .filter_map(|d| {
            let r = d.join("run.json").is_file().then(|| read_json(&d.join("run.json")))?;
            let written = r["evaluation_metric"]["drvs_written"].as_i64().unwrap_or_else(|| panic!("{}: {r}", d.display()));
            let name = d.strip_prefix(&out).ok()?.to_str()?.to_string();
            Some((r["requested_us"].as_i64()?, name, written))
        })
        .collect();
    assert!(evaluated.iter().any(|r| r.1 == "warmup/cold-clean"), "one warm-up run of each clean pass: {evaluated:?}");
    evaluated.sort();
    assert!(evaluated.iter().skip(1).all(|r| r.2 == 0), "only the first evaluation writes: {evaluated:?}");
    if evaluated[0].2 > 0 && evaluated[0].1 == "cold-clean" {
        assert!(text.contains(&format!("but cold-clean {}.", evaluated[0].2)), "{text}");
    }
    let calls = read_json(&out.join("cold-clean/run.json"))["nix_stats"]["nrFunctionCalls"].as_u64().unwrap();
    assert!(metrics.lines().any(|l| l == format!("evalbench.cold-clean.nix.nrFunctionCalls {calls} calls")), "{metrics}");
    assert!(!metrics.contains("instrumented"), "timings of instrumented passes are not metrics: {metrics}");
    // Plans beside their statement's clean-pass time: the bundle against
    // itself has every statement's plan the same, and each planned
    // statement that pg_stat_statements also saw carries its verdict.
    let cmp: serde_json::Value = serde_json::from_slice(&run_ok(evalbench().args(["compare", "--json"]).arg(&out).arg(&out)).stdout).unwrap();
    let inst = cmp["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-instrumented").unwrap();
    let clean = cmp["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-clean").unwrap();
    assert!(clean.get("plans").is_none(), "clean passes log no plans");
    // compare says when the runs wrote unlike (here, the bundle against itself).
    let cold: Vec<i64> = evaluated.iter().filter(|r| r.1 == "cold-clean" || r.1.starts_with("cold-clean.")).map(|r| r.2).collect();
    assert_eq!(clean.get("store_writes").is_some(), cold.iter().any(|&c| c != cold[0]), "{cold:?}: {:?}", clean.get("store_writes"));
    let stmts: Vec<&str> = clean["statements"].as_array().unwrap().iter().map(|r| r["what"].as_str().unwrap()).collect();
    let plans = inst["plans"].as_array().unwrap();
    assert!(plans.len() >= 20 && plans.iter().all(|p| p["change"] == "same"), "one bundle against itself");
    let beside: Vec<&serde_json::Value> = plans.iter().filter(|p| stmts.contains(&p["statement"].as_str().unwrap())).collect();
    assert!(beside.len() >= 10, "planned statements that pg_stat_statements saw in cold-clean: {}", beside.len());
    assert!(beside.iter().all(|p| p["statement_verdict"]["kind"].is_string()), "each with its clean-pass verdict");
    // Each decoder refuses a real file of another kind, exit 2, saying what it looks like.
    let cc = out.join("cold-clean");
    let ci = out.join("cold-instrumented");
    let wrong: Vec<(&str, std::path::PathBuf, &str)> = vec![
        ("perf", cc.join("pg.pcap"), "expected perf.data or the text of `perf script`, but this looks like a pcap capture"),
        ("perf", cc.join("run.json"), "but this looks like JSON"),
        ("nix-trace", cc.join("run.json"), "expected nix's function trace"),
        ("nix-trace", ci.join("perf.data"), "this looks like perf.data"),
        ("proto", cc.join("pg.pcap"), "expected WebSocket /proto traffic, but none of its"),
        ("pg", cc.join("proto.pcap"), "expected PostgreSQL's wire protocol, but none of its"),
        ("strace", cc.join("run.json"), "expected strace -ff output"),
        ("pg", cc.join("run.json"), "pcap"),
    ];
    for (kind, file, expect) in wrong {
        let r = evalbench().args(["decode", kind]).arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "decode {kind} {}: {err}", file.display());
        assert!(err.contains(expect) && err.contains(&file.display().to_string()), "decode {kind} {}: {err}", file.display());
        assert!(r.stdout.is_empty(), "decode {kind} {}: nothing on stdout", file.display());
    }
    // ... and reads its own.
    for (kind, file) in
        [("perf", ci.join("perf.data")), ("proto", cc.join("proto.pcap")), ("pg", cc.join("pg.pcap")), ("strace", ci.join("worker/strace"))]
    {
        run_ok(evalbench().args(["decode", kind]).arg(&file));
    }
    // A pass directory where a bundle is meant is named as one.
    let r = evalbench().arg("summarize").arg(&cc).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("this is one pass's directory"), "{}", String::from_utf8_lossy(&r.stderr));
    // The archive is a whole bundle of its own.
    run_ok(evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("from-archive")).arg(out.join("evalbench.tar.gz")));
    assert_eq!(read_json(&tmp.path().join("from-archive/summary.json"))["passes"], summary["passes"]);
    // The lab is gone.
    let state = read_json(&lab.join("lab.json"));
    assert!(state["server_pid"].is_null() && state["worker_pids"].as_array().unwrap().is_empty());
    if let Some(ns) = state["net"]["server_ns"].as_str() {
        assert!(!Path::new("/run/netns").join(ns).exists());
    }
    assert!(!lab.join("pg/data/postmaster.pid").exists());
}
