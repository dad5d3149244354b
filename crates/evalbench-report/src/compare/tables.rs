//! `compare`'s tables, computed once: which rows, in which order, cut where,
//! with which columns and alignment. Text and Markdown (`compare::text`)
//! and the page (`compare::html`) only give them a syntax, as hyperfine's
//! `export/markup.rs` does for its formats; so what compare shows is changed
//! here, once.

use crate::figures::grouped;
use crate::figures::pct;
use evalbench_analyze::comparison::{Comparison, OnlyRow, PassComparison, Row};
use evalbench_analyze::reason::Reason;
use evalbench_analyze::verdict::{Kind, Verdict};
use evalbench_bundle::layout::PassKind;

use crate::compare::text::settings;

pub use crate::output::Align;

/// One cell.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub text: String,
    /// A name from a bundle (span, statement, counter), shown as code.
    pub code: bool,
    /// The verdict this cell states: the page colours it and gives its
    /// sentence as the hover title.
    pub verdict: Option<(Kind, String)>,
    /// Where the cell links to on the page (a pass's section).
    pub anchor: Option<String>,
}

impl Cell {
    fn plain(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), ..Cell::default() }
    }
    fn code(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), code: true, ..Cell::default() }
    }
    /// The verdict's word (`Reason::label`: "noise", "pass drift", ...), its sentence as the title.
    fn verdict(kind: Kind, reason: Reason, sentence: &str) -> Cell {
        Cell { text: reason.label(kind).to_string(), verdict: Some((kind, sentence.to_string())), ..Cell::default() }
    }
}

/// One row, and the same in words for a terminal.
#[derive(Debug, Clone)]
pub struct TableRow {
    pub cells: Vec<Cell>,
    pub sentence: String,
}

/// Rows of one kind: the verdicts, or what only one side has.
#[derive(Debug, Clone)]
pub struct Group {
    /// None for verdicts; "A" or "B" for rows only that side has.
    pub only: Option<&'static str>,
    pub rows: Vec<TableRow>,
    /// Rows of this group left out past `top` (all are in `--json`).
    pub more: usize,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub title: String,
    pub columns: Vec<(&'static str, Align)>,
    pub groups: Vec<Group>,
}

impl Table {
    pub fn rows(&self) -> impl Iterator<Item = &TableRow> {
        self.groups.iter().flat_map(|g| g.rows.iter())
    }
    pub fn is_empty(&self) -> bool {
        self.groups.iter().all(|g| g.rows.is_empty())
    }
}

fn cut<T>(items: &[T], top: usize) -> (&[T], usize) {
    let n = items.len().min(top);
    (&items[..n], items.len() - n)
}

/// The provenance fields in which A and B differ (none: no table).
pub fn differs(c: &Comparison) -> Option<Table> {
    if c.differs.is_empty() {
        return None;
    }
    let rows = c
        .differs
        .iter()
        .map(|d| TableRow {
            cells: vec![Cell::plain(d.group), Cell::plain(&d.field), Cell::plain(&d.a), Cell::plain(&d.b)],
            sentence: format!("{} {}: A {}; B {}", d.group, d.field, d.a, d.b),
        })
        .collect();
    Some(Table {
        title: format!("A and B differ in {}", c.differing_groups().join(", ")),
        columns: vec![("group", Align::Left), ("field", Align::Left), ("A", Align::Left), ("B", Align::Left)],
        groups: vec![Group { only: None, rows, more: 0 }],
    })
}

/// The passes' evaluated seconds, then the passes only one side has.
pub fn passes(c: &Comparison) -> Table {
    let s3 = |x: f64| format!("{x:.3}");
    let verdicts = c
        .passes
        .iter()
        .map(|p| {
            let w = &p.evaluated;
            let sentence = crate::words::verdict(w);
            let name = format!("{}{}", p.pass_a, if p.kind == PassKind::Instrumented { " (instrumented)" } else { "" });
            TableRow {
                cells: vec![
                    Cell { anchor: Some(p.pass_a.clone()), ..Cell::plain(name) },
                    Cell::plain(format!("{} / {}", p.runs_a, p.runs_b)),
                    Cell::plain(s3(w.a.median)),
                    Cell::plain(s3(w.b.median)),
                    Cell::plain(pct(w.change_pct, w.a.median, w.b.median)),
                    Cell::verdict(w.kind, w.reason, &sentence),
                ],
                sentence,
            }
        })
        .collect();
    let only = |side: &'static str, list: &[evalbench_analyze::comparison::OnlyPass]| Group {
        only: Some(side),
        rows: list
            .iter()
            .map(|p| {
                let (runs, a, b) = if side == "A" {
                    (format!("{} / –", p.runs), s3(p.evaluated_s), "–".to_string())
                } else {
                    (format!("– / {}", p.runs), "–".to_string(), s3(p.evaluated_s))
                };
                TableRow {
                    cells: vec![
                        Cell::plain(&p.pass),
                        Cell::plain(runs),
                        Cell::plain(a),
                        Cell::plain(b),
                        Cell::plain("–"),
                        Cell::plain(format!("only in {side}")),
                    ],
                    sentence: format!(
                        "{} ({}, evaluated {:.3} s)",
                        p.pass,
                        crate::output::count(p.runs, "run"),
                        p.evaluated_s
                    ),
                }
            })
            .collect(),
        more: 0,
    };
    Table {
        title: "Passes".into(),
        columns: vec![
            ("pass", Align::Left),
            ("runs A / B", Align::Right),
            ("evaluated A (s)", Align::Right),
            ("evaluated B (s)", Align::Right),
            ("change A → B", Align::Right),
            ("verdict", Align::Left),
        ],
        groups: vec![Group { only: None, rows: verdicts, more: 0 }, only("A", &c.only_a), only("B", &c.only_b)],
    }
}

