//! A counted pass's series (nix's instructions, one run a commit, no
//! seconds kept), held to account by construction: seeded series of 200
//! commits whose counts spread by 0.008% (sixteen times the lab's A/A range),
//! read back through `build` as `history show` does.
//!
//! - A/A: no series of 100 seeds flags anything.
//! - A +1% step at commit 120 is flagged at commit 120 exactly, once, in
//!   every seed; a later -1% step too, at its commit.

use std::collections::BTreeMap;

use evalbench_analyze::power::Rng;
use evalbench_history::{build, Select, Stored};

fn series(seed: u64, steps: &[(usize, f64)]) -> Vec<Stored> {
    let mut rng = Rng::new(seed);
    (0..200)
        .map(|i| {
            let level: f64 = steps.iter().filter(|(at, _)| i >= *at).map(|(_, f)| f).product();
            let count = (557_361_616.0 * level * (1.0 + 0.00008 * (rng.uniform() - 0.5))).round();
            Stored {
                run_id: i as i64,
                commit: format!("c{i}"),
                commit_time: 1_700_000_000 + i as i64 * 60,
                added_us: i as i64,
                branch: None,
                machine: Some("ci".into()),
                benchmark: Some("flake".into()),
                source: String::new(),
                pass: "cold-counted".into(),
                repeat: 1,
                evaluated_s: None,
                spans: BTreeMap::new(),
                counters: BTreeMap::from([
                    ("instructions".to_string(), count),
                    ("nrFunctionCalls".to_string(), 451_314.0),
                ]),
            }
        })
        .collect()
}

fn flagged(rows: Vec<Stored>) -> Vec<(usize, String)> {
    let h = build(rows, &Select::default());
    assert_eq!(h.rules.len(), 1);
    assert_eq!(h.rules[0].rule, "instructions", "{}", h.rules[0].text);
    h.changes.iter().map(|c| (c.commit[1..].parse().unwrap(), format!("{} {}", c.what, c.kind))).collect()
}

#[test]
fn an_aa_series_of_instructions_flags_nothing() {
    for seed in 0..100 {
        assert_eq!(flagged(series(seed, &[])), [], "seed {seed}");
    }
}

#[test]
fn a_one_percent_step_is_flagged_at_its_commit_with_one_run_a_commit() {
    for seed in 0..100 {
        let at = flagged(series(seed, &[(120, 1.01), (160, 0.99)]));
        assert_eq!(
            at,
            [(120, "nix instructions more".to_string()), (160, "nix instructions less".to_string())],
            "seed {seed}"
        );
    }
}
