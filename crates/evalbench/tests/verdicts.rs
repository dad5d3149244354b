//! `compare`'s verdicts held to account by construction: seeded synthetic
//! bundles (cold-clean and warm-clean, N runs each, 60 span names with
//! lognormal jitter) run through the real `evalbench compare`.
//!
//! - A/A: both sides drawn from one distribution. A verdict of "faster" or
//!   "slower" there is a false alarm; at most 5% of pairs may have any.
//! - Shifted: three spans +15, +20 and +25% and the evaluation +10%, in both
//!   passes. All four must be found in at least 90% of seeds, with at most
//!   one unshifted span called changed in any seed.

mod common;

use std::path::Path;

use common::synthetic::*;
use common::*;

/// Every verdict of `compare A B --json`: (pass, what, kind).
fn verdicts(a: &Path, b: &Path) -> Vec<(String, String, String)> {
    // The generator's machine is steady by construction: no drift between its "sessions".
    let out = run_ok(evalbench().arg("compare").arg(a).arg(b).args(["--json", "--between-sessions", "0"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut all = Vec::new();
    for p in v["passes"].as_array().unwrap() {
        let pass = p["pass_a"].as_str().unwrap().to_string();
        assert!(p["wall"]["p_adjusted"].is_number(), "every tested verdict carries its adjusted p: {}", p["wall"]);
        all.push((pass.clone(), "evaluated".to_string(), p["wall"]["kind"].as_str().unwrap().to_string()));
        for row in p["spans"].as_array().unwrap().iter().chain(p["statements"].as_array().unwrap()) {
            assert!(row["verdict"]["p_adjusted"].is_number(), "{row}");
            all.push((
                pass.clone(),
                row["what"].as_str().unwrap().to_string(),
                row["verdict"]["kind"].as_str().unwrap().to_string(),
            ));
        }
    }
    all
}

fn changed(kind: &str) -> bool {
    kind == "faster" || kind == "slower"
}

/// Runs `f` over `0..n` on two threads (the machine has two cores).
fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let f = &f;
    std::thread::scope(|s| {
        let halves: Vec<_> = (0..2)
            .map(|t| s.spawn(move || (0..n).filter(|i| i % 2 == t).map(|i| (i, f(i))).collect::<Vec<_>>()))
            .collect();
        let mut all: Vec<(usize, T)> = halves.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, t)| t).collect()
    })
}

#[test]
fn identical_inputs_are_called_changed_in_at_most_five_percent_of_pairs() {
    let tmp = tempfile::tempdir().unwrap();
    let truth = Truth::baseline();
    let pairs = 200;
    let flagged: Vec<Vec<(String, String, String)>> = in_parallel(pairs, |i| {
        let (a, b) = (tmp.path().join(format!("a{i}")), tmp.path().join(format!("b{i}")));
        write_bundle(&a, &truth, 6, 1000 + 2 * i as u64);
        write_bundle(&b, &truth, 6, 1001 + 2 * i as u64);
        let v = verdicts(&a, &b);
        assert_eq!(v.len(), 2 * (1 + SPANS), "every span of both passes judged");
        v.into_iter().filter(|(_, _, k)| changed(k)).collect()
    });
    let bad: Vec<&Vec<(String, String, String)>> = flagged.iter().filter(|f| !f.is_empty()).collect();
    eprintln!(
        "A/A: {} of {pairs} pairs with a faster/slower verdict ({} verdicts in all)",
        bad.len(),
        bad.iter().map(|f| f.len()).sum::<usize>()
    );
    assert!(
        bad.len() * 20 <= pairs,
        "{} of {pairs} A/A pairs called something changed: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
}

#[test]
fn three_shifted_spans_and_a_slower_evaluation_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let shifted_spans = [(7usize, 1.15), (23, 1.20), (41, 1.25)];
    let seeds = 40;
    // Twelve runs a side: the spans are exploratory, corrected together
    // over every row of both passes (~240); at 8 runs the smallest possible
    // p, 1.6e-4, barely passes 0.05/240, and all four were found in 25 of
    // 40 seeds, at 10 in 35.
    const RUNS: usize = 12;
    let results: Vec<(bool, usize)> = in_parallel(seeds, |i| {
        let (a, b) = (tmp.path().join(format!("a{i}")), tmp.path().join(format!("b{i}")));
        write_bundle(&a, &Truth::baseline(), RUNS, 5000 + 2 * i as u64);
        write_bundle(&b, &Truth::baseline().shifted(&shifted_spans, 1.10), RUNS, 5001 + 2 * i as u64);
        let v = verdicts(&a, &b);
        let is_shifted =
            |what: &str| what == "evaluated" || shifted_spans.iter().any(|(k, _)| what == format!("eval step_{k:02}"));
        let found = PASSES.iter().all(|pass| {
            v.iter().filter(|(p, w, _)| p == pass && is_shifted(w)).count() == 4
                && v.iter().filter(|(p, w, _)| p == pass && is_shifted(w)).all(|(_, _, k)| k == "slower")
        });
        let false_alarms = v.iter().filter(|(_, w, k)| !is_shifted(w) && changed(k)).count();
        if !found {
            eprintln!("seed {i}: {:?}", v.iter().filter(|(_, w, _)| is_shifted(w)).collect::<Vec<_>>());
        }
        (found, false_alarms)
    });
    let found = results.iter().filter(|(f, _)| *f).count();
    let worst = results.iter().map(|(_, n)| *n).max().unwrap();
    eprintln!(
        "shifted: all four found in {found} of {seeds} seeds (both passes); at most {worst} unshifted span(s) called \
            changed in a seed"
    );
    assert!(found * 10 >= seeds * 9, "found in only {found} of {seeds} seeds");
    assert!(worst <= 1, "a seed called {worst} unshifted spans changed");
}
