//! A pass made many times, as one measurement: its runs' evaluated seconds
//! in the order they ran (the median marked, so that a drift or a warm-up is
//! seen), its median critical path as one stacked bar with each step's
//! spread over the runs, and every run as a row linking to its trace. The
//! run nearest the median is then shown in full; with 32 runs a pass the
//! page had been 66 full sections and 11 MB.

use std::fmt::Write;

use evalbench_analyze::view::page::Group;
use evalbench_analyze::view::PassView;

use super::super::esc::{esc, file_safe, href};
use super::super::svg::{self, ms};
use super::super::Page;

/// Steps drawn in the median path's bar; the rest are in summary.json.
const PATH_STEPS: usize = 12;

/// The group's runs as one measurement (`analyze::view::page::Group`).
pub fn runs(page: &mut Page, g: &Group, runs: &[&PassView], shown: usize) {
    let (base, over) = (g.base.as_str(), &g.over);
    page.h2(&format!("runs-{base}"), &format!("{base}: {} runs", runs.len()));
    let (values, s) = (&over.evaluated_s, &over.spread);
    let _ = write!(
        page.body,
        "<p>Evaluated: median <b>{:.3} s</b> (MAD {:.3} s, min {:.3} s, max {:.3} s) over {} runs. The run nearest the \
            median, <a href=\"#pass-{}\">{}</a>, is shown in full below; every run is a row of the table.</p>",
        s.median,
        s.mad,
        s.min,
        s.max,
        runs.len(),
        esc(&file_safe(&runs[shown].name)),
        esc(&runs[shown].name)
    );
    if let Some(t) = &over.trend {
        let _ = write!(
            page.body,
            "<p class=\"warn\">Trend: {}.</p>",
            esc(&crate::condition_notes::trend(t, "the evaluated seconds", "s"))
        );
    }
    let warmup = over.warmup_runs;
    if warmup > 0 {
        let _ = write!(
            page.body,
            "<p class=\"warn\">Warm-up: the first {warmup} run(s) lay above the rest's spread (`run --warmup` leaves \
                such runs out).</p>"
        );
    }
    page.chart(
        base,
        "runs",
        svg::runs(&format!("{base}: evaluated seconds of each run, in run order"), values, s.median),
    );
    median_path(page, g, s.median);
    page.body.push_str(
        "<table><tr><th>run</th><th>evaluated</th><th>critical path</th><th>first step on it</th><th>trace</th></tr>",
    );
    for (i, p) in runs.iter().enumerate() {
        let name = if i == shown {
            format!("<a href=\"#pass-{}\">{}</a> (median)", esc(&file_safe(&p.name)), esc(&p.name))
        } else {
            esc(&p.name)
        };
        let (path, first) = match &p.critical {
            Ok(c) => (ms(c.total_us as f64), c.steps.first().map(|s| s.label()).unwrap_or_default()),
            Err(_) => ("none".into(), String::new()),
        };
        let trace = if p.span_count > 0 {
            let f = format!("{}/{}", file_safe(&p.name), evalbench_bundle::layout::TRACE_JSON);
            format!("<a href=\"{}\">trace.json</a>", esc(&href(&f)))
        } else {
            "–".into()
        };
        let _ = write!(
            page.body,
            "<tr><td>{name}</td><td class=\"n\">{:.3} s</td><td class=\"n\">{}</td><td>{}</td><td>{trace}</td></tr>",
            values[i],
            esc(&path),
            esc(&first)
        );
    }
    page.body.push_str("</table>");
}

/// The path's steps by their median time on it over the runs (0 in a run
/// whose path missed the step), each with the runs' range.
fn median_path(page: &mut Page, g: &Group, median: f64) {
    let base = g.base.as_str();
    if g.paths == 0 {
        return;
    }
    // The same medians summary.txt and whatif give (`analyze::over_runs`).
    let mut steps: Vec<(String, f64, f64, f64)> = g
        .steps_over_runs
        .iter()
        .filter(|s| s.median_on_path_us > 0)
        .map(|s| (s.step.clone(), s.median_on_path_us as f64, s.min_on_path_us as f64, s.max_on_path_us as f64))
        .collect();
    let every: f64 = steps.iter().map(|s| s.1).sum();
    let rest = steps.len().saturating_sub(PATH_STEPS);
    steps.truncate(PATH_STEPS);
    let shown: f64 = steps.iter().map(|s| s.1).sum();
    let _ = write!(
        page.body,
        "<h3>{} <small>median critical path</small></h3><p class=\"note\">Each step's median time on the path over {} \
            runs; hover a step for its range. The {} largest steps' medians add up to {}; every step's to {}, against \
            a median evaluated time of {:.3} s: a sum of medians is not the median of sums (each run's path adds up to \
            its own evaluated time).{}</p>",
        esc(base),
        g.paths,
        steps.len(),
        esc(&ms(shown)),
        esc(&ms(every)),
        median,
        if rest > 0 { format!(" {rest} smaller steps are in summary.json.") } else { String::new() }
    );
    let end = format!("{}: these {} steps' medians, added", ms(shown), steps.len());
    page.chart(base, "median-path", svg::path_bar(&format!("{base}: median critical path"), &steps, &end));
}
