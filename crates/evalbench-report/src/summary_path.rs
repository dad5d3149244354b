//! The critical path in summary.json and summary.txt: per process and span
//! name, the seconds on the path, their share, and the span's own seconds
//! that were off it; over repeats (`evalbench_analyze::over_runs`), the
//! median and how often each step was on the path.

use std::fmt::Write as _;

use evalbench_analyze::over_runs::{ProcessOverRuns, StepOverRuns};
use evalbench_analyze::path::whatif::Buys;
use evalbench_analyze::path::{ByProcess, CriticalPath, PathError, PathStep};
use serde::Serialize;

use crate::summary::ms;

/// Steps summary.txt lists per pass; summary.json has them all.
pub const TEXT_PATH_ROWS: usize = 12;

#[derive(Debug, Clone, Serialize)]
pub struct PathSummary {
    /// The path's segments added up, and the evaluated time they tile.
    pub total_us: i64,
    pub evaluated_us: i64,
    /// How far a cross-host edge may be off (the alignment's bound).
    pub bound_us: Option<i64>,
    pub stretches: usize,
    /// Time on the path per process (`process: null` for the waits).
    pub processes: Vec<ByProcess>,
    pub steps: Vec<PathStep>,
    /// What making the top steps 10% and 50% faster would buy on this
    /// run's path (`whatif --faster`), for the median over runs.
    pub buys: Vec<Buys>,
    /// How the path was made where the bundle lacked something: nesting
    /// inferred, the start taken from the spans, a rounded end, an
    /// unreadable pg.pcap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The path as summary.json keeps it, with what its top steps would buy:
/// why there is none, as its message.
pub fn summary(p: &Result<(CriticalPath, Vec<Buys>), PathError>) -> Result<PathSummary, NoPath> {
    let (p, buys) = p.as_ref().map_err(|e| NoPath::Path(e.clone()))?;
    Ok(PathSummary {
        buys: buys.clone(),
        total_us: p.total_us,
        evaluated_us: p.to_us.saturating_sub(p.from_us),
        bound_us: p.bound_us,
        stretches: p.segments.len(),
        processes: p.by_process(),
        steps: p.steps.clone(),
        note: p.note.clone(),
    })
}

/// Why a run's summary has no critical path (summary.json's `{"none": why}`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoPath {
    #[error("{0}")]
    Path(PathError),
    /// Some of its span files did not read: a partial path would pull a median down.
    #[error("partial: {} did not read; this run's path is left out of every median", .0.join(", "))]
    Partial(Vec<String>),
    /// While the path is walked beside the statistics: replaced by the path
    /// or its reason before the summary is written.
    #[error("not walked yet")]
    Pending,
}

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
        let step = crate::summary_text::clip(&s.step, 96);
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
