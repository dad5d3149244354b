//! `evalbench compare`'s "Plans" part, in text and Markdown: per pair of
//! instrumented passes, the statements whose plans changed, each shown as
//! both trees side by side with actual rows × loops, beside the statement's
//! pg_stat_statements change in the clean passes.

use std::fmt::Write;

use evalbench_analyze::comparison::PassComparison;
use evalbench_analyze::plans::{Change, Node, PlanRow, Side};

/// A row or loop count: whole when it is, one decimal for an average.
pub(crate) fn count(x: f64) -> String {
    if x.fract() == 0.0 || x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// One node as a line indented by `unit` per level: "  -> Index Scan using
/// i on t  rows=3 loops=1"; `*` marks a node the other side lacks.
fn node_line(n: &Node, differs: bool, unit: &str) -> String {
    let mark = if differs { "* " } else { "  " };
    let indent = unit.repeat(n.depth as usize);
    let arrow = if n.depth > 0 { "-> " } else { "" };
    let role = n.role.as_deref().map(|r| format!("[{r}] ")).unwrap_or_default();
    let actual = match (n.rows, n.loops) {
        (Some(r), Some(l)) => format!("  rows={} loops={}", count(r), count(l)),
        _ => String::new(),
    };
    format!("{mark}{indent}{arrow}{role}{}{actual}", n.label())
}

/// `s` padded to `w` characters (a longer `s` is kept whole).
fn pad(s: &str, w: usize) -> String {
    format!("{s:<w$}")
}

/// A side's tree, a line per node (none when the side did not run the statement).
fn lines(s: Option<&Side>, unit: &str) -> Vec<String> {
    s.map(|s| s.nodes.iter().zip(&s.differs).map(|(n, d)| node_line(n, *d, unit)).collect()).unwrap_or_default()
}

fn head(s: Option<&Side>) -> String {
    match s {
        Some(s) => format!("{} of {} runs: plan {}", s.count, s.of, s.fingerprint),
        None => "not run".to_string(),
    }
}

/// Counts of each kind of change, as one line.
pub fn tally(rows: &[PlanRow]) -> String {
    let n = |c: Change| rows.iter().filter(|r| r.change == c).count();
    format!(
        "{} statements: {} plan changed, {} gained or lost a plan, {} new, {} gone, {} same",
        rows.len(),
        n(Change::Changed),
        n(Change::PlansDiffer),
        n(Change::New),
        n(Change::Gone),
        n(Change::Same)
    )
}

/// How many of the statement's runs moved to other plans (the shift); a
/// statement one side never ran has no plan to move from.
pub fn moved(r: &PlanRow) -> String {
    match r.change {
        Change::New => "only in B: A never ran it".into(),
        Change::Gone => "only in A: B never ran it".into(),
        _ => format!("{:.0}% of runs on other plans", r.shift * 100.0),
    }
}

/// Where the statement's time went in the clean passes.
pub fn statement_change(r: &PlanRow, c: &PassComparison) -> String {
    let clean = evalbench_bundle::layout::clean_of(&c.pass_a);
    match &r.statement_verdict {
        Some(v) => format!("pg_stat_statements in {clean}: {}", crate::words::verdict(v)),
        None => format!(
            "pg_stat_statements in {clean}: not compared (that pass was not compared, or it did not run the statement)"
        ),
    }
}

/// The text a terminal shows: the tally, then every change but "same", at most `top`.
pub fn text(t: &mut String, c: &PassComparison, top: usize) {
    let Some(rows) = &c.plans else {
        if let Some(n) = c.plan_notes.first() {
            let _ = writeln!(t, "  plans: none to compare ({n}{})", if c.plan_notes.len() > 1 { ", ..." } else { "" });
        }
        return;
    };
    let _ = writeln!(
        t,
        "  plans (auto_explain; a statement's plan is its most frequent one, * marks nodes the other side lacks):"
    );
    for n in &c.plan_notes {
        let _ = writeln!(t, "    note: {n}");
    }
    let _ = writeln!(t, "    {}", tally(rows));
    let shown: Vec<&PlanRow> = rows.iter().filter(|r| r.change != Change::Same).collect();
    for r in shown.iter().take(top) {
        let _ = writeln!(
            t,
            "    {} ({}): {}",
            r.change.as_str(),
            moved(r),
            r.statement.chars().take(160).collect::<String>()
        );
        let _ = writeln!(t, "      {}", statement_change(r, c));
        if !r.gained.is_empty() || !r.lost.is_empty() {
            let _ = writeln!(t, "      plans only in B: {}; only in A: {}", list(&r.gained), list(&r.lost));
        }
        let (la, lb) = (lines(r.a.as_ref(), "  "), lines(r.b.as_ref(), "  "));
        let ha = format!("A: {}", head(r.a.as_ref()));
        // Whole lines, never cut: a cut tree read `rows=0 loops=` and `DO NOTHIN`.
        let w = la.iter().chain([&ha]).map(|l| l.chars().count()).max().unwrap_or(0);
        let _ = writeln!(t, "      {} | B: {}", pad(&ha, w), head(r.b.as_ref()));
        for i in 0..la.len().max(lb.len()) {
            let l = la.get(i).map(String::as_str).unwrap_or("");
            let rr = lb.get(i).map(String::as_str).unwrap_or("");
            let _ = writeln!(t, "      {} | {rr}", pad(l, w));
        }
    }
    if shown.len() > top {
        let _ = writeln!(t, "    ... {} more in --json", shown.len() - top);
    }
}

/// Fingerprints as a list, or "none".
pub(crate) fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Markdown: the tally, then per change a table of the two trees side by side.
pub fn markdown(t: &mut String, c: &PassComparison, top: usize) {
    use crate::output::markdown::{cell, table};
    let Some(rows) = &c.plans else { return };
    let _ = writeln!(
        t,
        "Plans (auto_explain; most frequent plan per statement, `*` marks nodes the other side lacks): {}\n",
        tally(rows)
    );
    for r in rows.iter().filter(|r| r.change != Change::Same).take(top) {
        let _ = writeln!(t, "**{}** ({}): {}\n", r.change.as_str(), moved(r), cell(&r.statement));
        let _ = writeln!(t, "{}\n", cell(&statement_change(r, c)));
        // Renderers trim the white space a cell begins with (some all of
        // Unicode's, em spaces too): the depth is drawn with guides instead.
        let (la, lb) = (lines(r.a.as_ref(), "│ "), lines(r.b.as_ref(), "│ "));
        let body: Vec<Vec<String>> = (0..la.len().max(lb.len()))
            .map(|i| vec![la.get(i).cloned().unwrap_or_default(), lb.get(i).cloned().unwrap_or_default()])
            .collect();
        table(
            t,
            &[&format!("A: {}", head(r.a.as_ref())), &format!("B: {}", head(r.b.as_ref()))],
            &[crate::output::Align::Left, crate::output::Align::Left],
            &body,
        );
    }
}
