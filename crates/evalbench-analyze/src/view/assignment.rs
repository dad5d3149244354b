//! The assignment walk: from the evaluate request to the worker's job span,
//! step by step, for each job the server assigned.

use super::PassView;

/// How many jobs are walked; the rest are only counted.
pub const WALKED_JOBS: usize = 8;

/// The steps, server and worker, in the order they happen.
/// The contract's assignment steps ([`evalbench_bundle::contract::ASSIGNMENT_CHAIN`]).
const PATH: &[(&str, &str)] = &evalbench_bundle::contract::ASSIGNMENT_CHAIN;

#[derive(Debug, Default)]
pub struct Assignment {
    /// The first [`WALKED_JOBS`] jobs.
    pub walks: Vec<JobWalk>,
    /// Every `assign_job` span of the pass.
    pub jobs: usize,
}

#[derive(Debug)]
pub struct JobWalk {
    pub job: String,
    pub steps: Vec<Step>,
}

#[derive(Debug)]
pub struct Step {
    /// "<process> <span>", or the runner's request.
    pub label: String,
    pub start: f64,
    pub end: f64,
    /// From the end of the steps before to this one's start; negative when it
    /// began inside them; None for the first.
    pub wait: Option<f64>,
}

pub(super) fn walk(p: &PassView) -> Assignment {
    let wanted: Vec<(&str, &str)> = PATH.iter().copied().chain([("worker", "job")]).collect();
    let names = p.by_name(&wanted);
    let assigns = names.get(&("server", "assign_job")).map(|v| v.as_slice()).unwrap_or(&[]);
    let requested = p.run().and_then(|r| r.requested_us).map(|v| v as f64);
    let mut walks = Vec::new();
    for a in assigns.iter().take(WALKED_JOBS) {
        let job = p.job(a.stream, a.idx).unwrap_or_default();
        // Walk back from assign_job: each step is the latest of its name that starts before the next.
        let mut steps: Vec<(String, f64, f64)> = vec![("server assign_job".into(), a.start, a.end)];
        let mut before = a.start;
        for (process, name) in PATH.iter().rev().skip(1) {
            if let Some(s) = names.get(&(*process, *name)).and_then(|v| v.iter().rev().find(|s| s.start <= before)) {
                if requested.is_some_and(|r| s.start < r - 1e6) {
                    continue;
                }
                steps.push((format!("{process} {name}"), s.start, s.end));
                before = s.start;
            }
        }
        if let Some(r) = requested {
            steps.push(("evaluate request (runner)".into(), r, r));
        }
        steps.reverse();
        let job_span = names
            .get(&("worker", "job"))
            .and_then(|v| v.iter().find(|s| p.job(s.stream, s.idx).as_deref() == Some(job.as_str())));
        if let Some(j) = job_span {
            steps.push(("worker job".into(), j.start, j.end.min(j.start + 1.0)));
        }
        let mut prev_end: Option<f64> = None;
        let steps = steps
            .into_iter()
            .map(|(label, start, end)| {
                let wait = prev_end.map(|pe| start - pe);
                prev_end = Some(prev_end.map_or(end, |pe: f64| pe.max(end)));
                Step { label, start, end, wait }
            })
            .collect();
        walks.push(JobWalk { job, steps });
    }
    Assignment { walks, jobs: assigns.len() }
}
