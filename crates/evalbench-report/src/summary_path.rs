//! The critical path in summary.json and summary.txt: per process and span
//! name, the seconds on the path, their share, and the span's own seconds
//! that were off it; over repeats, the median and how often each step was
//! on the path.

use std::fmt::Write as _;

use evalbench_analyze::path::{critical_path, ByProcess, CriticalPath, PathError, PathStep};
use evalbench_analyze::{Alignment, PassData};
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
    /// How the path was made where the bundle lacked something: nesting
    /// inferred, the start taken from the spans, a rounded end, an
    /// unreadable pg.pcap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The pass's path, or why there is none (no run.json, no window).
pub fn of(pass: &PassData, alignment: &Alignment) -> Result<PathSummary, String> {
    summary(&critical_path(pass, alignment).map(|(_, p)| p))
}

/// The path as summary.json keeps it: why there is none, as its message.
pub fn summary(p: &Result<CriticalPath, PathError>) -> Result<PathSummary, String> {
    let p = p.as_ref().map_err(ToString::to_string)?;
    Ok(PathSummary {
        total_us: p.total_us,
        evaluated_us: p.to_us.saturating_sub(p.from_us),
        bound_us: p.bound_us,
        stretches: p.segments.len(),
        processes: p.by_process(),
        steps: p.steps.clone(),
        note: p.note.clone(),
    })
}

pub fn text(t: &mut String, p: &Result<PathSummary, String>) {
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
        "  critical path    {} in {} stretches ({bound}); what the evaluated time waited on (evalbench whatif for more):",
        ms(p.total_us),
        p.stretches
    );
    for part in p.note.iter().flat_map(|n| n.split("; ")) {
        let _ = writeln!(t, "  path made:       {part}");
    }
    let _ = writeln!(t, "  by process:      {}", processes_text(&p.processes));
    let _ = writeln!(t, "  {:<48} {:>12} {:>7} {:>14}", "on the path (process span, or wait)", "on path", "share", "own, off path");
    for s in p.steps.iter().take(TEXT_PATH_ROWS) {
        let off = s.off_path_us.map_or_else(|| "–".into(), ms);
        let _ = writeln!(t, "  {:<48} {:>12} {:>6.1}% {:>14}", s.label(), ms(s.on_path_us), s.share * 100.0, off);
    }
    if p.steps.len() > TEXT_PATH_ROWS {
        let rest: i64 = p.steps[TEXT_PATH_ROWS..].iter().map(|s| s.on_path_us).sum();
        let _ = writeln!(t, "  {:<48} {:>12}", format!("... {} more steps in summary.json", p.steps.len() - TEXT_PATH_ROWS), ms(rest));
    }
}

/// `eval 41.2%, worker 25.3%, waits 3.6%`.
pub fn processes_text(v: &[ByProcess]) -> String {
    let parts: Vec<String> = v.iter().map(|p| format!("{} {:.1}%", p.process.as_deref().unwrap_or("waits"), p.share * 100.0)).collect();
    parts.join(", ")
}

/// A step over a pass's repeats: its median time on the path and in how
/// many runs it was on it at all.
#[derive(Debug, Clone, Serialize)]
pub struct StepOverRuns {
    pub step: String,
    pub median_on_path_us: i64,
    pub median_share: f64,
    pub on_path_runs: usize,
    pub runs: usize,
}

/// The median path of runs (steps by median time on the path).
pub fn over_runs(paths: &[&PathSummary]) -> Vec<StepOverRuns> {
    let mut labels: Vec<String> = paths.iter().flat_map(|p| p.steps.iter().map(PathStep::label)).collect();
    labels.sort();
    labels.dedup();
    let median = |v: Vec<f64>| evalbench_analyze::spread::median(&v);
    let mut out: Vec<StepOverRuns> = labels
        .into_iter()
        .map(|step| {
            let of = |p: &PathSummary| p.steps.iter().find(|s| s.label() == step).map_or((0.0, 0.0), |s| (s.on_path_us as f64, s.share));
            let on: Vec<(f64, f64)> = paths.iter().map(|p| of(p)).collect();
            StepOverRuns {
                median_on_path_us: median(on.iter().map(|x| x.0).collect()).round() as i64,
                median_share: evalbench_bundle::num::round_to(median(on.iter().map(|x| x.1).collect()), 6),
                on_path_runs: on.iter().filter(|x| x.0 > 0.0).count(),
                runs: paths.len(),
                step,
            }
        })
        .collect();
    out.sort_by(|a, b| b.median_on_path_us.cmp(&a.median_on_path_us).then_with(|| a.step.cmp(&b.step)));
    out
}

pub fn over_runs_text(t: &mut String, steps: &[StepOverRuns]) {
    if steps.is_empty() {
        return;
    }
    let _ = writeln!(t, "  {:<60} {:>12} {:>7}  on the path in", "median critical path (process span, or wait)", "on path", "share");
    for s in steps.iter().take(TEXT_PATH_ROWS) {
        let step = crate::summary_text::clip(&s.step, 60);
        let _ = writeln!(t, "  {step:<60} {:>12} {:>6.1}%  {} of {} runs", ms(s.median_on_path_us), s.median_share * 100.0, s.on_path_runs, s.runs);
    }
    if steps.len() > TEXT_PATH_ROWS {
        let _ = writeln!(t, "  ... {} more steps in summary.json", steps.len() - TEXT_PATH_ROWS);
    }
}

/// A process's (or the waits') time on the path over a pass's runs.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessOverRuns {
    /// None: the waits between spans.
    pub process: Option<String>,
    pub median_on_path_us: i64,
    pub median_share: f64,
}

/// Per process, the median over the runs (0 in a run whose path missed it).
pub fn processes_over_runs(paths: &[&PathSummary]) -> Vec<ProcessOverRuns> {
    let mut names: Vec<Option<String>> = paths.iter().flat_map(|p| p.processes.iter().map(|b| b.process.clone())).collect();
    names.sort();
    names.dedup();
    let median = |v: Vec<f64>| evalbench_analyze::spread::median(&v);
    let mut out: Vec<ProcessOverRuns> = names
        .into_iter()
        .map(|process| {
            let on: Vec<(f64, f64)> = paths
                .iter()
                .map(|p| p.processes.iter().find(|b| b.process == process).map_or((0.0, 0.0), |b| (b.on_path_us as f64, b.share)))
                .collect();
            ProcessOverRuns {
                median_on_path_us: median(on.iter().map(|x| x.0).collect()).round() as i64,
                median_share: evalbench_bundle::num::round_to(median(on.iter().map(|x| x.1).collect()), 6),
                process,
            }
        })
        .collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.median_on_path_us));
    out
}

/// `eval 41.2%, worker 25.3%, waits 3.6%`, over runs.
pub fn processes_over_runs_text(v: &[ProcessOverRuns]) -> String {
    let parts: Vec<String> = v.iter().map(|p| format!("{} {:.1}%", p.process.as_deref().unwrap_or("waits"), p.median_share * 100.0)).collect();
    parts.join(", ")
}
