//! `evalbench compare`: text and Markdown.

use std::fmt::Write;

use evalbench_analyze::comparison::{Comparison, PassComparison};
use evalbench_analyze::verdict::Kind;
use evalbench_bundle::layout::PassKind;

use std::collections::BTreeSet;

use crate::compare::headline::{Gate, Headline};
use crate::compare::tables::{self as tables, Table};
use crate::output::markdown::cell;
use crate::output::Align;

/// What differs between A and B, in one sentence or a line per field.
/// Then, when the sides say, whether they were measured in one session.
fn differs_text(t: &mut String, c: &Comparison) {
    match tables::differs(c) {
        None => {
            let _ = writeln!(t, "{}", crate::words::alike(c));
        }
        Some(d) => {
            let _ = writeln!(t, "{}:", d.title);
            for r in d.rows() {
                let _ = writeln!(t, "  {}", r.sentence);
            }
        }
    }
    // One bundle with itself is said first, above the answer.
    if let Some(n) = crate::words::session_note(c).filter(|_| !c.one_bundle) {
        let _ = writeln!(t, "{n}");
    }
}

/// The answer's lines: per clean pass its measures, then the gate.
fn headline_text(t: &mut String, h: &Headline) {
    let _ = writeln!(
        t,
        "Answer (each clean pass's primary measures, fixed before looking; the rows further down are exploratory):"
    );
    for p in &h.passes {
        let _ = writeln!(
            t,
            "  {} ({} A, {} B):",
            p.pass,
            crate::output::count(p.runs_a, "run"),
            crate::output::count(p.runs_b, "run")
        );
        for l in &p.lines {
            let _ = writeln!(t, "    {l}");
        }
    }
    if h.passes.is_empty() {
        let _ =
            writeln!(t, "  no clean pass in common: instrumented passes' timings are distorted, and answer nothing");
    }
    if let Some(g) = &h.gate {
        let _ = writeln!(t, "  {g}");
    }
}

/// Columns of a text table: the name, A, B, the change and the verdict's word.
const NAME: usize = 58;

fn text_row(t: &mut String, cells: [&str; 5]) {
    let [name, a, b, change, word] = cells;
    let _ = writeln!(t, "    {:<NAME$} {a:>14} {b:>14} {change:>9}  {word}", crate::summary::text::clip(name, NAME));
}

/// A table for a terminal: a title with the column heads, the rows, each
/// side's own rows, and with `verbose` each row's full sentence under it.
fn text_table(t: &mut String, (key, title): (&str, &str), table: &Table, verbose: bool, words: &mut BTreeSet<String>) {
    if table.is_empty() {
        return;
    }
    let _ = writeln!(t, "  {title}:");
    text_row(t, ["", "A", "B", "change", "verdict"]);
    for g in &table.groups {
        if let Some(side) = g.only.filter(|_| !g.rows.is_empty()) {
            let _ = writeln!(t, "    {key} only in {side} ({}):", g.rows.len() + g.more);
        }
        for r in &g.rows {
            let c = |i: usize| r.cells.get(i).map_or("", |c| c.text.as_str());
            text_row(t, [c(0), c(1), c(2), c(3), c(4)]);
            words.insert(c(4).to_string());
            if verbose {
                let _ = writeln!(t, "      {}", r.sentence);
            }
        }
        if g.more > 0 {
            let _ = writeln!(t, "    ... {} more in --json", g.more);
        }
    }
}

