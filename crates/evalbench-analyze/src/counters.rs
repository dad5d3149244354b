//! nix's own counters as measurements. nix counts its work exactly
//! (function calls, thunks, bytes allocated): the same input gives the same
//! counts run after run, while wall time here swings by a third. So an exact
//! counter needs no statistics: equal is `same`, anything else is `more` or
//! `less` by exactly that much. A counter that is a time (`cpuTime`), or one
//! that can differ between repeats of one input (the GC's heap size, which
//! follows when collections happen), is judged like a time, with the
//! verdict rules of [`crate::verdict`]. A counter that differs between the
//! repeats on either side is treated the same way, whatever its name.

use std::collections::BTreeMap;

use evalbench_bundle::nix_stats::{self, Counters};
// The counters' names, words, units and order are nix's vocabulary, kept with its format.
pub use evalbench_bundle::nix_stats::{exact_headline, in_headline_order, unit, words, HEADLINE, NOISY};
use serde::Serialize;

use crate::verdict::{judge, Family, Kind, Measured, Rules, Verdict, AMOUNT};
use crate::PassData;

/// A pass's counters: run.json's `nix_stats`, else the statistics files
/// themselves, else (a bundle Gradient wrote) the counts of its
/// `evaluation_metric` under nix's names and its times under their own.
/// None when it has none of these.
pub fn of_pass(data: &PassData) -> Option<Counters> {
    of_run(data.run.as_ref(), &data.dir)
}

/// [`of_pass`] from the pass's run.json and directory alone.
pub fn of_run(run: Option<&evalbench_bundle::RunInfo>, dir: &std::path::Path) -> Option<Counters> {
    if let Some(c) = run.and_then(|r| r.nix_stats.as_ref()).and_then(nix_stats::from_json) {
        return Some(c);
    }
    if let Some(c) = nix_stats::read(dir).ok().flatten().map(|s| s.counters) {
        return Some(c);
    }
    evaluation_metric(run, dir).as_ref().and_then(from_evaluation_metric)
}

/// The run's `evaluation_metric` row: run.json's, else (run.json missing
/// or unreadable) the `evaluation_metric.json` beside it, read on its own:
/// a bad run.json loses only itself.
pub fn evaluation_metric(run: Option<&evalbench_bundle::RunInfo>, dir: &std::path::Path) -> Option<serde_json::Value> {
    match run {
        Some(r) => r.evaluation_metric.clone(),
        None => {
            evalbench_bundle::run_info::read_evaluation_metric(&dir.join(evalbench_bundle::layout::EVALUATION_METRIC))
                .ok()
                .flatten()
        }
    }
}

/// Gradient's `evaluation_metric` row as counters: its counts under nix's
/// names (`contract::EVALUATION_METRIC_COUNTS`), its times and peaks as
/// `evaluation_metric.<column>`. None when it has no count.
pub fn from_evaluation_metric(row: &serde_json::Value) -> Option<Counters> {
    let mut c = Counters::new();
    for (column, nix) in evalbench_bundle::contract::EVALUATION_METRIC_COUNTS {
        if let Some(v) = row.get(column).and_then(|v| v.as_f64()) {
            c.insert(nix.to_string(), v);
        }
    }
    // Without a count (a warm pass the cache answered) the times alone are no counters.
    if c.is_empty() {
        return None;
    }
    for column in evalbench_bundle::contract::EVALUATION_METRIC_MEASURES {
        if let Some(v) = row.get(column).and_then(|v| v.as_f64()) {
            c.insert(format!("evaluation_metric.{column}"), v);
        }
    }
    Some(c)
}

/// The span an evaluator process lives in; its `end` field says how it ended.
pub const EVALUATOR: &str = "evaluator";

/// Evaluators of the pass that were recycled past `--eval-max-rss`
/// (`evaluator` spans that ended `recycled`): each was killed, and any
/// statistics it wrote first are set aside, so its work is missing from the
/// pass's counters.
pub fn recycled_evaluators(data: &PassData) -> usize {
    data.streams
        .iter()
        .flat_map(|st| {
            st.spans
                .iter()
                .filter(move |s| st.name(s) == EVALUATOR && st.field(s, "end").is_some_and(|e| e == "recycled"))
        })
        .count()
}

