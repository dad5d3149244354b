//! nix's instructions in compare's text, Markdown and page: per counted
//! pass both sides have, the verdict, the instructions per phase, and the
//! functions whose counts moved most (the exact, C++-level diff beside nix's
//! sampled profile and our traced one), each table made once in compare's
//! table model and given its syntax by the writer of each format. The JSON
//! carries the same figures (`compare_json`).

use std::fmt::Write;

use evalbench_analyze::comparison::Comparison;
use evalbench_analyze::instructions::InstructionsComparison;

use crate::compare::tables::{Align, Cell, Group, Table, TableRow};
use crate::figures::grouped;
use crate::output::markdown::cell;

/// A function's name as a table shows it: C++ signatures run to hundreds of
/// characters, so the text keeps the first `n` (the JSON keeps them whole).
pub(crate) fn short(name: &str, n: usize) -> String {
    if name.chars().count() <= n {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(n - 1).collect::<String>())
    }
}

fn signed(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", grouped(x))
    } else {
        format!("-{}", grouped(-x))
    }
}

/// The phases' instructions, A against B, as compare's one table model
/// (`compare::tables::Table`): text, Markdown and the page give it a syntax.
fn phases(c: &InstructionsComparison) -> Table {
    let rows = c
        .phases
        .iter()
        .map(|p| {
            let cells = [
                p.phase.as_str().to_string(),
                grouped(p.a.round()),
                grouped(p.b.round()),
                format!("{:+.4}%", (p.b / p.a - 1.0) * 100.0),
            ];
            row(cells, false)
        })
        .collect();
    one_group(
        "instructions per phase",
        vec![("phase", Align::Left), ("A", Align::Right), ("B", Align::Right), ("change", Align::Right)],
        rows,
    )
}

/// The functions whose instructions moved most: name (whole; the text cuts
/// it), where from, A, B, B - A.
fn moved(c: &InstructionsComparison) -> Table {
    let rows = c
        .moved
        .iter()
        .map(|m| {
            let cells = [
                m.function.clone(),
                m.from.as_str().to_string(),
                grouped(m.a.round()),
                grouped(m.b.round()),
                signed((m.b - m.a).round()),
            ];
            row(cells, true)
        })
        .collect();
    let columns = vec![
        ("function (moved most)", Align::Left),
        ("from", Align::Left),
        ("A", Align::Right),
        ("B", Align::Right),
        ("B - A", Align::Right),
    ];
    one_group(&format!("functions whose instructions moved most (cachegrind's self counts{})", both(c)), columns, rows)
}

/// A row of plain cells; with `code`, its first is a name from the bundle.
fn row<const N: usize>(texts: [String; N], code: bool) -> TableRow {
    let mut cells: Vec<Cell> = texts.into_iter().map(|text| Cell { text, ..Cell::default() }).collect();
    cells[0].code = code;
    TableRow { sentence: String::new(), cells }
}

fn one_group(title: &str, columns: Vec<(&'static str, Align)>, rows: Vec<TableRow>) -> Table {
    Table { title: title.to_string(), columns, groups: vec![Group { only: None, rows, more: 0 }] }
}

/// Between two nixes, what the moved functions are limited to.
fn both(c: &InstructionsComparison) -> &'static str {
    if c.moved_named_on_both {
        "; A and B ran two nixes, so only functions both name, whose symbols both builds export"
    } else {
        ""
    }
}

/// A table for a terminal: each column as wide as its widest cell, a
/// function's name cut to [`NAME`] characters.
fn text_table(t: &mut String, table: &Table) {
    const NAME: usize = 64;
    let cells: Vec<Vec<String>> = std::iter::once(table.columns.iter().map(|c| c.0.to_string()).collect())
        .chain(
            table
                .rows()
                .map(|r| r.cells.iter().map(|c| if c.code { short(&c.text, NAME) } else { c.text.clone() }).collect()),
        )
        .collect();
    let widths: Vec<usize> =
        (0..table.columns.len()).map(|i| cells.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    for r in &cells {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .zip(&table.columns)
            .map(|((c, w), (_, a))| if *a == Align::Right { format!("{c:>w$}") } else { format!("{c:<w$}") })
            .collect();
        let _ = writeln!(t, "  {}", line.join("  ").trim_end());
    }
}

pub fn text(t: &mut String, cmp: &Comparison) {
    for c in &cmp.instructions {
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "== {}: nix's instructions (A: {} run(s), B: {}; counted under Valgrind, whose times are not compared)",
            c.pass, c.runs_a, c.runs_b
        );
        let _ = writeln!(t, "  {}", crate::words::instructions(c));
        text_table(t, &phases(c));
        if !c.moved.is_empty() {
            let m = moved(c);
            let _ = writeln!(t, "  {}:", m.title);
            text_table(t, &m);
        }
    }
}

/// compare's page (`--html`): the same sections, through the page's table
/// writer (every name escaped: a function's name comes from the bundle).
pub fn html(body: &mut String, cmp: &Comparison, table: impl Fn(&mut String, &Table, bool)) {
    use crate::html::escape as esc;
    for c in &cmp.instructions {
        let _ = write!(
            body,
            "<h2>{}</h2><p>{}</p>",
            esc(&format!("{}: nix's instructions", c.pass)),
            esc(&crate::words::instructions(c))
        );
        table(body, &phases(c), false);
        if !c.moved.is_empty() {
            table(body, &moved(c), true);
        }
    }
}

/// Markdown, through compare's table writer (`markdown::table`, every cell escaped).
pub fn markdown(t: &mut String, cmp: &Comparison, table: impl Fn(&mut String, &Table, bool)) {
    for c in &cmp.instructions {
        let _ = writeln!(t, "### {}: nix's instructions\n", cell(&c.pass));
        let _ = writeln!(t, "{}\n", cell(&crate::words::instructions(c)));
        table(t, &phases(c), false);
        if !c.moved.is_empty() {
            table(t, &moved(c), true);
        }
    }
}
