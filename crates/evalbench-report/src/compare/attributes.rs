//! The attributes whose share of nix's own time or whose function calls
//! moved between two instrumented passes (`analyze::attributes::moved`), as
//! text and Markdown: the calls are exact counts, the share a shape.

use std::fmt::Write as _;

use evalbench_analyze::attributes::{AttributeMove, SHARE_POINTS};
use evalbench_analyze::comparison::PassComparison;

use crate::figures::grouped;
use crate::output::markdown::cell;

fn row(m: &AttributeMove) -> [String; 5] {
    let calls = |x: u64| grouped(x as f64);
    [
        m.attr.clone(),
        format!("{:.1}%", m.a_share * 100.0),
        format!("{:.1}%", m.b_share * 100.0),
        calls(m.a_calls),
        calls(m.b_calls),
    ]
}

fn title(n: usize) -> String {
    format!(
        "attributes that moved (nix's profile: calls exact, share of its own time a shape; {n} moved by a call or \
         {SHARE_POINTS} points)"
    )
}

/// The pass's moved attributes, the first `top`, as text.
pub fn text(t: &mut String, c: &PassComparison, top: usize) {
    let Some(moved) = &c.attributes else { return };
    let _ = writeln!(t, "  {}", title(moved.len()));
    if moved.is_empty() {
        let _ = writeln!(t, "    none: every attribute's calls are the same and no share moved");
        return;
    }
    let _ =
        writeln!(t, "    {:<48} {:>8} {:>8} {:>14} {:>14}", "attribute", "share A", "share B", "calls A", "calls B");
    for m in moved.iter().take(top) {
        let [a, sa, sb, ca, cb] = row(m);
        let _ = writeln!(t, "    {a:<48} {sa:>8} {sb:>8} {ca:>14} {cb:>14}");
    }
    if moved.len() > top {
        let _ = writeln!(t, "    and {} more (all in --json)", moved.len() - top);
    }
}

/// The same, as a GitHub table.
pub fn markdown(t: &mut String, c: &PassComparison, top: usize) {
    let Some(moved) = &c.attributes else { return };
    let _ = writeln!(t, "{}\n", cell(&title(moved.len())));
    if moved.is_empty() {
        return;
    }
    let _ = writeln!(t, "| attribute | share A | share B | calls A | calls B |\n|---|---:|---:|---:|---:|");
    for m in moved.iter().take(top) {
        let r = row(m);
        let _ = writeln!(t, "| {} | {} | {} | {} | {} |", cell(&r[0]), r[1], r[2], r[3], r[4]);
    }
    let _ = writeln!(t);
}
