//! The report, opened in a real browser (Debian's chromium, headless): no
//! console messages, no network requests, every section, a hover title on
//! every bar; and a hostile bundle whose strings stay text.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::browser::*;
use common::*;

#[test]
fn the_network_check_sees_a_page_request() {
    // The control: a page that does fetch something is caught.
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("fetches.html");
    std::fs::write(&page, "<html><body><img src=\"http://127.0.0.1:9/x.png\">x</body></html>").unwrap();
    let b = browse(&page, tmp.path(), None);
    assert_eq!(page_requests(&b.netlog), vec!["http://127.0.0.1:9/x.png".to_string()]);
}

fn artifacts() -> PathBuf {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_report_of_a_real_bundle_opens_clean_in_a_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(&tmp.path().join("b"), &["--worker-clock-skew-ms", "300", "--ci-jobs", "3", "--drvs", "40"]);
    let report = tmp.path().join("report");
    run_ok(evalbench().args(["inspect"]).arg(&bundle).arg("-o").arg(&report));
    let page = report.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing fetched from elsewhere, no script at all.
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for bad in ["<script", "http://", "https://", "@import", "url("] {
        assert!(!without_ns.contains(bad), "the page contains {bad:?}");
    }
    let b = browse(&page, tmp.path(), None);
    no_console(&b);
    no_network(&b);
    for id in [
        "passes",
        "pass-cold-clean",
        "cold-clean-assignment",
        "cold-clean-jobs",
        "cold-clean-spans",
        "cold-clean-database",
        "cold-clean-network",
        "cold-instrumented-cpu",
    ] {
        assert!(b.dom.contains(&format!("id=\"{id}\"")), "section {id} missing from the rendered page");
    }
    // A pass without a capture names the file instead of drawing an empty chart.
    assert!(
        b.dom.contains("cold-clean/pg/job_phases.json") && b.dom.contains("is missing"),
        "missing captures must be named"
    );
    assert!(b.dom.contains("instrumented (timings distorted)"));
    assert!(b.dom.contains("Worker clock offset"));
    // Every bar carries a hover title.
    let bars = b.dom.matches("class=\"bar\"").count();
    let titled = b.dom.matches("class=\"bar\"").count()
        - b.dom
            .split("class=\"bar\"")
            .skip(1)
            .filter(|rest| !rest.trim_start_matches(|c| c != '>').starts_with("><title>"))
            .count();
    assert!(bars > 50, "only {bars} bars drawn");
    assert_eq!(titled, bars, "bars without a hover title");
    // Each chart is also a file of its own, and Perfetto's trace is beside the page.
    let svgs = std::fs::read_dir(&report)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"))
        .count();
    assert!(svgs >= 10, "{svgs} chart files");
    assert!(report.join("cold-clean/trace.json").is_file());
    let shot = artifacts().join("inspect.png");
    browse(&page, tmp.path(), Some(&shot));
    assert!(std::fs::metadata(&shot).map(|m| m.len() > 10_000).unwrap_or(false), "no screenshot");
}

const SCRIPT: &str = "<script>document.title='pwned';document.body.setAttribute('data-pwned','1')</script>";