/// A pass's primary measures, in seconds: the evaluated seconds and nix's
/// time on the path.
pub fn primary(c: &PassComparison) -> Table {
    // Seconds to the microsecond: a warm pass's nix time is a fraction of a millisecond.
    let in_s = |what: &str, v: &Verdict| {
        let mut r = verdict_row(what, v);
        r.cells[1].text = format!("{:.6}", v.a.median);
        r.cells[2].text = format!("{:.6}", v.b.median);
        r
    };
    let mut rows = vec![in_s("evaluated", &c.evaluated)];
    if let Some(v) = &c.nix_on_path {
        rows.push(in_s(&format!("nix's time on the path ({})", evalbench_analyze::comparison::NIX_STEP), v));
    }
    Table {
        title: "primary measures (s)".into(),
        columns: list_columns(),
        groups: vec![Group { only: None, rows, more: 0 }],
    }
}

/// What the verdict word `label` means, said once under a table; the
/// negligible floor as the comparison applied it.
pub fn legend(label: &str, c: &Comparison) -> Option<String> {
    Some(match label {
        "faster" | "slower" => "faster, slower: outside noise: Mann-Whitney p under 0.05 after Holm over the row's \
            family, and the 95% interval of the ratio of medians excludes 1"
            .into(),
        "noise" => "noise: inside run-to-run noise, by the same tests".into(),
        "drift" => "drift: one side's own runs drifted while they were made (their medians in blocks in run order lie \
            as far apart as the change)"
            .into(),
        "pass drift" => "pass drift: A and B come from two sessions, and the change is inside the largest drift \
            measured in the pass (its drift note)"
            .into(),
        "sessions" => "sessions: A and B come from two sessions, and the change is inside what two sessions of one \
            flake differ by (--between-sessions; for a row, a move under a hundredth of the evaluated seconds)"
            .into(),
        // Display of f64 writes 1 for 1.0 and 0.5 for 0.5.
        "negligible" => format!(
            "negligible: real or not, smaller than the floor ({}% of A's median, and {} µs for a span or statement)",
            c.min_change_pct, c.min_abs_us
        ),
        "withheld" => {
            "withheld: not judged, the machine was busy beside a side's runs (the pass's machine note)".into()
        }
        "too few runs" => "too few runs: a side has one run, so no noise estimate and no verdict".into(),
        "more" | "less" | "same" => "more, less, same: exact counts, compared as they are (no test is needed)".into(),
        _ => return None,
    })
}

/// The legend for the words `words`, each line once, in order.
pub fn legend_lines<'a>(words: impl IntoIterator<Item = &'a str>, c: &Comparison) -> Vec<String> {
    words.into_iter().filter_map(|w| legend(w, c)).collect::<std::collections::BTreeSet<_>>().into_iter().collect()
}

/// Every verdict word the comparison uses, for a legend under its tables.
pub fn words(c: &Comparison) -> Vec<&'static str> {
    let mut w = std::collections::BTreeSet::new();
    for p in &c.passes {
        let rows = p.spans.iter().chain(&p.statements).chain(&p.path).map(|r| &r.verdict);
        for v in rows.chain([&p.evaluated]).chain(&p.nix_on_path) {
            w.insert(v.reason.label(v.kind));
        }
        for v in &p.counters {
            w.insert(v.reason.label(v.kind));
        }
    }
    w.into_iter().collect()
}

