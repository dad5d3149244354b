//! What the main job's bundle says: summary.txt, the page, whatif,
//! compare and the decoders, each read from the run tests/run.rs checks
//! (common::shared: one lab run for all of them).

mod common;

use std::path::Path;

use common::*;

/// Runs a clean pass in the main run (`shared::MAIN_RUNS`).
const RUNS: usize = shared::MAIN_RUNS;

/// Every run's directory with its start and the .drv files it wrote,
/// the warm-up runs (warmup/) among them, in the order they ran.
fn drv_writes(out: &Path) -> Vec<(i64, String, i64)> {
    let mut evaluated: Vec<(i64, String, i64)> = [out.to_path_buf(), out.join("warmup")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>())
        .filter_map(|d| {
            let r = d.join("run.json").is_file().then(|| read_json(&d.join("run.json")))?;
            let written =
                r["evaluation_metric"]["drvs_written"].as_i64().unwrap_or_else(|| panic!("{}: {r}", d.display()));
            let name = d.strip_prefix(out).ok()?.to_str()?.to_string();
            Some((r["requested_us"].as_i64()?, name, written))
        })
        .collect();
    evaluated.sort();
    evaluated
}

/// summary.txt leads with each clean pass's runs as one measurement, and
/// Hydra's products and metrics are the runs' medians.
#[test]
fn the_summary_leads_with_the_answer_and_hydra_gets_medians() {
    let shared = shared::main_run();
    let out = &shared.out;
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(text.contains("nix's counters") && text.contains("nrFunctionCalls"), "{text}");
    // A column per pass, its repeats in one: not 33 columns of the same count.
    let calls_line = text.lines().find(|l| l.trim_start().starts_with("nrFunctionCalls")).unwrap();
    assert!(
        calls_line.split_whitespace().count() <= 5 && text.contains(&format!("cold-clean x{RUNS}")),
        "{calls_line}"
    );
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
    assert!(!text.contains("== cold-clean.2") && !text.contains("span (by own time)"), "no run's own section");
    the_answer_is_one_figure_everywhere(out, &lines, tmp.path());
    let each = run_ok(
        evalbench().args(["summarize", "--quiet", "--no-trace", "--runs", "-o"]).arg(tmp.path().join("runs")).arg(out),
    );
    let each = String::from_utf8(each.stdout).unwrap();
    assert!(
        each.contains(&format!("== cold-clean.{runs} (cold")) && each.contains("span (by own time)"),
        "summarize --runs: every run"
    );
    assert!(
        !std::fs::read_to_string(out.join("summary.txt")).unwrap().contains("== cold-clean.2"),
        "summary.txt is still the answer"
    );
    hydra_gets_medians_and_counts(out, &text);
    shared.unchanged();
}

/// The answer within the first 10 lines, per clean pass: the median
/// evaluated time, the largest path steps, what halving the largest would
/// buy; the same figures in summary.json, on the page, from whatif and in history.
fn the_answer_is_one_figure_everywhere(out: &Path, lines: &[&str], tmp: &Path) {
    let summary = read_json(&out.join("summary.json"));
    let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
    let whatif = run_ok(evalbench().args(["whatif", "--quiet"]).arg(out));
    let whatif = String::from_utf8(whatif.stdout).unwrap();
    for a in summary["answers"].as_array().unwrap() {
        let pass = a["pass"].as_str().unwrap();
        let median = format!("evaluated median {:.3} s", a["evaluated_s"]["median"].as_f64().unwrap());
        let head = lines[..10].join("\n");
        assert!(head.contains(&format!("{pass:<11} {median}")), "{pass}: {median} not in the first 10 lines:\n{head}");
        let step = a["steps"][0]["step"].as_str().unwrap();
        let lever = a["lever"]["step"].as_str().unwrap();
        assert!(
            head.contains(&format!("halving {lever} would save")) && head.contains(step),
            "{pass}: the path and the lever in the head:\n{head}"
        );
        let saved = a["lever"]["saved_50_us"]["median"].as_f64().unwrap();
        let on_page = format!("{:.3} s</b>", a["evaluated_s"]["median"].as_f64().unwrap());
        assert!(page.contains(&on_page), "{pass}: the page's answer is not {on_page}");
        assert!(
            page.contains(&format!("<b>{:.1} ms</b>", saved / 1e3)),
            "{pass}: the page's lever is not summary.json's {saved} µs"
        );
        // history show after history add: the same median, the same three steps.
        let db = tmp.join("history.sqlite");
        if pass == "cold-clean" {
            run_ok(evalbench().args(["history", "add", "--commit", "c1", "--db"]).arg(&db).arg(out));
        }
        let show =
            String::from_utf8(run_ok(evalbench().args(["history", "show", "--pass", pass, "--db"]).arg(&db)).stdout)
                .unwrap();
        let steps: Vec<String> = a["steps"]
            .as_array()
            .unwrap()
            .iter()
            .take(3)
            .map(|s| {
                format!(
                    "{} {:.1} ms ({:.1}%)",
                    s["step"].as_str().unwrap(),
                    s["median_on_path_us"].as_f64().unwrap() / 1e3,
                    s["median_share"].as_f64().unwrap() * 100.0
                )
            })
            .collect();
        assert!(
            show.contains(&format!("{:.3}", a["evaluated_s"]["median"].as_f64().unwrap())),
            "{pass}: history show's median:\n{show}"
        );
        assert!(
            show.contains(&steps.join(", ")) && head.contains(&steps.join(", ")),
            "{pass}: the three steps `{}` in history show and summary.txt:\n{show}\n{head}",
            steps.join(", ")
        );
        if pass == "cold-clean" {
            assert!(
                whatif.lines().next().unwrap().contains(&median),
                "whatif's first line: {}",
                whatif.lines().next().unwrap()
            );
            assert!(whatif.contains(&format!("halving {lever} would save {:.1} ms", saved / 1e3)), "{whatif}");
        }
    }
}

