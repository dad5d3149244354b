//! `evalbench compare`: text and Markdown.

use std::fmt::Write;

use evalbench_analyze::comparison::Comparison;
use evalbench_analyze::verdict::Kind;
use evalbench_bundle::layout::PassKind;

use super::markdown::cell;
use super::Align;
use crate::compare_tables::{self as tables, Table};

/// What differs between A and B, in one sentence or a line per field.
/// Then, when the sides say, whether they were measured in one session.
fn differs_text(t: &mut String, c: &Comparison) {
    match tables::differs(c) {
        None => {
            let _ = writeln!(t, "A and B measured the same workload, system, evalbench, machine, plan and settings.");
        }
        Some(d) => {
            let _ = writeln!(t, "{}:", d.title);
            for r in d.rows() {
                let _ = writeln!(t, "  {}", r.sentence);
            }
        }
    }
    if let Some(n) = c.session_note() {
        let _ = writeln!(t, "{n}");
    }
}

/// A name cut to a column of 60 characters.
fn name60(s: &str) -> String {
    s.chars().take(60).collect()
}

/// A table for a terminal: its verdicts as sentences under the title, then
/// each side's own rows under a title of their own.
fn text_table(t: &mut String, key: &str, table: &Table) {
    for g in &table.groups {
        if g.rows.is_empty() {
            continue;
        }
        match g.only {
            None => {
                let _ = writeln!(t, "  {}:", table.title);
            }
            Some(side) => {
                let _ = writeln!(t, "  {key} only in {side} ({}):", g.rows.len() + g.more);
            }
        }
        for r in &g.rows {
            let _ = writeln!(t, "    {:<60} {}", name60(&r.cells[0].text), r.sentence);
        }
        if g.more > 0 {
            let _ = writeln!(t, "    ... {} more in --json", g.more);
        }
    }
}

/// The text a terminal shows: at most `top` rows per list.
pub fn text(a: &str, b: &str, c: &Comparison, top: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "A: {a}\nB: {b}");
    differs_text(&mut t, c);
    let passes = tables::passes(c);
    for g in passes.groups.iter().filter(|g| !g.rows.is_empty()) {
        if let Some(side) = g.only {
            let _ = writeln!(t, "passes only in {side}: {}", g.rows.iter().map(|r| r.sentence.as_str()).collect::<Vec<_>>().join(", "));
        }
    }
    let _ = writeln!(t);
    for c in &c.passes {
        let label = if c.kind == PassKind::Instrumented { "  (instrumented: distorted timings)" } else { "" };
        let _ = writeln!(t, "{} (A: {}) → {} (B: {}){label}", c.pass_a, super::count(c.runs_a, "run"), c.pass_b, super::count(c.runs_b, "run"));
        if let Some(s) = tables::pg_settings(c) {
            let _ = writeln!(t, "  {s}");
        }
        let primary = if c.kind == PassKind::Clean { " (primary)" } else { "" };
        let _ = writeln!(t, "  evaluated{primary}: {}", c.wall.text);
        if let Some(v) = &c.nix_on_path {
            let _ = writeln!(t, "  nix's time on the path (primary, {}): {}", evalbench_analyze::comparison::NIX_STEP, v.text);
        }
        for n in c.notes() {
            let _ = writeln!(t, "  {n}");
        }
        let pt = tables::pass(c, top);
        if let Some(counters) = &pt.counters {
            // A terminal folds the counters that did not change into a count.
            let _ = writeln!(t, "  {}:", counters.title);
            for r in counters.rows().filter(|r| r.cells[4].text != Kind::Same.as_str()) {
                let _ = writeln!(t, "    {}", r.sentence);
            }
            if pt.same_counters > 0 {
                let _ = writeln!(t, "    {} counters the same on both sides", pt.same_counters);
            }
        }
        for (key, list) in &pt.lists {
            text_table(&mut t, key, list);
        }
        super::plans::text(&mut t, c, top);
    }
    for p in c.headline_notes() {
        let _ = writeln!(t, "note: {p}");
    }
    t
}

/// The times no verdict could be given, for stderr.
pub fn undecided(c: &Comparison) -> Vec<String> {
    c.undecided
        .iter()
        .map(|u| {
            format!(
                "{} {}: not judged ({}; {} and {} runs); {} runs a side would allow a verdict",
                u.pass, u.what, u.why, u.runs_a, u.runs_b, u.runs_needed
            )
        })
        .collect()
}

/// `--pg-setting`s as compare shows them: "enable_seqscan=off, work_mem=64MB" or "defaults".
pub fn settings(s: &std::collections::BTreeMap<String, String>) -> String {
    super::pg_settings(s, ", ")
}

/// A table in Markdown: every group's rows in one table, then how many were left out.
fn md_table(t: &mut String, table: &Table, title: bool) {
    if title {
        let _ = writeln!(t, "{}:\n", capitalized(&table.title));
    }
    let head: Vec<&str> = table.columns.iter().map(|c| c.0).collect();
    let align: Vec<Align> = table.columns.iter().map(|c| c.1).collect();
    let rows: Vec<Vec<String>> = table.rows().map(|r| r.cells.iter().map(|c| c.text.clone()).collect()).collect();
    super::markdown::table(t, &head, &align, &rows);
    let more: usize = table.groups.iter().map(|g| g.more).sum();
    if more > 0 {
        let _ = writeln!(t, "{more} more in `--json`.\n");
    }
}

/// "spans (…)" as a heading: "Spans (…)".
pub(crate) fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// GitHub-flavoured Markdown: what differs, a table of the passes'
/// evaluated seconds, then per pass nix's counters, its spans and its statements.
pub fn markdown(a: &str, b: &str, cmp: &Comparison, top: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "## evalbench compare: A → B\n\nA: {}<br>B: {}\n", cell(a), cell(b));
    match tables::differs(cmp) {
        None => {
            let _ = writeln!(t, "A and B measured the same workload, system, evalbench, machine, plan and settings.\n");
        }
        Some(d) => {
            let _ = writeln!(t, "A and B differ:\n");
            md_table(&mut t, &d, false);
        }
    }
    if let Some(n) = cmp.session_note() {
        let _ = writeln!(t, "{}\n", cell(&n));
    }
    md_table(&mut t, &tables::passes(cmp), false);
    for p in cmp.headline_notes() {
        let _ = writeln!(t, "> {}\n", cell(p));
    }
    for c in &cmp.passes {
        let _ = writeln!(t, "### {}\n", cell(&c.pass_a));
        if let Some(s) = tables::pg_settings(c) {
            let _ = writeln!(t, "{}\n", cell(&s));
        }
        if let Some(v) = &c.nix_on_path {
            let _ = writeln!(t, "nix's time on the path (primary, `{}`): {}\n", evalbench_analyze::comparison::NIX_STEP, cell(&v.text));
        }
        for n in c.notes() {
            let _ = writeln!(t, "> {}\n", cell(&n));
        }
        let pt = tables::pass(c, top);
        if let Some(counters) = &pt.counters {
            md_table(&mut t, counters, true);
        }
        for (_, list) in &pt.lists {
            md_table(&mut t, list, true);
        }
        super::plans::markdown(&mut t, c, top);
    }
    t
}
