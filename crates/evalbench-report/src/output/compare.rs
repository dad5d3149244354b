//! `evalbench compare`: text and Markdown.

use std::fmt::Write;

use evalbench_analyze::comparison::{Comparison, OnlyPass, OnlyRow, PassComparison, Row};
use evalbench_analyze::counters::grouped;
use evalbench_analyze::verdict::{pct, Kind};
use evalbench_bundle::layout::PassKind;

use super::markdown::table;

fn instrumented(c: &PassComparison) -> bool {
    c.kind == PassKind::Instrumented
}

/// What differs between A and B, in one sentence or a line per field.
/// Then, when the sides say, whether they were measured in one session.
fn differs_text(t: &mut String, c: &Comparison) {
    if c.differs.is_empty() {
        let _ = writeln!(t, "A and B measured the same workload, system, evalbench, machine, plan and settings.");
    } else {
        let _ = writeln!(t, "A and B differ in {}:", c.differing_groups().join(", "));
        for d in &c.differs {
            let _ = writeln!(t, "  {} {}: A {}; B {}", d.group, d.field, d.a, d.b);
        }
    }
    if let Some(n) = c.session_note() {
        let _ = writeln!(t, "{n}");
    }
}

fn only_pass_text(p: &OnlyPass) -> String {
    format!("{} ({}, evaluated {:.3} s)", p.pass, super::count(p.runs, "run"), p.evaluated_s)
}

fn only_text(t: &mut String, what: &str, side: &str, rows: &[OnlyRow], top: usize) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(t, "  {what} only in {side} ({}):", rows.len());
    for r in rows.iter().take(top) {
        let _ = writeln!(t, "    {:<60} {:.3} ms per run", r.what.chars().take(60).collect::<String>(), r.total_ms);
    }
    if rows.len() > top {
        let _ = writeln!(t, "    ... {} more in --json", rows.len() - top);
    }
}

