//! The passes side by side, and each pass's header.

use std::fmt::Write;

use evalbench_analyze::view::page::SideBySide;
use evalbench_analyze::view::PassView;
use evalbench_bundle::layout;
use serde_json::Value;

use super::super::esc::{esc, file_safe};
use super::super::svg::ms;
use super::super::Page;
use super::{mode, offset_line};

/// The passes side by side, each by its run nearest the median (`runs[i]`:
/// how many runs, and the median of their evaluated seconds; a pass made
/// once stands for itself). The evaluated column is the pass's median, the
/// figure summary.txt gives; the other columns are the shown run's, and
/// the row says which run that is.
pub fn overview(
    page: &mut Page,
    passes: &[&PassView],
    runs: &[(usize, f64)],
    (side_by_side, more): (&[SideBySide], usize),
) {
    page.h2("passes", "All passes");
    page.body.push_str(
        "<table><tr><th>pass</th><th>mode</th><th>evaluated</th><th>traced wall</th><th>worker \
            clock</th><th>spans</th><th>--pg-setting</th><th>evaluation_metric</th></tr>",
    );
    for (p, &(n, median)) in passes.iter().zip(runs) {
        let own = p.run().and_then(|r| r.evaluated_s);
        let evaluated = match own {
            Some(s) if n > 1 => format!("{median:.3} s median ({s:.3} s this run)"),
            Some(s) => format!("{s:.3} s"),
            None => "unknown".into(),
        };
        let wall = p.extent.map(|(a, b)| format!("{:.3} s", (b - a) / 1e6)).unwrap_or_else(|| "no spans".into());
        let metric = match p.evaluation_metric.as_ref() {
            Some(Value::Object(m)) => m
                .iter()
                .filter(|(k, _)| *k != "evaluation" && *k != "recorded_at")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            _ => "none".into(),
        };
        let settings = p
            .run()
            .and_then(|r| r.pg_settings())
            .map(|s| crate::output::pg_settings(s, " "))
            .unwrap_or_else(|| "none given".into());
        let _ = write!(
            page.body,
            "<tr class=\"{}\"><td><a href=\"#pass-{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td><td \
                class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td><small>{}</small></td></tr>",
            if p.clean { "clean" } else { "distorted" },
            esc(&file_safe(&p.name)),
            esc(&if n > 1 {
                format!("{}: run {}, nearest the median of {n} runs", layout::base_name(&p.name), run_number(&p.name))
            } else {
                p.name.clone()
            }),
            esc(&mode(p)),
            esc(&evaluated),
            esc(&wall),
            esc(&offset_line(p)),
            p.span_count,
            esc(&settings),
            esc(&metric)
        );
    }
    page.body.push_str("</table>");
    page.body.push_str("<h3>Span totals side by side</h3><table><tr><th>span</th><th>process</th>");
    for p in passes {
        let _ = write!(page.body, "<th>{}</th>", esc(&p.name));
    }
    page.body.push_str("</tr>");
    for row in side_by_side {
        let _ = write!(page.body, "<tr><td>{}</td><td>{}</td>", esc(&row.name), esc(&row.process));
        for total in &row.totals_us {
            let v = total.map(|v| ms(v as f64)).unwrap_or_else(|| "–".into());
            let _ = write!(page.body, "<td class=\"n\">{}</td>", esc(&v));
        }
        page.body.push_str("</tr>");
    }
    page.body.push_str("</table>");
    if more > 0 {
        let _ = write!(page.body, "<p class=\"note\">{more} more span names are in summary.json.</p>");
    }
}

/// A run's number in its pass: `cold-clean` is run 1, `cold-clean.7` run 7.
fn run_number(run: &str) -> usize {
    let base = layout::base_name(run);
    run.strip_prefix(base).and_then(|r| r.strip_prefix('.')).and_then(|k| k.parse().ok()).unwrap_or(1)
}

pub fn pass_header(page: &mut Page, p: &PassView) {
    page.h2(&format!("pass-{}", file_safe(&p.name)), &format!("Pass {}", p.name));
    let _ = write!(page.body, "<p><b>{}</b>. {}</p>", esc(&mode(p)), esc(&offset_line(p)));
    if layout::is_counted(&p.name) {
        page.body.push_str(
            "<p class=\"warn\">Counted pass: nix ran under Valgrind, 15-30 times slower. What it measures is nix's \
                instructions (above); its timings are Valgrind's.</p>",
        );
    } else if !p.clean {
        page.body.push_str(
            "<p class=\"warn\">Instrumented pass: perf, strace and auto_explain slow it down. Read its timings as \
                shapes, not as durations.</p>",
        );
    }
    if let Some(set) = p.run().and_then(|r| r.pg_settings()) {
        let _ = write!(
            page.body,
            "<p>PostgreSQL ran with <code>{}</code> (<code>--pg-setting</code>).</p>",
            esc(&crate::output::pg_settings(set, " "))
        );
    }
    let off = p.run().and_then(|r| r.runner.as_ref()).map(|r| r.captures_off.as_slice()).unwrap_or(&[]);
    if !off.is_empty() {
        let _ = write!(page.body, "<p class=\"note\">Switched off for this run: {}.</p>", esc(&off.join(", ")));
    }
    for w in p.data.warnings.iter().take(10) {
        let _ = write!(page.body, "<p class=\"note\">{}</p>", esc(&w.to_string()));
    }
}