/// Hydra's products and metrics: the medians of each clean pass's runs,
/// nix's counts, every pass's completed runs; and the store's .drv writes.
fn hydra_gets_medians_and_counts(out: &Path, text: &str) {
    let clean_runs = RUNS;
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
        let runs: Vec<serde_json::Value> = (1..=clean_runs)
            .map(|k| {
                read_json(&out.join(if k == 1 { pass.to_string() } else { format!("{pass}.{k}") }).join("run.json"))
            })
            .collect();
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
    let evaluated = drv_writes(out);
    assert!(evaluated.iter().any(|r| r.1 == "warmup/cold-clean"), "one warm-up run of each clean pass: {evaluated:?}");
    assert!(evaluated.iter().skip(1).all(|r| r.2 == 0), "only the first evaluation writes: {evaluated:?}");
    if evaluated[0].2 > 0 && evaluated[0].1 == "cold-clean" {
        assert!(text.contains(&format!("but cold-clean {}.", evaluated[0].2)), "{text}");
    }
    let calls = read_json(&out.join("cold-clean/run.json"))["nix_stats"]["nrFunctionCalls"].as_u64().unwrap();
    assert!(
        metrics.lines().any(|l| l == format!("evalbench.cold-clean.nix.nrFunctionCalls {calls} calls")),
        "{metrics}"
    );
    // Every pass's completed runs (its unit is Hydra's, constant: "runs"); no timing of an instrumented pass.
    for (pass, n) in [("cold-clean", RUNS), ("warm-clean", RUNS), ("cold-instrumented", 1), ("warm-instrumented", 1)] {
        assert!(metrics.lines().any(|l| l == format!("evalbench.{pass}.completed_runs {n} runs")), "{metrics}");
    }
    assert!(
        !metrics.lines().any(|l| l.contains("instrumented") && !l.contains(".completed_runs ")),
        "timings of instrumented passes are not metrics: {metrics}"
    );
}

