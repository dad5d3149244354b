//! `evalbench compare`: text and Markdown.

use std::fmt::Write;

use evalbench_analyze::comparison::{PassComparison, Row};
use evalbench_analyze::counters::grouped;
use evalbench_analyze::verdict::{pct, Kind};
use evalbench_bundle::layout;

use super::markdown::table;

fn instrumented(c: &PassComparison) -> bool {
    layout::base_name(&c.pass_a).ends_with("-instrumented")
}

/// The text a terminal shows: at most `top` rows per list.
pub fn text(out: &[PassComparison], top: usize) -> String {
    let mut t = String::new();
    for c in out {
        let label = if instrumented(c) { "  (instrumented: distorted timings)" } else { "" };
        let _ = writeln!(t, "{} ({} runs) vs {} ({} runs){label}", c.pass_a, c.runs_a, c.pass_b, c.runs_b);
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
        for (k, (title, rows)) in
            [("spans (total ms per run)", &c.spans), ("statements (pg_stat_statements, total ms per run)", &c.statements)].into_iter().enumerate()
        {
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(t, "  {title}:");
            if let Some(p) = &c.families[k + 1].power {
                let _ = writeln!(t, "    note: {p}");
            }
            for r in rows.iter().take(top) {
                let _ = writeln!(t, "    {:<60} {}", r.what.chars().take(60).collect::<String>(), r.verdict.text);
            }
            if rows.len() > top {
                let _ = writeln!(t, "    ... {} more in --json", rows.len() - top);
            }
        }
        super::plans::text(&mut t, c, top);
    }
    if let Some(p) = out.first().and_then(|c| c.families[0].power.as_ref()) {
        let _ = writeln!(t, "note: {p}");
    }
    t
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

/// GitHub-flavoured Markdown: a table of the passes' evaluated seconds, then
/// per pass nix's counters, its spans and its statements.
pub fn markdown(a: &str, b: &str, out: &[PassComparison], top: usize) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "## evalbench compare\n\n{} against {}\n", super::markdown::cell(b), super::markdown::cell(a));
    let rows: Vec<Vec<String>> = out
        .iter()
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
        .collect();
    table(&mut t, &["pass", "runs A / B", "evaluated A (s)", "evaluated B (s)", "change", "verdict"], "lnnnnl", &rows);
    if let Some(p) = out.first().and_then(|c| c.families[0].power.as_ref()) {
        let _ = writeln!(t, "> {}\n", super::markdown::cell(p));
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
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(t, "{title}:\n");
            if let Some(p) = &c.families[k + 1].power {
                let _ = writeln!(t, "> {}\n", super::markdown::cell(p));
            }
            table(&mut t, &["what", "A (median)", "B (median)", "change", "verdict", "p (Holm)"], "lnnnln", &verdict_rows(rows, top));
            if rows.len() > top {
                let _ = writeln!(t, "{} more in `--json`.\n", rows.len() - top);
            }
        }
        super::plans::markdown(&mut t, c, top);
    }
    t
}