/// The text a terminal shows: the answer, then per pass its notes and
/// tables (at most `top` rows a list), then what each verdict word means.
/// `verbose`: each row's full sentence, with its tests, under it.
pub fn text(a: &str, b: &str, c: &Comparison, top: usize, gate: Gate<'_>, verbose: bool) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "A: {a}\nB: {b}");
    // Runs that did not complete, and what cannot be judged, come before any verdict.
    for s in crate::words::sides_status(c) {
        let _ = writeln!(t, "{s}");
    }
    for m in &c.missing {
        let _ = writeln!(t, "cannot judge: {}", crate::words::missing(m));
    }
    if let Some(n) = crate::words::session_note(c).filter(|_| c.one_bundle) {
        let _ = writeln!(t, "{n}");
    }
    headline_text(&mut t, &crate::compare::headline::headline(c, gate));
    let _ = writeln!(t);
    differs_text(&mut t, c);
    let passes = tables::passes(c);
    for g in passes.groups.iter().filter(|g| !g.rows.is_empty()) {
        if let Some(side) = g.only {
            let _ = writeln!(
                t,
                "passes only in {side}: {}",
                g.rows.iter().map(|r| r.sentence.as_str()).collect::<Vec<_>>().join(", ")
            );
        }
    }
    let mut words = BTreeSet::new();
    for c in &c.passes {
        pass_text(&mut t, c, (top, verbose), &mut words);
    }
    crate::instructions::text(&mut t, c);
    let legend = tables::legend_lines(words.iter().map(String::as_str), c);
    if !legend.is_empty() {
        let _ = writeln!(t);
        let _ = writeln!(t, "Verdicts (every row's tests: --verbose or --json):");
        for l in legend {
            let _ = writeln!(t, "  {l}");
        }
    }
    for p in crate::words::headline_notes(c) {
        let _ = writeln!(t, "note: {p}");
    }
    crate::summary::text::fit(&t)
}

/// One pass compared: its settings and conditions, its primary measures,
/// the counters that changed, the lists and plans; each verdict's word
/// kept for the legend.
fn pass_text(t: &mut String, c: &PassComparison, (top, verbose): (usize, bool), words: &mut BTreeSet<String>) {
    let _ = writeln!(t);
    let label = if c.kind == PassKind::Instrumented { "  (instrumented: distorted timings)" } else { "" };
    let _ = writeln!(
        t,
        "== {} (A: {}) → {} (B: {}){label}",
        c.pass_a,
        crate::output::count(c.runs_a, "run"),
        c.pass_b,
        crate::output::count(c.runs_b, "run")
    );
    if let Some(s) = tables::pg_settings(c) {
        let _ = writeln!(t, "  {s}");
    }
    for n in crate::condition_notes::notes(&c.conditions) {
        let _ = writeln!(t, "  note: {n}");
    }
    text_table(t, ("measures", "primary measures (s)"), &tables::primary(c), verbose, words);
    let pt = tables::pass(c, top);
    // Every counter that changed (a few dozen at most), the rest folded into a count.
    if let Some(mut changed) = tables::pass(c, usize::MAX).counters {
        for g in &mut changed.groups {
            g.rows.retain(|r| r.cells[4].text != Kind::Same.as_str());
        }
        text_table(t, ("counters", "nix's counters (exact counts unless marked *)"), &changed, verbose, words);
        if pt.same_counters > 0 {
            let _ = writeln!(t, "    {} counters the same on both sides", pt.same_counters);
            words.insert(Kind::Same.as_str().to_string());
        }
    }
    for (key, list) in &pt.lists {
        let title = match *key {
            "spans" => "spans (total ms a run)",
            "statements" => "statements (pg_stat_statements, total ms a run)",
            _ => "critical path (ms on the path a run)",
        };
        text_table(t, (key, title), list, verbose, words);
    }
    super::attributes::text(t, c, top);
    super::plans::text(t, c, top);
}

/// The times no verdict could be given, for stderr.
pub fn undecided(c: &Comparison) -> Vec<String> {
    c.undecided
        .iter()
        .map(|u| {
            format!(
                "{} {}: not judged ({}; {} and {} runs); {} runs a side would allow a verdict",
                u.pass,
                u.what,
                crate::words::no_verdict(u.why),
                u.runs_a,
                u.runs_b,
                u.runs_needed
            )
        })
        .collect()
}

/// `--pg-setting`s as compare shows them: "enable_seqscan=off, work_mem=64MB" or "defaults".
pub fn settings(s: &std::collections::BTreeMap<String, String>) -> String {
    crate::output::pg_settings(s, ", ")
}