/// One counter, A against B.
#[derive(Debug, Clone, Serialize)]
pub struct CounterVerdict {
    /// nix's own key, nested keys joined with '.'.
    pub name: String,
    /// The value (an exact counter) or the median over the runs (a noisy one).
    pub a: serde_json::Value,
    pub b: serde_json::Value,
    /// None when A is 0 (a change from nothing has no percentage).
    pub change_pct: Option<f64>,
    /// same, more, less (exact); for noisy counters the verdict's kind:
    /// less, more, inside noise, negligible, no noise estimate.
    pub kind: Kind,
    /// A noisy counter's verdict's reason (`Reason::label`); exact ones are tested by equality.
    #[serde(default)]
    pub reason: crate::reason::Reason,
    pub exact: bool,
    /// What decided it, for the report to word (`report::words::counter`).
    #[serde(skip)]
    pub grounds: CounterGrounds,
}

/// What a counter's sentence is made of.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterGrounds {
    /// An exact count: A's and B's values, and the change, exact (None from 0).
    Exact {
        #[serde(with = "crate::grounds::any_f64")]
        a: f64,
        #[serde(with = "crate::grounds::any_f64")]
        b: f64,
        change: Option<f64>,
    },
    /// A count that is not exact, judged as a time is: its verdict's grounds.
    Noisy(crate::grounds::Grounds),
}

fn all_equal(v: &[f64]) -> bool {
    v.windows(2).all(|w| w[0] == w[1])
}

/// One exact counter from A's value to B's: the same, more or fewer, by its
/// percentage (none from 0, which has none). The one verdict of an exact
/// count, for compare and for history's steps alike.
pub fn judge_exact(name: &str, x: f64, y: f64) -> CounterVerdict {
    let change = (x != 0.0).then(|| (y / x - 1.0) * 100.0);
    let kind = if x == y {
        Kind::Same
    } else if y > x {
        Kind::More
    } else {
        Kind::Less
    };
    CounterVerdict {
        name: name.to_string(),
        a: nix_stats::number(x),
        b: nix_stats::number(y),
        change_pct: change.map(|c| evalbench_bundle::num::round_to(c, 3)),
        kind,
        reason: crate::reason::Reason::Tested,
        exact: true,
        grounds: CounterGrounds::Exact { a: x, b: y, change },
    }
}

/// Every counter both sides have: the exact ones judged by equality, and the
/// rest to be judged like times (in whichever family the caller puts them).
pub fn split_counters(
    a: &BTreeMap<String, Vec<f64>>,
    b: &BTreeMap<String, Vec<f64>>,
) -> (Vec<CounterVerdict>, Vec<Measured>) {
    let mut exact = Vec::new();
    let mut noisy = Vec::new();
    for (name, va) in a {
        let Some(vb) = b.get(name) else { continue };
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        if NOISY.contains(&name.as_str()) || !all_equal(va) || !all_equal(vb) {
            noisy.push(Measured { what: name.clone(), a: va.clone(), b: vb.clone(), floor_abs: 0.0 });
            continue;
        }
        exact.push(judge_exact(name, va[0], vb[0]));
    }
    (exact, noisy)
}

/// A counter that is not exact, as its verdict reads.
pub fn noisy_verdict(name: String, v: Verdict) -> CounterVerdict {
    CounterVerdict {
        a: nix_stats::number(v.a.median),
        b: nix_stats::number(v.b.median),
        change_pct: v.change_pct.is_finite().then_some(v.change_pct),
        kind: v.kind,
        reason: v.reason,
        exact: false,
        grounds: CounterGrounds::Noisy(v.grounds),
        name,
    }
}

/// Changes first, exact ones before the rest, by how much they moved; `same` last.
pub fn sort_counters(out: &mut [CounterVerdict]) {
    out.sort_by(|x, y| {
        let changed = |c: &CounterVerdict| c.kind != Kind::Same;
        changed(y)
            .cmp(&changed(x))
            .then(y.exact.cmp(&x.exact))
            .then(y.change_pct.unwrap_or(f64::INFINITY).abs().total_cmp(&x.change_pct.unwrap_or(f64::INFINITY).abs()))
            .then(x.name.cmp(&y.name))
    });
}