/// The text a terminal shows: at most `top` rows per list.
pub fn text(a: &str, b: &str, c: &Comparison, top: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "A: {a}\nB: {b}");
    differs_text(&mut t, c);
    for (side, passes) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !passes.is_empty() {
            let _ = writeln!(t, "passes only in {side}: {}", passes.iter().map(only_pass_text).collect::<Vec<_>>().join(", "));
        }
    }
    let _ = writeln!(t);
    for c in &c.passes {
        let label = if instrumented(c) { "  (instrumented: distorted timings)" } else { "" };
        let _ = writeln!(t, "{} (A: {}) → {} (B: {}){label}", c.pass_a, super::count(c.runs_a, "run"), c.pass_b, super::count(c.runs_b, "run"));
        if !c.pg_settings_a.is_empty() || !c.pg_settings_b.is_empty() {
            let _ = writeln!(t, "  PostgreSQL settings: A {}; B {}", settings(&c.pg_settings_a), settings(&c.pg_settings_b));
        }
        let _ = writeln!(t, "  evaluated: {}", c.wall.text);
        if !c.counters.is_empty() {
            let same = c.counters.iter().filter(|v| v.kind == Kind::Same).count();
            let _ = writeln!(t, "  nix's counters (exact counts unless said; nix-stats.*.json):");
            for v in c.counters.iter().filter(|v| v.kind != Kind::Same).take(top) {
                let _ = writeln!(t, "    {}", v.text);
            }
            if same > 0 {
                let _ = writeln!(t, "    {same} counters the same on both sides");
            }
        }
        for (k, (title, rows, only_a, only_b)) in [
            ("spans (total ms per run)", &c.spans, &c.spans_only_a, &c.spans_only_b),
            ("statements (pg_stat_statements, total ms per run)", &c.statements, &c.statements_only_a, &c.statements_only_b),
        ]
        .into_iter()
        .enumerate()
        {
            if !rows.is_empty() {
                let _ = writeln!(t, "  {title}:");
                if let Some(p) = &[&c.families.spans, &c.families.statements][k].power {
                    let _ = writeln!(t, "    note: {p}");
                }
                for r in rows.iter().take(top) {
                    let _ = writeln!(t, "    {:<60} {}", r.what.chars().take(60).collect::<String>(), r.verdict.text);
                }
                if rows.len() > top {
                    let _ = writeln!(t, "    ... {} more in --json", rows.len() - top);
                }
            }
            let what = if k == 0 { "spans" } else { "statements" };
            only_text(&mut t, what, "A", only_a, top);
            only_text(&mut t, what, "B", only_b, top);
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

fn verdict_rows(rows: &[Row], top: usize) -> Vec<Vec<String>> {
    rows.iter()
        .take(top)
        .map(|r| {
            let v = &r.verdict;
            vec![
                r.what.clone(),
                format!("{:.3}", v.a.median),
                format!("{:.3}", v.b.median),
                pct(v.change_pct, v.a.median, v.b.median),
                v.kind.as_str().to_string(),
                v.p_adjusted.map(|p| format!("{p:.4}")).unwrap_or_else(|| "–".into()),
            ]
        })
        .collect()
}

/// GitHub-flavoured Markdown: what differs, a table of the passes'
/// evaluated seconds, then per pass nix's counters, its spans and its statements.
pub fn markdown(a: &str, b: &str, cmp: &Comparison, top: usize) -> String {
    let mut t = String::new();
    let cell = super::markdown::cell;
    let _ = writeln!(t, "## evalbench compare: A → B\n\nA: {}<br>B: {}\n", cell(a), cell(b));
    if cmp.differs.is_empty() {
        let _ = writeln!(t, "A and B measured the same workload, system, evalbench, machine, plan and settings.\n");
    } else {
        let _ = writeln!(t, "A and B differ:\n");
        let rows: Vec<Vec<String>> = cmp.differs.iter().map(|d| vec![d.group.to_string(), d.field.clone(), d.a.clone(), d.b.clone()]).collect();
        table(&mut t, &["group", "field", "A", "B"], "llll", &rows);
    }
    if let Some(n) = cmp.session_note() {
        let _ = writeln!(t, "{}\n", super::markdown::cell(&n));
    }
    let out = &cmp.passes;
    let rows: Vec<Vec<String>> =
        out.iter()
            .map(|c| {
                vec![
                    format!("{}{}", c.pass_a, if instrumented(c) { " (instrumented)" } else { "" }),
                    format!("{} / {}", c.runs_a, c.runs_b),
                    format!("{:.3}", c.wall.a.median),
                    format!("{:.3}", c.wall.b.median),
                    pct(c.wall.change_pct, c.wall.a.median, c.wall.b.median),
                    c.wall.kind.as_str().to_string(),
                ]
            })
            .chain(cmp.only_a.iter().map(|p| {
                vec![p.pass.clone(), format!("{} / –", p.runs), format!("{:.3}", p.evaluated_s), "–".into(), "–".into(), "only in A".into()]
            }))
            .chain(cmp.only_b.iter().map(|p| {
                vec![p.pass.clone(), format!("– / {}", p.runs), "–".into(), format!("{:.3}", p.evaluated_s), "–".into(), "only in B".into()]
            }))
            .collect();
    table(&mut t, &["pass", "runs A / B", "evaluated A (s)", "evaluated B (s)", "change A → B", "verdict"], "lnnnnl", &rows);
    for p in cmp.headline_notes() {
        let _ = writeln!(t, "> {}\n", cell(p));
    }
    for c in out {
        let _ = writeln!(t, "### {}\n", super::markdown::cell(&c.pass_a));
        if !c.pg_settings_a.is_empty() || !c.pg_settings_b.is_empty() {
            let _ = writeln!(
                t,
                "PostgreSQL settings: A {}; B {}\n",
                super::markdown::cell(&settings(&c.pg_settings_a)),
                super::markdown::cell(&settings(&c.pg_settings_b))
            );
        }
        if !c.counters.is_empty() {
            let _ = writeln!(t, "nix's counters (exact unless marked):\n");
            let rows: Vec<Vec<String>> = c
                .counters
                .iter()
                .take(top)
                .map(|v| {
                    let n = |x: &serde_json::Value| x.as_f64().map(grouped).unwrap_or_default();
                    vec![
                        format!("{}{}", v.name, if v.exact { "" } else { " *" }),
                        n(&v.a),
                        n(&v.b),
                        v.change_pct.map(|c| format!("{c:+.1}%")).unwrap_or_else(|| "–".into()),
                        v.kind.as_str().to_string(),
                    ]
                })
                .collect();
            table(&mut t, &["counter", "A", "B", "change", "verdict"], "lnnnl", &rows);
        }
        for (k, (title, rows)) in [("Spans (total ms per run)", &c.spans), ("Statements (total ms per run)", &c.statements)].into_iter().enumerate() {
            let none_only = if k == 0 {
                c.spans_only_a.is_empty() && c.spans_only_b.is_empty()
            } else {
                c.statements_only_a.is_empty() && c.statements_only_b.is_empty()
            };
            if rows.is_empty() && none_only {
                continue;
            }
            let _ = writeln!(t, "{title}:\n");
            if let Some(p) = &[&c.families.spans, &c.families.statements][k].power {
                let _ = writeln!(t, "> {}\n", super::markdown::cell(p));
            }
            let mut shown = verdict_rows(rows, top);
            let what = if k == 0 { (&c.spans_only_a, &c.spans_only_b) } else { (&c.statements_only_a, &c.statements_only_b) };
            for (side, only) in [("only in A", what.0), ("only in B", what.1)] {
                for r in only.iter().take(top) {
                    let (x, y) =
                        if side == "only in A" { (format!("{:.3}", r.total_ms), "–".into()) } else { ("–".into(), format!("{:.3}", r.total_ms)) };
                    shown.push(vec![r.what.clone(), x, y, "–".into(), side.into(), "–".into()]);
                }
            }
            table(&mut t, &["what", "A (median)", "B (median)", "change A → B", "verdict", "p (Holm)"], "lnnnln", &shown);
            if rows.len() > top {
                let _ = writeln!(t, "{} more in `--json`.\n", rows.len() - top);
            }
        }
        super::plans::markdown(&mut t, c, top);
    }
    t
}