/// What a pass shows below its headline.
#[derive(Debug, Clone)]
pub struct PassTables {
    pub counters: Option<Table>,
    /// Counters the same on both sides (text folds them into this count).
    pub same_counters: usize,
    /// Spans, statements, then the critical path's steps; a list with no row at all is left out.
    pub lists: Vec<(&'static str, Table)>,
}

/// nix's counters, its spans and its statements: at most `top` rows a group.
pub fn pass(c: &PassComparison, top: usize) -> PassTables {
    let counters = (!c.counters.is_empty()).then(|| {
        let n = |x: &serde_json::Value| x.as_f64().map(grouped).unwrap_or_default();
        let (shown, more) = cut(&c.counters, top);
        let rows = shown
            .iter()
            .map(|v| {
                let sentence = crate::words::counter(v);
                TableRow {
                    cells: vec![
                        Cell::code(format!("{}{}", v.name, if v.exact { "" } else { " *" })),
                        Cell::plain(n(&v.a)),
                        Cell::plain(n(&v.b)),
                        Cell::plain(v.change_pct.map(|c| format!("{c:+.1}%")).unwrap_or_else(|| "–".into())),
                        Cell::verdict(v.kind, v.reason, &sentence),
                    ],
                    sentence,
                }
            })
            .collect();
        Table {
            title: "nix's counters (exact counts unless marked *; nix-stats.*.json)".into(),
            // Noisy counters are few and said as such in their rows.
            columns: vec![
                ("counter", Align::Left),
                ("A", Align::Right),
                ("B", Align::Right),
                ("change", Align::Right),
                ("verdict", Align::Left),
            ],
            groups: vec![Group { only: None, rows, more }],
        }
    });
    let mut lists = Vec::new();
    let off_path_is_zero = Vec::new();
    // Every list is in the one exploratory family, whose word on power the
    // headline says once (`words::headline_notes`), not under each list.
    for (key, title, rows, only_a, only_b) in [
        ("spans", "spans (total ms per run)", &c.spans, &c.spans_only_a, &c.spans_only_b),
        (
            "statements",
            "statements (pg_stat_statements, total ms per run)",
            &c.statements,
            &c.statements_only_a,
            &c.statements_only_b,
        ),
        (
            "path",
            "critical path (ms on the path per run: what the evaluated time waited on)",
            &c.path,
            &off_path_is_zero,
            &off_path_is_zero,
        ),
    ] {
        let t = list(title, rows, only_a, only_b, top);
        if !t.is_empty() {
            lists.push((key, t));
        }
    }
    PassTables { counters, same_counters: c.counters.iter().filter(|v| v.kind == Kind::Same).count(), lists }
}

fn verdict_row(what: &str, v: &Verdict) -> TableRow {
    let sentence = crate::words::verdict(v);
    TableRow {
        cells: vec![
            Cell::code(what),
            Cell::plain(format!("{:.3}", v.a.median)),
            Cell::plain(format!("{:.3}", v.b.median)),
            Cell::plain(pct(v.change_pct, v.a.median, v.b.median)),
            Cell::verdict(v.kind, v.reason, &sentence),
            Cell::plain(v.p_adjusted.map(|p| format!("{p:.4}")).unwrap_or_else(|| "–".into())),
        ],
        sentence,
    }
}

fn only_row(r: &OnlyRow, side: &'static str) -> TableRow {
    let total = format!("{:.3}", r.total_ms);
    let (a, b) = if side == "A" { (total, "–".to_string()) } else { ("–".to_string(), total) };
    TableRow {
        cells: vec![
            Cell::code(&r.what),
            Cell::plain(a),
            Cell::plain(b),
            Cell::plain("–"),
            Cell::plain(format!("only in {side}")),
            Cell::plain("–"),
        ],
        sentence: format!("{:.3} ms per run", r.total_ms),
    }
}

fn list(title: &str, rows: &[Row], only_a: &[OnlyRow], only_b: &[OnlyRow], top: usize) -> Table {
    let (shown, more) = cut(rows, top);
    let mut groups =
        vec![Group { only: None, rows: shown.iter().map(|r| verdict_row(&r.what, &r.verdict)).collect(), more }];
    for (side, only) in [("A", only_a), ("B", only_b)] {
        let (shown, more) = cut(only, top);
        groups.push(Group { only: Some(side), rows: shown.iter().map(|r| only_row(r, side)).collect(), more });
    }
    Table { title: title.to_string(), columns: list_columns(), groups }
}

fn list_columns() -> Vec<(&'static str, Align)> {
    vec![
        ("what", Align::Left),
        ("A (median)", Align::Right),
        ("B (median)", Align::Right),
        ("change A → B", Align::Right),
        ("verdict", Align::Left),
        ("p (Holm)", Align::Right),
    ]
}

/// The PostgreSQL settings line of a pass, when either side was given any.
pub fn pg_settings(c: &PassComparison) -> Option<String> {
    (!c.pg_settings_a.is_empty() || !c.pg_settings_b.is_empty())
        .then(|| format!("PostgreSQL settings: A {}; B {}", settings(&c.pg_settings_a), settings(&c.pg_settings_b)))
}