/// Judges every counter both sides have. Exact ones by equality; the rest in
/// one family, corrected together. Largest changes first, `same` last.
pub fn judge_counters(
    pass: &str,
    a: &BTreeMap<String, Vec<f64>>,
    b: &BTreeMap<String, Vec<f64>>,
    rules: Rules,
) -> (Vec<CounterVerdict>, Family) {
    let (mut out, noisy) = split_counters(a, b);
    let mut family = judge(&format!("{pass} nix counters that are not exact"), noisy, "", AMOUNT, rules);
    out.extend(std::mem::take(&mut family.verdicts).into_iter().map(|(name, v)| noisy_verdict(name, v)));
    sort_counters(&mut out);
    (out, family)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(v: &[(&str, &[f64])]) -> BTreeMap<String, Vec<f64>> {
        v.iter().map(|(k, x)| (k.to_string(), x.to_vec())).collect()
    }

    #[test]
    fn exact_counters_are_same_more_or_less_without_statistics() {
        let a = side(&[
            ("nrFunctionCalls", &[1_204_118.0]),
            ("nrThunks", &[8057.0]),
            ("cpuTime", &[0.015]),
            ("gc.heapSize", &[4.0e8]),
        ]);
        let b = side(&[
            ("nrFunctionCalls", &[1_448_790.0]),
            ("nrThunks", &[8057.0]),
            ("cpuTime", &[0.017]),
            ("gc.heapSize", &[4.0e8]),
        ]);
        let (v, _) = judge_counters("cold-clean", &a, &b, Rules::default());
        assert_eq!(v[0].name, "nrFunctionCalls");
        assert_eq!(v[0].kind, Kind::More);
        assert!(
            matches!(v[0].grounds, CounterGrounds::Exact { a: 1_204_118.0, b: 1_448_790.0, change: Some(c) } if (c -
                20.3201).abs() < 1e-3),
            "{v:?}"
        );
        let thunks = v.iter().find(|c| c.name == "nrThunks").unwrap();
        assert_eq!((thunks.kind, thunks.change_pct), (Kind::Same, Some(0.0)));
        let cpu = v.iter().find(|c| c.name == "cpuTime").unwrap();
        assert!(!cpu.exact && cpu.kind == Kind::NoNoiseEstimate, "{cpu:?}");
        assert!(
            matches!(&cpu.grounds, CounterGrounds::Noisy(g) if g.tested.is_none() && g.a_median == 0.015),
            "{cpu:?}"
        );
        assert_eq!(v.last().unwrap().kind, Kind::Same);
    }

    #[test]
    fn from_nothing_has_no_percentage_and_the_order_puts_the_headline_first() {
        let v = judge_exact("nrOpUpdates", 0.0, 5.0);
        assert_eq!((v.kind, v.change_pct), (Kind::More, None));
        assert_eq!(v.grounds, CounterGrounds::Exact { a: 0.0, b: 5.0, change: None });
        assert_eq!(judge_exact("nrThunks", 10.0, 5.0).kind, Kind::Less);
        let mut names = vec!["zeta", "nrThunks", "alpha", "nrFunctionCalls", "nrThunks"];
        in_headline_order(&mut names);
        assert_eq!(names, ["nrFunctionCalls", "nrThunks", "alpha", "zeta"]);
        assert!(exact_headline().all(|n| !NOISY.contains(&n)) && exact_headline().next() == Some("nrFunctionCalls"));
    }

    #[test]
    fn a_counter_that_differs_between_repeats_is_judged_like_a_time() {
        let a = side(&[("values.number", &[10.0, 11.0, 10.0, 12.0, 10.0])]);
        let b = side(&[("values.number", &[10.0, 11.0, 10.0, 10.0, 12.0])]);
        let (v, f) = judge_counters("p", &a, &b, Rules::default());
        assert!(!v[0].exact);
        assert!(matches!(v[0].kind, Kind::InsideNoise | Kind::Negligible), "{:?}", v[0]);
        assert_eq!(f.tests, 1);
    }
}