#[test]
fn hostile_strings_are_shown_as_text_and_run_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle =
        sample(&tmp.path().join("b"), &["--passes", "cold-clean,cold-instrumented", "--ci-jobs", "2", "--drvs", "10"]);
    // Span names and fields, SQL text, a pass directory name: all hostile.
    let trace = bundle.join("cold-clean/trace");
    for e in std::fs::read_dir(&trace).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let hostile = text
            .replace("\"name\":\"flush\"", &format!("\"name\":{}", serde_json::to_string(SCRIPT).unwrap()))
            .replace(
                "\"fields\":{",
                "\"fields\":{\"evil\":\"</svg><img src=x onerror=alert(1)>\",\"link\":\"javascript:alert(1)\",",
            );
        std::fs::write(&p, hostile).unwrap();
    }
    std::fs::write(
        bundle.join("cold-clean/pg/pg_stat_statements.json"),
        serde_json::to_string(&serde_json::json!([{"query": format!("SELECT 1 /* {SCRIPT} \
            */"), "calls": 1, "total_exec_time": 1.5, "mean_exec_time": 1.5, "rows": 1}]))
        .unwrap(),
    )
    .ok()
    .or_else(|| {
        std::fs::create_dir_all(bundle.join("cold-clean/pg")).unwrap();
        std::fs::write(
            bundle.join("cold-clean/pg/pg_stat_statements.json"),
            serde_json::to_string(&serde_json::json!([{"query": format!("SELECT 1 /* {SCRIPT} \
                */"), "calls": 1, "total_exec_time": 1.5}]))
            .unwrap(),
        )
        .ok()
    });
    let evil_pass = bundle.join("\"><svg onload=alert(1)>-clean");
    std::fs::create_dir_all(evil_pass.join("trace")).unwrap();
    std::fs::copy(bundle.join("cold-clean/run.json"), evil_pass.join("run.json")).unwrap();
    let report = tmp.path().join("report");
    run_ok(evalbench().args(["inspect"]).arg(&bundle).arg("-o").arg(&report));
    let page = report.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "a script tag reached the page");
    assert!(!html.contains("<img"), "an img tag reached the page");
    assert!(!html.contains("<svg onload"), "an svg onload reached the page");
    assert!(!html.contains("href=\"javascript:"), "a javascript: link reached the page");
    let b = browse(&page, tmp.path(), None);
    no_console(&b);
    no_network(&b);
    assert!(!b.dom.contains("data-pwned=\"1\""), "a script ran");
    assert!(!b.dom.contains("<title>pwned</title>"), "a script ran");
    assert!(b.dom.contains("&lt;script&gt;document.title"), "the hostile name is not shown as text");
    assert!(b.dom.contains("SELECT 1 /* &lt;script&gt;"), "the hostile SQL is not shown as text");
    // The chart files are as safe as the page.
    for e in std::fs::read_dir(&report).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "svg") {
            let s = std::fs::read_to_string(&p).unwrap();
            assert!(!s.contains("<script") && !s.contains("<img"), "{}", p.display());
        }
    }
}

/// Every file under `dir`, by relative path: (bytes, mode).
fn files_of(dir: &Path) -> std::collections::BTreeMap<PathBuf, (Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let meta = std::fs::metadata(&p).unwrap();
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    (std::fs::read(&p).unwrap(), meta.permissions().mode() & 0o777),
                );
            }
        }
    }
    out
}

/// Renders are reproducible (a Nix build of the report must be), and what
/// they write is readable by the user that serves it: 0644 under umask 022.
#[test]
fn renders_are_byte_identical_and_readable_by_others() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = sample(&tmp.path().join("b"), &["--ci-jobs", "3", "--drvs", "40"]);
    let mut renders = Vec::new();
    for k in 0..3 {
        let (report, summary) = (tmp.path().join(format!("report{k}")), tmp.path().join(format!("summary{k}")));
        // A shell sets the umask; each run is its own process, with its own hash seeds.
        let cmd = format!(
            "umask 022 && {exe} summarize --quiet {b} -o {s} && {exe} inspect {b} -o {r}",
            exe = env!("CARGO_BIN_EXE_evalbench"),
            b = bundle.display(),
            s = summary.display(),
            r = report.display()
        );
        run_ok(Command::new("sh").args(["-c", &cmd]));
        renders.push((files_of(&summary), files_of(&report)));
    }
    for (k, (s, r)) in renders.iter().enumerate() {
        assert!(
            r.keys().any(|p| p.extension().is_some_and(|e| e == "svg")) && r.contains_key(Path::new("index.html")),
            "{:?}",
            r.keys()
        );
        assert!(
            s.contains_key(Path::new("summary.json")) && s.contains_key(Path::new("summary.txt")),
            "{:?}",
            s.keys()
        );
        for (p, (_, mode)) in s.iter().chain(r.iter()) {
            assert_eq!(*mode, 0o644, "render {k}: {} is {mode:o}", p.display());
        }
        if k > 0 {
            for (a, b) in [(&renders[0].0, s), (&renders[0].1, r)] {
                assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
                for (p, (bytes, _)) in a {
                    assert!(bytes == &b[p].0, "render {k}: {} differs from the first render", p.display());
                }
            }
        }
    }
    // The umask is honoured, not overridden: 077 gives 0600.
    let private = tmp.path().join("private");
    run_ok(Command::new("sh").args([
        "-c",
        &format!(
            "umask 077 && {} summarize --quiet {} -o {}",
            env!("CARGO_BIN_EXE_evalbench"),
            bundle.display(),
            private.display()
        ),
    ]));
    for (p, (_, mode)) in files_of(&private) {
        assert_eq!(mode, 0o600, "{}", p.display());
    }
}
