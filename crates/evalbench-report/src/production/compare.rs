//! Two production evaluations compared, as text and JSON: nix's exact counts
//! judged (what the gate fires on), the times side by side as single
//! measurements, the counts diffed, the workers' load side by side.

use std::fmt::Write;

use evalbench_analyze::production::compare::{column_of, ProductionComparison};

use super::{load_words, opt_secs};
use crate::figures::grouped;

/// A verdict's kind as its JSON names it (`same`, `more`, `less`).
fn kind_word(k: evalbench_analyze::verdict::Kind) -> String {
    serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn counter_name(nix: &str) -> String {
    match column_of(nix) {
        Some(c) => format!("{c} ({nix})"),
        None => nix.to_string(),
    }
}

/// compare's text for two reports.
pub fn text(c: &ProductionComparison) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "evalbench compare: production evaluation {} ({}) against {} ({})",
        c.a.evaluation, c.a.file, c.b.evaluation, c.b.file
    );
    let changed: Vec<String> = c
        .counters
        .iter()
        .filter(|v| v.kind != evalbench_analyze::verdict::Kind::Same)
        .map(|v| format!("{} {}", counter_name(&v.name), v.change_pct.map_or("from 0".into(), |p| format!("{p:+.1}%"))))
        .collect();
    let answer = if c.counters.is_empty() {
        "no count of nix on both sides: nothing to judge".to_string()
    } else if changed.is_empty() {
        format!("nix's {} exact counts are the same", c.counters.len())
    } else {
        format!("nix's exact counts changed: {}", changed.join(", "))
    };
    let _ = writeln!(s, "answer: {answer}; one evaluation a side, so times are shown and not judged");
    let _ = writeln!(s, "\nnix's counts (exact)");
    for v in &c.counters {
        let pct = v.change_pct.map_or("from 0".into(), |p| format!("{p:+.3}%"));
        let _ = writeln!(
            s,
            "  {:<36} {:>16} {:>16} {:>10}  {}",
            counter_name(&v.name),
            grouped(v.a.as_f64().unwrap_or(0.0)),
            grouped(v.b.as_f64().unwrap_or(0.0)),
            pct,
            kind_word(v.kind)
        );
    }
    for (name, side) in &c.missing {
        let _ = writeln!(s, "  {:<36} missing in {side}", counter_name(name));
    }
    let _ = writeln!(s, "\ntimes (one measurement a side, not judged)");
    for t in &c.times {
        let pct = t.change_pct.map_or(String::new(), |p| format!("{p:+.1}%"));
        let _ =
            writeln!(s, "  {:<18} {:<26} {:>12} {:>12} {:>9}", t.group, t.name, opt_secs(t.a_s), opt_secs(t.b_s), pct);
    }
    if c.counts.is_empty() {
        let _ = writeln!(s, "\ncounted: not on both sides (a bundle's run counts no derivations or cached paths)");
    } else {
        let _ = writeln!(s, "\ncounted");
    }
    for (name, a, b, d) in &c.counts {
        let _ = writeln!(s, "  {name:<20} {a:>10} {b:>10} {d:>+10}");
    }
    loads(&mut s, c);
    s
}

fn loads(s: &mut String, c: &ProductionComparison) {
    let _ = writeln!(s, "\nworkers while each job ran");
    for l in &c.loads {
        let side = |x: &Option<evalbench_analyze::production::Load>| x.as_ref().map_or("no samples".into(), load_words);
        let _ = writeln!(s, "  {} job: A {}; B {}", l.kind, side(&l.a), side(&l.b));
        for phase in &l.slower_on_busier {
            let _ = writeln!(s, "    {phase} took longer in B on a busier worker: the load may be why, not the change");
        }
    }
}

/// compare's JSON for two reports.
pub fn json(c: &ProductionComparison, regressions: &[String]) -> String {
    let mut v = serde_json::to_value(c).expect("serializes");
    v["kind"] = "gradient-diagnostic-reports".into();
    v["regressions"] = regressions.into();
    serde_json::to_string_pretty(&v).expect("serializes")
}

/// The gate's lines: each count that grew past the threshold, named by its column.
pub fn regression_lines(c: &ProductionComparison, pct: f64) -> Vec<String> {
    evalbench_analyze::production::compare::regressions(c, pct)
        .into_iter()
        .map(|v| {
            format!(
                "{} grew {} (from {} to {}), more than {pct}%",
                counter_name(&v.name),
                v.change_pct.map_or("from 0".into(), |p| format!("{p:+.3}%")),
                grouped(v.a.as_f64().unwrap_or(0.0)),
                grouped(v.b.as_f64().unwrap_or(0.0))
            )
        })
        .collect()
}
