//! The gate's policy: what `--fail-on-regression PCT` fires on, decided
//! once, on a comparison's verdicts. `compare` and `run --baseline` both
//! gate by it; the report words each regression and writes the JSON.
//! Instrumented passes' times are distorted and never gate; nix's exact
//! counters need no repeats, so they gate on one run a side; so do nix's
//! instructions in the counted passes, past their measured spread.

use std::collections::BTreeMap;

use evalbench_bundle::{layout, Bundle};

use crate::comparison::Comparison;
use crate::counters::{exact_headline, CounterVerdict};
use crate::instructions::InstructionsComparison;
use crate::verdict::{Kind, Verdict};

/// One regression past the gate's percentage.
#[derive(Debug, Clone, Copy)]
pub enum Regression<'a> {
    /// A clean pass's evaluated time, slower outside noise by at least the percentage.
    Evaluated { pass: &'a str, verdict: &'a Verdict },
    /// One of nix's exact headline counters, grown by more than the percentage.
    Counter { pass: &'a str, counter: &'a CounterVerdict },
    /// nix's instructions in a counted pass, more past their spread and by more than the percentage.
    Instructions { comparison: &'a InstructionsComparison },
}

/// A measure the gate judges that one side lacks: the gate cannot say it
/// did not regress, so it fails closed on it (`compare --allow-missing`
/// lets it pass), and compare says it first.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct Missing {
    /// The pass, and the measure of it (a counter; None: the whole pass).
    pub pass: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measure: Option<String>,
    /// The side that lacks it: `A` or `B`.
    pub missing_in: &'static str,
    /// Why, in words: how its runs ended, or that its runs hold none.
    pub why: String,
}

/// nix's exact headline counters that only one side's runs have, each
/// with the side that lacks it.
pub fn counters_missing(a: &BTreeMap<String, Vec<f64>>, b: &BTreeMap<String, Vec<f64>>) -> Vec<(String, &'static str)> {
    let has = |m: &BTreeMap<String, Vec<f64>>, n: &str| m.get(n).is_some_and(|v| !v.is_empty());
    exact_headline()
        .filter_map(|n| match (has(a, n), has(b, n)) {
            (true, false) => Some((n.to_string(), "B")),
            (false, true) => Some((n.to_string(), "A")),
            _ => None,
        })
        .collect()
}

/// Everything the gate judges that one side lacks: a pass one side ran and
/// the other planned but completed no run of (`whole`: not when one pass
/// of each side was picked), and per pass compared, an exact headline
/// counter one side's runs lack.
pub fn missing(
    passes: &[crate::comparison::PassComparison],
    (ba, bb): (&Bundle, &Bundle),
    whole: bool,
) -> Vec<Missing> {
    let mut out = Vec::new();
    if whole {
        let (sa, sb) = (crate::outcomes::of_bundle(ba), crate::outcomes::of_bundle(bb));
        let ran = |p: &crate::outcomes::PassRuns| p.completed + p.no_evaluated.len();
        for (mine, theirs, side) in [(&sa, &sb, "B"), (&sb, &sa, "A")] {
            for p in mine.iter().filter(|p| ran(p) > 0) {
                // Planned there (or begun) and not one run to show: not a pass it chose not to run.
                let Some(t) = theirs.iter().find(|t| t.pass == p.pass && ran(t) == 0) else { continue };
                let word = t.status.word().unwrap_or("no run");
                out.push(Missing {
                    pass: p.pass.clone(),
                    measure: None,
                    missing_in: side,
                    why: format!("{word}: no run of it completed"),
                });
            }
        }
    }
    for p in passes {
        // A clean pass's evaluated seconds, the gate's time, on one side only.
        let (a, b) = (p.evaluated.a.n > 0, p.evaluated.b.n > 0);
        if layout::is_clean(&p.pass_a) && a != b {
            let side = if a { "B" } else { "A" };
            out.push(Missing {
                pass: p.pass_a.clone(),
                measure: Some("evaluated".into()),
                missing_in: side,
                why: format!(
                    "no run of {side}'s has an evaluated time (run.json missing or unreadable; the warnings name it)"
                ),
            });
        }
        for (name, side) in &p.counters_missing {
            out.push(Missing {
                pass: p.pass_a.clone(),
                measure: Some(name.clone()),
                missing_in: side,
                why: format!(
                    "{side}'s runs hold no {name} (no readable nix statistics, run.json or evaluation_metric.json; the \
                        warnings name the files)"
                ),
            });
        }
    }
    out
}

/// What the gate fires on: a clean pass slower outside noise by `pct` or
/// more, or an exact headline counter of nix grown by more than `pct` in any
/// pass, or nix's instructions more by `pct` or more (past their spread) in
/// a counted pass; in the comparison's order, instructions last.
pub fn regressions(c: &Comparison, pct: f64) -> Vec<Regression<'_>> {
    let mut out = Vec::new();
    for p in &c.passes {
        if layout::is_clean(&p.pass_a) && p.evaluated.kind == Kind::Slower && p.evaluated.change_pct >= pct {
            out.push(Regression::Evaluated { pass: &p.pass_a, verdict: &p.evaluated });
        }
        for v in &p.counters {
            let headline = exact_headline().any(|n| n == v.name);
            if headline && v.exact && v.kind == Kind::More && v.change_pct.is_none_or(|c| c > pct) {
                out.push(Regression::Counter { pass: &p.pass_a, counter: v });
            }
        }
    }
    for i in &c.instructions {
        if i.kind == Kind::More && i.change_pct >= pct {
            out.push(Regression::Instructions { comparison: i });
        }
    }
    out
}