/// A table in Markdown: every group's rows in one table, then how many were left out.
fn md_table(t: &mut String, table: &Table, title: bool) {
    if title {
        let _ = writeln!(t, "{}:\n", capitalized(&table.title));
    }
    let head: Vec<&str> = table.columns.iter().map(|c| c.0).collect();
    let align: Vec<Align> = table.columns.iter().map(|c| c.1).collect();
    let rows: Vec<Vec<String>> = table.rows().map(|r| r.cells.iter().map(|c| c.text.clone()).collect()).collect();
    crate::output::markdown::table(t, &head, &align, &rows);
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
pub fn markdown(a: &str, b: &str, cmp: &Comparison, top: usize, gate: Gate<'_>) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "## evalbench compare: A → B\n\nA: {}<br>B: {}\n", cell(a), cell(b));
    for s in crate::words::sides_status(cmp) {
        let _ = writeln!(t, "**{}**\n", cell(&s));
    }
    for m in &cmp.missing {
        let _ = writeln!(t, "**Cannot judge:** {}\n", cell(&crate::words::missing(m)));
    }
    if let Some(n) = crate::words::session_note(cmp).filter(|_| cmp.one_bundle) {
        let _ = writeln!(t, "**{}**\n", cell(&n));
    }
    headline_markdown(&mut t, cmp, gate);
    let _ = writeln!(t);
    match tables::differs(cmp) {
        None => {
            let _ = writeln!(t, "{}\n", crate::words::alike(cmp));
        }
        Some(d) => {
            let _ = writeln!(t, "A and B differ:\n");
            md_table(&mut t, &d, false);
        }
    }
    if let Some(n) = crate::words::session_note(cmp).filter(|_| !cmp.one_bundle) {
        let _ = writeln!(t, "{}\n", cell(&n));
    }
    md_table(&mut t, &tables::passes(cmp), false);
    for p in crate::words::headline_notes(cmp) {
        let _ = writeln!(t, "> {}\n", cell(&p));
    }
    for c in &cmp.passes {
        pass_markdown(&mut t, c, top);
    }
    crate::instructions::markdown(&mut t, cmp, md_table);
    let legend = tables::legend_lines(tables::words(cmp), cmp);
    if !legend.is_empty() {
        let _ = writeln!(t, "Verdicts (every row's tests: `--json`):\n");
        for l in legend {
            let _ = writeln!(t, "- {}", cell(&l));
        }
        let _ = writeln!(t);
    }
    t
}

/// The answer, each clean pass's primary measures, as a list.
fn headline_markdown(t: &mut String, cmp: &Comparison, gate: Gate<'_>) {
    let h = crate::compare::headline::headline(cmp, gate);
    let _ = writeln!(
        t,
        "**Answer** (each clean pass's primary measures, fixed before looking; the tables below are exploratory):\n"
    );
    for p in &h.passes {
        let _ = writeln!(
            t,
            "- **{}** ({} A, {} B)",
            cell(&p.pass),
            crate::output::count(p.runs_a, "run"),
            crate::output::count(p.runs_b, "run")
        );
        for l in &p.lines {
            let _ = writeln!(t, "  - {}", cell(l));
        }
    }
    if let Some(g) = &h.gate {
        let _ = writeln!(t, "- {}", cell(g));
    }
}

/// One pass compared: its settings, nix's time on the path, conditions,
/// counters, lists and plans, as GitHub tables.
fn pass_markdown(t: &mut String, c: &PassComparison, top: usize) {
    let _ = writeln!(t, "### {}\n", cell(&c.pass_a));
    if let Some(s) = tables::pg_settings(c) {
        let _ = writeln!(t, "{}\n", cell(&s));
    }
    if let Some(v) = &c.nix_on_path {
        let _ = writeln!(
            t,
            "nix's time on the path (primary, `{}`): {}\n",
            evalbench_analyze::comparison::NIX_STEP,
            cell(&crate::words::verdict(v))
        );
    }
    for n in crate::condition_notes::notes(&c.conditions) {
        let _ = writeln!(t, "> {}\n", cell(&n));
    }
    let pt = tables::pass(c, top);
    if let Some(counters) = &pt.counters {
        md_table(t, counters, true);
    }
    for (_, list) in &pt.lists {
        md_table(t, list, true);
    }
    super::attributes::markdown(t, c, top);
    super::plans::markdown(t, c, top);
}