/// The page: provenance, the runs as one measurement (drawn, in a real
/// browser), nix's counters and profile.
#[test]
fn the_page_shows_the_runs_as_one_measurement() {
    let shared = shared::main_run();
    let out = &shared.out;
    let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
    assert!(page.contains("What was measured") && page.contains("hello-flake (embedded)"), "provenance on the page");
    assert!(
        page.contains("uncertain in text or start (on a connection the capture joined after it began")
            && !page.contains("began before the capture)"),
        "it is the server's pooled connections that began before the capture, not its statements"
    );
    assert!(page.contains("Pass warm-instrumented"));
    // The runs as one measurement: per clean pass its runs in order and its
    // median path, the median run in full, the other runs as rows.
    let runs = RUNS;
    assert!(page.len() <= 2 << 20, "the page is {} bytes", page.len());
    assert!(
        page.contains(&format!("cold-clean: {runs} runs"))
            && page.contains(&format!("nearest the median of {runs} runs")),
        "a pass's runs as one"
    );
    // The overview's evaluated figure is the pass's median, the same as summary.json's.
    let summary = read_json(&out.join("summary.json"));
    for r in summary["repeats"].as_array().unwrap() {
        let median = r["wall_s"]["median"].as_f64().unwrap();
        assert!(
            page.contains(&format!("{median:.3} s median (")),
            "{}: the overview's median is not summary.json's {median:.3} s",
            r["pass"]
        );
    }
    let pass_sections = page.matches("<h2 id=\"pass-").count();
    assert_eq!(pass_sections, 4, "one full section per pass, its median run's");
    assert!(page.matches("cold-clean.2/trace.json").count() >= 1, "every run links its trace");
    let t = std::time::Instant::now();
    let work = tempfile::tempdir().unwrap();
    let dom = common::browser::browse(&out.join("report/index.html"), work.path(), None).dom;
    eprintln!("chromium loaded the report ({} bytes) in {:.2} s", page.len(), t.elapsed().as_secs_f64());
    let chart = dom
        .split("evaluated seconds of each run, in run order")
        .nth(1)
        .and_then(|r| r.split("</svg>").next())
        .unwrap_or("");
    assert_eq!(chart.matches("<circle").count(), runs, "a dot per run in the browser's DOM");
    assert!(dom.contains("median critical path"), "the median path drawn");
    assert!(
        page.contains("What a faster step would buy") && page.contains("runs on its own path (median and range)"),
        "predicted over the runs"
    );
    assert!(
        page.contains("nix's counters side by side") && page.contains("<code>nrFunctionCalls</code>"),
        "counters on the page"
    );
    assert!(
        page.contains("Calls by primop") && page.contains("<code>derivationStrict</code>"),
        "instrumented: nix's calls on the page"
    );
    // The evaluator's RSS is read when a marker is read; where the reader
    // fell behind until nix had gone on (a loaded CI machine), an attribute
    // has none. The instrumented pass, shown in full, has the list exactly
    // when some attribute of it has an RSS added.
    let added = span_lines(&out.join("cold-instrumented"))
        .iter()
        .any(|s| s["name"] == "resolve" && s["fields"]["rss_delta_kb"].is_i64());
    assert!(
        !added || page.contains("Attributes by memory added"),
        "resolve spans carry the evaluator's RSS, and the page shows it"
    );
    assert!(
        page.contains("nix's profile")
            && page.contains("Call sites by self time")
            && page.contains("Attributes by function calls")
    );
    shared.unchanged();
}

/// whatif over every run, by step as the path table names it.
#[test]
fn whatif_predicts_over_every_run_by_the_path_tables_names() {
    let shared = shared::main_run();
    let out = &shared.out;
    let runs = RUNS;
    // whatif predicts on every run of the pass, each on its own path; a
    // step is named as the path table prints it; a name typed wrong is met
    // with the nearest ones.
    let w: serde_json::Value = serde_json::from_slice(
        &run_ok(evalbench().args(["whatif", "-q", "--json", "--faster", "eval resolve=50%"]).arg(out)).stdout,
    )
    .unwrap();
    let o = &w["over_runs"];
    assert_eq!(o["runs"], runs as u64, "{o}");
    let saved = |k: &str| o["saved_ms"][k].as_f64().unwrap();
    assert!(saved("min") > 0.0 && saved("min") <= saved("median") && saved("median") <= saved("max"), "{o}");
    assert!(o["predicted_s"]["median"].as_f64() < o["measured_s"]["median"].as_f64(), "{o}");
    let typo = evalbench().args(["whatif", "-q", "--faster", "resolv=50"]).arg(out).output().unwrap();
    assert!(
        String::from_utf8_lossy(&typo.stderr).contains("did you mean \"eval resolve\""),
        "{}",
        String::from_utf8_lossy(&typo.stderr)
    );
    // A PostgreSQL step and a server span, each named as the path table
    // prints it: what is shortened is the step's time as the table counts
    // it, so halving it saves at most half its time on the path (a server
    // span's own time holds the round trips the table books under postgres).
    let steps = w["path"]["steps"].as_array().unwrap().clone();
    for process in ["postgres", "server"] {
        let s = steps
            .iter()
            .find(|s| s["process"] == process)
            .unwrap_or_else(|| panic!("a {process} step on the path: {steps:?}"));
        let label = format!("{process} {}", s["name"].as_str().unwrap());
        let p: serde_json::Value = serde_json::from_slice(
            &run_ok(evalbench().args(["whatif", "-q", "--json", "--faster", &format!("{label}=50")]).arg(out)).stdout,
        )
        .unwrap();
        let wi = &p["whatif"];
        assert_eq!(wi["faster"][0]["matched"], serde_json::json!([label]), "{wi}");
        let saved_us = (wi["measured_s"].as_f64().unwrap() - wi["predicted_s"].as_f64().unwrap()) * 1e6;
        let half = s["on_path_us"].as_f64().unwrap() / 2.0;
        // Each shortened stretch rounds to the microsecond.
        assert!(
            saved_us > 0.0 && saved_us <= half + s["segments"].as_f64().unwrap() + 1.0,
            "{label}: saved {saved_us} µs of {half} µs: {wi}"
        );
        let predicted = wi["predicted"].as_array().unwrap();
        assert!(
            predicted.iter().any(|s| s["process"] == "postgres"),
            "the predicted path names statements too: {predicted:?}"
        );
    }
    let pass = evalbench().args(["whatif", "-q", "--pass", "cold"]).arg(out).output().unwrap();
    let said = String::from_utf8_lossy(&pass.stderr);
    assert!(said.contains("did you mean cold-clean or cold-instrumented?") && said.len() < 400, "{said}");
    shared.unchanged();
}

