//! Every fuzz target's stored corpus, replayed through the target's own
//! check on every test run: the inputs the fuzzer found (hostile captures,
//! logs, plans, span files, archives) stay held to what the target asserts.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../../fuzz/checks/mod.rs"]
mod checks;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `check` on every stored input of `target`; names each input that
/// panics, with what it said.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = fuzz_dir().join("corpus").join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (mut inputs, mut failed) = (0, Vec::new());
    for entry in entries {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&data))) {
            let said = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            failed.push(format!("{}: {}", path.display(), said.unwrap_or_default()));
        }
        inputs += 1;
    }
    let shown = failed.iter().take(20).cloned().collect::<Vec<_>>().join("\n");
    assert!(
        failed.is_empty(),
        "{target}: {} of {inputs} stored inputs fail (the first 20 here):\n{shown}",
        failed.len()
    );
    assert!(inputs >= 100, "{target}: only {inputs} inputs in {}", dir.display());
}

macro_rules! replayed {
    ($($target:ident),*) => {
        $(#[test]
        fn $target() {
            replay(stringify!($target), checks::$target::check);
        })*
        const REPLAYED: &[&str] = &[$(stringify!($target)),*];
    };
}

replayed!(
    archive,
    auto_explain,
    cachegrind,
    diagnostic_report,
    nix_stats,
    nix_trace,
    pcap_decoders,
    pcap_window,
    perf_script,
    pg_stream,
    plan_fingerprint,
    span_lines,
    sql_normalize,
    strace
);

#[test]
fn every_target_is_replayed() {
    let mut targets: Vec<String> = std::fs::read_dir(fuzz_dir().join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    targets.sort();
    assert_eq!(targets, REPLAYED, "each file in fuzz/fuzz_targets has its corpus replayed here");
}
