//! Output users read, checked against golden files (tests/golden/):
//! summary.txt, compare's text and Markdown, whatif, and `decode --json`,
//! on committed small bundles. tests/data/lab-a and lab-b are real lab
//! runs of the hello flake (lab-a: cold-clean x5 and warm-clean x5; lab-b:
//! cold-clean x5 with `--lab-setting graph_walk=join`), trimmed to what
//! these commands read (spans, PostgreSQL statistics, nix's statistics,
//! run.json); tests/data/captures holds one warm run's pg and proto pcaps;
//! the Gradient fixture is written from Gradient's format. A change of
//! output is then a diff to review:
//! `UPDATE_GOLDEN=1 cargo nextest run -p evalbench --test golden` rewrites
//! the files. Paths are replaced by `DATA` (the data directory) and
//! `BUNDLE` (a copy summarize writes into), so the files do not depend on
//! where the checkout is.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// stdout of `evalbench args`, which must succeed, with `paths` replaced by their names.
fn output(args: &[&str], paths: &[(&Path, &str)]) -> String {
    let o = run_ok(evalbench().args(args));
    let mut text = String::from_utf8(o.stdout).expect("output is UTF-8");
    for (p, name) in paths {
        text = text.replace(&p.display().to_string(), name);
    }
    text
}

/// Compares `text` with tests/golden/`name`, or writes it there under UPDATE_GOLDEN.
fn golden(name: &str, text: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
    }
    let want = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}: write it with UPDATE_GOLDEN=1", file.display()));
    if text != want {
        let line = text
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "its length".to_string(), |i| format!("line {}", i + 1));
        panic!(
            "{name} changed ({line} differs): check the new text, then `UPDATE_GOLDEN=1 cargo nextest run -p evalbench \
                --test golden`\n--- now:\n{text}"
        );
    }
}

/// A copy of a committed bundle, for the commands that write into it.
fn copy(bundle: &str, tmp: &Path) -> PathBuf {
    fn walk(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let to = tmp.join(bundle);
    walk(&data().join(bundle), &to);
    to
}

#[test]
fn summary_txt_reads_as_its_golden_file() {
    let tmp = tempfile::tempdir().unwrap();
    for bundle in ["lab-a", "gradient-bundle"] {
        let b = copy(bundle, tmp.path());
        run_ok(evalbench().arg("summarize").arg(&b).arg("-q"));
        // Gradient's own summary.txt stays; ours goes beside it, into evalbench/.
        let ours = if bundle == "gradient-bundle" { b.join("evalbench/summary.txt") } else { b.join("summary.txt") };
        let text = std::fs::read_to_string(&ours).unwrap().replace(&b.display().to_string(), "BUNDLE");
        golden(&format!("{bundle}.summary.txt"), &text);
    }
}

#[test]
fn compare_reads_as_its_golden_files() {
    let d = data();
    let (a, b) = (d.join("lab-a"), d.join("lab-b"));
    let paths = [(d.as_path(), "DATA")];
    for (format, file) in [("text", "compare.txt"), ("markdown", "compare.md")] {
        let text = output(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--format", format], &paths);
        golden(file, &text);
    }
    // The legend says the floor the verdicts were given, not the default's.
    let text = output(
        &["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--min-change", "2.5", "--min-abs-us", "100"],
        &paths,
    );
    assert!(
        text.contains(
            "negligible: real or not, smaller than the floor (2.5% of A's median, and 100 µs for a span or statement)"
        ),
        "{text}"
    );
}

#[test]
fn whatif_reads_as_its_golden_files() {
    let d = data();
    let a = d.join("lab-a");
    let paths = [(d.as_path(), "DATA")];
    golden("whatif.txt", &output(&["whatif", a.to_str().unwrap()], &paths));
    golden("whatif-faster.txt", &output(&["whatif", a.to_str().unwrap(), "--faster", "server record_one=50"], &paths));
}

#[test]
fn decode_json_reads_as_its_golden_files() {
    let d = data();
    let paths = [(d.as_path(), "DATA")];
    let cases = [
        ("pg", d.join("captures/pg.pcap"), "decode-pg.jsonl"),
        ("proto", d.join("captures/proto.pcap"), "decode-proto.jsonl"),
        ("strace", d.join("gradient-bundle/cold-instrumented/worker/strace"), "decode-strace.jsonl"),
        ("auto-explain", d.join("gradient-bundle/cold-instrumented/pg/auto_explain.log"), "decode-auto-explain.jsonl"),
    ];
    for (kind, file, name) in cases {
        golden(name, &output(&["decode", kind, "--json", file.to_str().unwrap()], &paths));
    }
}

#[test]
fn a_gradient_reports_summary_and_comparison_read_as_their_golden_files() {
    let tmp = tempfile::tempdir().unwrap();
    let a = gradient_report(tmp.path(), "a.db", "");
    let b = gradient_report(tmp.path(), "b.db", "UPDATE evaluation_metric SET fn_calls = fn_calls * 3");
    let out = tmp.path().join("out");
    let summary =
        output(&["summarize", a.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"], &[(tmp.path(), "TMP")]);
    golden("gradient-report-summary.txt", &summary);
    let compared = output(&["compare", a.to_str().unwrap(), b.to_str().unwrap()], &[(tmp.path(), "TMP")]);
    golden("gradient-report-compare.txt", &compared);
}
