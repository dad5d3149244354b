//! The gate's policy: what `--fail-on-regression PCT` fires on, decided
//! once, on a comparison's verdicts. `compare` and `run --baseline` both
//! gate by it; the report words each regression and writes the JSON.
//! Instrumented passes' times are distorted and never gate; nix's exact
//! counters need no repeats, so they gate on one run a side; so do nix's
//! instructions in the counted passes, past their measured spread.

use evalbench_bundle::layout;

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
