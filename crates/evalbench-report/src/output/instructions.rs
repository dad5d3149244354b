//! nix's instructions in compare's text and Markdown: per counted pass both
//! sides have, the verdict, the instructions per phase, and the functions
//! whose counts moved most (the exact, C++-level diff beside nix's sampled
//! profile and our traced one). The JSON carries the same figures
//! (`compare_json`).

use std::fmt::Write;

use evalbench_analyze::comparison::Comparison;
use evalbench_analyze::instructions::InstructionsComparison;

use super::markdown::cell;
use crate::figures::grouped;

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

/// Each phase's A, B and change.
fn phase_rows(c: &InstructionsComparison) -> Vec<[String; 4]> {
    c.phases
        .iter()
        .map(|p| [p.phase.as_str().to_string(), grouped(p.a.round()), grouped(p.b.round()), format!("{:+.4}%", (p.b / p.a - 1.0) * 100.0)])
        .collect()
}

/// The moved functions: name, where from, A, B, B - A.
fn moved_rows(c: &InstructionsComparison, width: usize) -> Vec<[String; 5]> {
    c.moved
        .iter()
        .map(|m| [short(&m.function, width), m.from.as_str().to_string(), grouped(m.a.round()), grouped(m.b.round()), signed((m.b - m.a).round())])
        .collect()
}

/// Between two nixes, what the moved functions are limited to.
fn both(c: &InstructionsComparison) -> &'static str {
    if c.moved_named_on_both {
        "; A and B ran two nixes, so only functions both name, whose symbols both builds export"
    } else {
        ""
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
        let _ = writeln!(t, "  {:<10} {:>16} {:>16} {:>10}", "phase", "A", "B", "change");
        for r in phase_rows(c) {
            let _ = writeln!(t, "  {:<10} {:>16} {:>16} {:>10}", r[0], r[1], r[2], r[3]);
        }
        if !c.moved.is_empty() {
            let _ = writeln!(t, "  functions whose instructions moved most (cachegrind's self counts{}):", both(c));
            let _ = writeln!(t, "  {:<64} {:<16} {:>14} {:>14} {:>14}", "function", "from", "A", "B", "B - A");
            for r in moved_rows(c, 64) {
                let _ = writeln!(t, "  {:<64} {:<16} {:>14} {:>14} {:>14}", r[0], r[1], r[2], r[3], r[4]);
            }
        }
    }
}

/// compare's page (`--html`): the same sections, every name escaped (a
/// function's name comes from the bundle).
pub fn html(body: &mut String, cmp: &Comparison) {
    use crate::html::escape as esc;
    for c in &cmp.instructions {
        let _ = write!(body, "<h2>{}</h2><p>{}</p>", esc(&format!("{}: nix's instructions", c.pass)), esc(&crate::words::instructions(c)));
        body.push_str("<table><tr><th>phase</th><th>A</th><th>B</th><th>change</th></tr>");
        for r in phase_rows(c) {
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3])
            );
        }
        body.push_str("</table>");
        if !c.moved.is_empty() {
            let _ = write!(body, "<p>Functions whose instructions moved most (cachegrind's self counts{}):</p>", esc(both(c)));
            body.push_str("<table><tr><th>function</th><th>from</th><th>A</th><th>B</th><th>B - A</th></tr>");
            for m in &c.moved {
                let _ = write!(
                    body,
                    "<tr><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    esc(&m.function),
                    esc(m.from.as_str()),
                    esc(&grouped(m.a.round())),
                    esc(&grouped(m.b.round())),
                    esc(&signed((m.b - m.a).round()))
                );
            }
            body.push_str("</table>");
        }
    }
}

pub fn markdown(t: &mut String, cmp: &Comparison) {
    for c in &cmp.instructions {
        let _ = writeln!(t, "### {}: nix's instructions\n", cell(&c.pass));
        let _ = writeln!(t, "{}\n", cell(&crate::words::instructions(c)));
        let _ = writeln!(t, "| phase | A | B | change |\n|---|---:|---:|---:|");
        for r in phase_rows(c) {
            let _ = writeln!(t, "| {} | {} | {} | {} |", cell(&r[0]), r[1], r[2], cell(&r[3]));
        }
        let _ = writeln!(t);
        if !c.moved.is_empty() {
            let _ = writeln!(t, "Functions whose instructions moved most{}:\n", both(c));
            let _ = writeln!(t, "| function (moved most) | from | A | B | B - A |\n|---|---|---:|---:|---:|");
            for r in moved_rows(c, 120) {
                let _ = writeln!(t, "| {} | {} | {} | {} | {} |", cell(&r[0]), cell(&r[1]), r[2], r[3], r[4]);
            }
            let _ = writeln!(t);
        }
    }
}
