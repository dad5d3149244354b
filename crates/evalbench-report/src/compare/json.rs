//! `evalbench compare`'s JSON (`--json`, and `run --baseline`'s
//! compare.json), the gate's regressions as lines, and how many rows a list
//! shows: what compare and `run --baseline` print alike.

use std::path::Path;

use evalbench_analyze::comparison::Comparison;
use evalbench_analyze::gate::Regression;

/// Span and statement rows printed per pass by default.
pub const TOP: usize = 15;
/// The page has room for more, but not for every row of a nixpkgs-sized
/// evaluation's spans and statements: the rest are counted, and in --json.
pub const HTML_TOP: usize = 100;

/// Each regression the gate fired on, as a line: the pass, the measure, and
/// its verdict's sentence.
pub fn regression_lines(regressions: &[Regression<'_>]) -> Vec<String> {
    regressions
        .iter()
        .map(|r| match r {
            Regression::Evaluated { pass, verdict } => format!("{pass} evaluated: {}", crate::words::verdict(verdict)),
            Regression::Counter { pass, counter } => {
                format!("{pass} {}: {}", counter.name, crate::words::counter(counter))
            }
            Regression::Instructions { comparison: c } => {
                format!("{} instructions: {}", c.pass, crate::words::instructions(c))
            }
        })
        .collect()
}

/// The comparison as one JSON document; with the gate's percentage and its
/// regressions (as [`regression_lines`]) where one was asked for.
pub fn json(a: &Path, b: &Path, out: &Comparison, pct: Option<f64>, gate: &[String]) -> String {
    let doc = serde_json::json!({
        "a": a, "b": b, "differs": out.differs, "provenance": { "a": out.provenance_a, "b": out.provenance_b },
        "same_session": out.one_bundle || out.provenance_a.same_session(&out.provenance_b),
        "interleaved": !out.one_bundle && out.provenance_a.interleaved(&out.provenance_b),
        "one_bundle": out.one_bundle,
        "passes": out.passes.iter().map(crate::output::worded::pass).collect::<Vec<_>>(), "only_a": out.only_a,
            "only_b":
            out.only_b,
        "undecided": crate::output::worded::undecided(&out.undecided), "warnings": out.warnings,
        "status": { "a": out.status_a, "b": out.status_b, "text": crate::words::sides_status(out) },
        "missing": out.missing.iter().map(|m| {
            let mut v = serde_json::to_value(m).expect("serializes");
            v["text"] = crate::words::missing(m).into();
            v
        }).collect::<Vec<_>>(),
        "instructions": out.instructions.iter().map(|c| {
            let mut v = serde_json::to_value(c).expect("serializes");
            v["text"] = crate::words::instructions(c).into();
            v
        }).collect::<Vec<_>>(),
        "gate": pct.map(|pct| serde_json::json!({ "fail_on_regression_pct": pct, "regressions": gate })),
    });
    format!("{}\n", serde_json::to_string_pretty(&doc).expect("serializes"))
}
