//! The critical path in summary.json and summary.txt: per process and span
//! name, the seconds on the path, their share, and the span's own seconds
//! that were off it; over repeats (`evalbench_analyze::over_runs`), the
//! median and how often each step was on the path.

use std::fmt::Write as _;

use evalbench_analyze::over_runs::{ProcessOverRuns, StepOverRuns};
use evalbench_analyze::path::ByProcess;

use crate::summary::{ms, NoPath, PathSummary};

/// Steps summary.txt lists per pass; summary.json has them all.
pub const TEXT_PATH_ROWS: usize = 12;

pub fn text(t: &mut String, p: &Result<PathSummary, NoPath>) {
    let p = match p {
        Ok(p) => p,
        Err(why) => {
            let _ = writeln!(t, "  critical path    none: {why}");
            return;
        }
    };
    let bound = p.bound_us.map_or_else(|| "one host".to_string(), |b| format!("cross-host edges ± {b} us"));
    let _ = writeln!(
        t,
        "  critical path    {} in {} stretches ({bound}); what the evaluated time waited on (evalbench whatif for \
            more):",
        ms(p.total_us),
        p.stretches
    );
    for part in p.note.iter().flat_map(|n| n.split("; ")) {
        let _ = writeln!(t, "  path made:       {part}");
    }
    let _ = writeln!(t, "  by process:      {}", processes_text(&p.processes));
    let _ = writeln!(
        t,
        "  {:<48} {:>12} {:>7} {:>14}",
        "on the path (process span, or wait)", "on path", "share", "own, off path"
    );
    for s in p.steps.iter().take(TEXT_PATH_ROWS) {
        let off = s.off_path_us.map_or_else(|| "–".into(), ms);
        let _ = writeln!(t, "  {:<48} {:>12} {:>6.1}% {:>14}", s.label(), ms(s.on_path_us), s.share * 100.0, off);
    }
    if p.steps.len() > TEXT_PATH_ROWS {
        let rest: i64 = p.steps[TEXT_PATH_ROWS..].iter().map(|s| s.on_path_us).sum();
        let _ = writeln!(
            t,
            "  {:<48} {:>12}",
            format!("... {} more steps in summary.json", p.steps.len() - TEXT_PATH_ROWS),
            ms(rest)
        );
    }
}

/// `eval 41.2%, worker 25.3%, waits 3.6%`.
pub fn processes_text(v: &[ByProcess]) -> String {
    let parts: Vec<String> =
        v.iter().map(|p| format!("{} {:.1}%", p.process.as_deref().unwrap_or("waits"), p.share * 100.0)).collect();
    parts.join(", ")
}

/// The median path's table; its last line says what the steps' medians
/// add up to, beside the median evaluated time they are not.
pub fn over_runs_text(t: &mut String, a: &evalbench_analyze::over_runs::PassAnswer) {
    let steps: &[StepOverRuns] = &a.steps;
    if steps.is_empty() {
        return;
    }
    // Wide enough that statements cut alike are told apart.
    let _ = writeln!(
        t,
        "  {:<96} {:>12} {:>7}  on the path in",
        "median critical path (process span, or wait)", "on path", "share"
    );
    for s in steps.iter().take(TEXT_PATH_ROWS) {
        let step = crate::summary::text::clip(&s.step, 96);
        let _ = writeln!(
            t,
            "  {step:<96} {:>12} {:>6.1}%  {} of {} runs",
            ms(s.median_on_path_us),
            s.median_share * 100.0,
            s.on_path_runs,
            s.runs
        );
    }
    if steps.len() > TEXT_PATH_ROWS {
        let _ = writeln!(t, "  ... {} more steps in summary.json", steps.len() - TEXT_PATH_ROWS);
    }
    let _ = writeln!(
        t,
        "  every step's median added: {}, against the median evaluated {:.3} s (a sum of medians is not the median of \
            sums)",
        ms(a.steps_median_sum_us),
        a.evaluated_s.median
    );
}

/// `eval 41.2%, worker 25.3%, waits 3.6%`, over runs.
pub fn processes_over_runs_text(v: &[ProcessOverRuns]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|p| format!("{} {:.1}%", p.process.as_deref().unwrap_or("waits"), p.median_share * 100.0))
        .collect();
    parts.join(", ")
}
