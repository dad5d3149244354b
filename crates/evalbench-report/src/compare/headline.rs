//! compare's answer, first: per clean pass, its primary measures (the
//! evaluated seconds with both medians, nix's time on the path), what nix's
//! exact counters say, which path steps moved, and the gate's result. Text,
//! Markdown and the page print the same lines (`Headline`), so the answer to
//! "did B make it slower?" is the first thing read in every format, not line
//! 134 of a table on stderr.

use crate::figures::grouped;
use evalbench_analyze::comparison::{Comparison, PassComparison, NIX_STEP};
use evalbench_analyze::verdict::{Kind, Verdict};
use evalbench_bundle::layout::PassKind;

/// A pass's answer: its name and runs, then a line per measure.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PassAnswer {
    pub pass: String,
    pub runs_a: usize,
    pub runs_b: usize,
    pub lines: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Headline {
    pub passes: Vec<PassAnswer>,
    /// `--fail-on-regression`'s result, when it was asked for.
    pub gate: Option<String>,
}

/// The gate as asked: its percentage and what fired it (empty: it passed).
pub type Gate<'a> = Option<(f64, &'a [String])>;

pub fn headline(c: &Comparison, gate: Gate<'_>) -> Headline {
    let mut passes: Vec<PassAnswer> = c.passes.iter().filter(|p| p.kind == PassKind::Clean).map(pass_answer).collect();
    // nix's instructions under the clean pass they count, or as a pass of their own.
    for i in &c.instructions {
        let line = format!("nix's instructions ({}): {}", i.pass, crate::words::instructions(i));
        let clean = evalbench_bundle::layout::clean_of_counted(&i.pass);
        match passes.iter_mut().find(|p| p.pass == clean) {
            Some(p) => p.lines.push(line),
            None => {
                passes.push(PassAnswer { pass: i.pass.clone(), runs_a: i.runs_a, runs_b: i.runs_b, lines: vec![line] })
            }
        }
    }
    Headline { passes, gate: gate.map(|(pct, fired)| gate_line(pct, fired)) }
}

/// `0.508 s → 0.526 s (+3.5%): no change found (noise)`; seconds under a
/// tenth in ms (a warm pass's nix time read "0.000 s → 0.000 s").
pub fn measure(v: &Verdict) -> String {
    let change = crate::figures::pct(v.change_pct, v.a.median, v.b.median);
    format!("{} → {} ({change}): {}", seconds(v.a.median, v.b.median), seconds(v.b.median, v.a.median), answer(v))
}

/// `x` seconds, in ms when it and `other` are both under a tenth of a second.
pub fn seconds(x: f64, other: f64) -> String {
    if x.is_nan() {
        "unknown".into()
    } else if x.abs().max(other.abs()) < 0.1 {
        format!("{:.3} ms", x * 1e3)
    } else {
        format!("{x:.3} s")
    }
}

/// slower, faster, or why no change was found.
fn answer(v: &Verdict) -> String {
    match v.kind {
        k if k.is_change() => k.as_str().to_string(),
        Kind::Withheld => "not judged (withheld: the machine was busy)".into(),
        Kind::NoNoiseEstimate => "not judged (too few runs)".into(),
        k => format!("no change found ({})", v.reason.label(k)),
    }
}

fn pass_answer(p: &PassComparison) -> PassAnswer {
    let mut lines = vec![format!("evaluated {}", measure(&p.evaluated))];
    // A figure that fell back says so where it is printed.
    if let Some(f) = crate::condition_notes::fallback(&p.conditions) {
        lines.push(format!("  ({f})"));
    }
    if let Some(v) = &p.nix_on_path {
        lines.push(format!("nix's time on the path ({NIX_STEP}): {}", measure(v)));
    }
    if let Some(l) = counters_line(p) {
        lines.push(l);
    }
    let moved: Vec<String> = p
        .path
        .iter()
        .filter(|r| r.verdict.kind.is_change())
        .map(|r| format!("{} {} ({:+.1}%)", r.what, r.verdict.kind.as_str(), r.verdict.change_pct))
        .collect();
    lines.push(if moved.is_empty() {
        "path steps: none called faster or slower".into()
    } else {
        format!("path steps: {}", moved.join(", "))
    });
    let called =
        |rows: &[evalbench_analyze::comparison::Row]| rows.iter().filter(|r| r.verdict.kind.is_change()).count();
    let (spans, statements) = (called(&p.spans), called(&p.statements));
    if spans + statements > 0 {
        lines.push(format!(
            "exploratory rows called faster or slower: {} and {} (tables below)",
            crate::output::count(spans, "span"),
            crate::output::count(statements, "statement")
        ));
    }
    PassAnswer { pass: p.pass_a.clone(), runs_a: p.runs_a, runs_b: p.runs_b, lines }
}

/// `nix's exact counters: 13 more, 8 the same; most: nrFunctionCalls +33.2% (452,076 → 602,076)`.
fn counters_line(p: &PassComparison) -> Option<String> {
    let exact: Vec<_> = p.counters.iter().filter(|v| v.exact).collect();
    if exact.is_empty() {
        return None;
    }
    let n = |k: Kind| exact.iter().filter(|v| v.kind == k).count();
    let (more, less, same) = (n(Kind::More), n(Kind::Less), n(Kind::Same));
    if more + less == 0 {
        return Some(format!("nix's exact counters: all {same} the same"));
    }
    let parts: Vec<String> = [(more, "more"), (less, "fewer"), (same, "the same")]
        .iter()
        .filter(|(k, _)| *k > 0)
        .map(|(k, w)| format!("{k} {w}"))
        .collect();
    // The counters sort changes first, by how much they moved; the headline
    // counters (those the gate reads: function calls, thunks, ...) first.
    let headline: Vec<&str> = evalbench_bundle::nix_stats::exact_headline().collect();
    let top = exact
        .iter()
        .find(|v| v.kind.is_change() && headline.contains(&v.name.as_str()))
        .or_else(|| exact.iter().find(|v| v.kind.is_change()))?;
    let num = |x: &serde_json::Value| x.as_f64().map(grouped).unwrap_or_default();
    let change = top.change_pct.map(|c| format!("{c:+.1}%")).unwrap_or_else(|| "from 0".into());
    Some(format!(
        "nix's exact counters: {}; the most: {} {change} ({} → {})",
        parts.join(", "),
        top.name,
        num(&top.a),
        num(&top.b)
    ))
}

fn gate_line(pct: f64, fired: &[String]) -> String {
    if fired.is_empty() {
        return format!(
            "gate --fail-on-regression {pct}: passes (no clean pass slower by {pct}% or more, no exact headline \
                counter grown by more than {pct}%)"
        );
    }
    // "cold-clean nrFunctionCalls: nix did ..." → "cold-clean nrFunctionCalls".
    let names: Vec<&str> = fired.iter().map(|f| f.split(':').next().unwrap_or(f)).collect();
    let shown = names.iter().take(4).copied().collect::<Vec<_>>().join(", ");
    let more = if names.len() > 4 { format!(" and {} more", names.len() - 4) } else { String::new() };
    format!("gate --fail-on-regression {pct}: fails on {}: {shown}{more}", names.len())
}