/// compare of the bundle against itself sets plans beside statements;
/// each decoder refuses another's file and reads its own; the archive is
/// a whole bundle.
#[test]
fn compare_the_decoders_and_the_archive_read_the_bundle() {
    let shared = shared::main_run();
    let out = &shared.out;
    let tmp = tempfile::tempdir().unwrap();
    let evaluated = drv_writes(out);
    let summary = read_json(&out.join("summary.json"));
    // Plans beside their statement's clean-pass time: the bundle against
    // itself has every statement's plan the same, and each planned
    // statement that pg_stat_statements also saw carries its verdict.
    let cmp: serde_json::Value =
        serde_json::from_slice(&run_ok(evalbench().args(["compare", "--json"]).arg(out).arg(out)).stdout).unwrap();
    let inst = cmp["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-instrumented").unwrap();
    let clean = cmp["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-clean").unwrap();
    assert!(clean.get("plans").is_none(), "clean passes log no plans");
    // compare says when the runs wrote unlike (here, the bundle against itself).
    let cold: Vec<i64> =
        evaluated.iter().filter(|r| r.1 == "cold-clean" || r.1.starts_with("cold-clean.")).map(|r| r.2).collect();
    assert_eq!(
        clean.get("store_writes").is_some(),
        cold.iter().any(|&c| c != cold[0]),
        "{cold:?}: {:?}",
        clean.get("store_writes")
    );
    let stmts: Vec<&str> =
        clean["statements"].as_array().unwrap().iter().map(|r| r["what"].as_str().unwrap()).collect();
    let plans = inst["plans"].as_array().unwrap();
    assert!(plans.len() >= 20 && plans.iter().all(|p| p["change"] == "same"), "one bundle against itself");
    let beside: Vec<&serde_json::Value> =
        plans.iter().filter(|p| stmts.contains(&p["statement"].as_str().unwrap())).collect();
    assert!(beside.len() >= 10, "planned statements that pg_stat_statements saw in cold-clean: {}", beside.len());
    assert!(beside.iter().all(|p| p["statement_verdict"]["kind"].is_string()), "each with its clean-pass verdict");
    decoders_refuse_another_kind_and_read_their_own(out);
    // A pass directory where a bundle is meant is named as one.
    let r = evalbench().arg("summarize").arg(out.join("cold-clean")).output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("this is one pass's directory"),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // The archive is a whole bundle of its own.
    run_ok(
        evalbench()
            .args(["summarize", "--quiet", "-o"])
            .arg(tmp.path().join("from-archive"))
            .arg(out.join("evalbench.tar.gz")),
    );
    assert_eq!(read_json(&tmp.path().join("from-archive/summary.json"))["passes"], summary["passes"]);
    shared.unchanged();
}

/// Each decoder refuses a real file of another kind, exit 2, saying what it
/// looks like, and reads its own.
fn decoders_refuse_another_kind_and_read_their_own(out: &Path) {
    // Each decoder refuses a real file of another kind, exit 2, saying what it looks like.
    let cc = out.join("cold-clean");
    let ci = out.join("cold-instrumented");
    let wrong: Vec<(&str, std::path::PathBuf, &str)> = vec![
        (
            "perf",
            cc.join("pg.pcap"),
            "expected perf.data or the text of `perf script`, but this looks like a pcap capture",
        ),
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
        assert!(
            err.contains(expect) && err.contains(&file.display().to_string()),
            "decode {kind} {}: {err}",
            file.display()
        );
        assert!(r.stdout.is_empty(), "decode {kind} {}: nothing on stdout", file.display());
    }
    // ... and reads its own.
    for (kind, file) in [
        ("perf", ci.join("perf.data")),
        ("proto", cc.join("proto.pcap")),
        ("pg", cc.join("pg.pcap")),
        ("strace", ci.join("worker/strace")),
    ] {
        run_ok(evalbench().args(["decode", kind]).arg(&file));
    }
}
