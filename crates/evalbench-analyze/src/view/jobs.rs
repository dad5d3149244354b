//! The worker's job phases (`pg/job_phases.json`, in Gradient's shape or
//! evalbench's older one; `decode::stats::job_phases`): totals per phase
//! and one lane per job.

use std::collections::HashMap;
use std::path::Path;

use evalbench_bundle::layout;

use super::Section;

/// Lanes drawn at most.
pub const JOB_LANES: usize = 50;

#[derive(Debug)]
pub struct JobPhases {
    /// Per phase, over all jobs, largest first.
    pub totals: Vec<(String, f64)>,
    /// Per job in file order, at most [`JOB_LANES`].
    pub jobs: Vec<(String, Vec<Phase>)>,
    pub t0: f64,
    pub t1: f64,
}

#[derive(Debug)]
pub struct Phase {
    pub phase: String,
    pub start: f64,
    pub end: f64,
}

pub(super) fn read(path: &Path) -> Section<JobPhases> {
    if !path.exists() {
        return Section::Missing(layout::JOB_PHASES);
    }
    let phases = match evalbench_decode::stats::job_phases(path) {
        Ok(p) => p,
        Err(e) => return Section::Unreadable(e.to_string()),
    };
    let mut totals: HashMap<String, f64> = HashMap::new();
    let mut jobs: Vec<(String, Vec<Phase>)> = Vec::new();
    let (mut t0, mut t1) = (f64::MAX, f64::MIN);
    for ph in &phases {
        let Some(s) = ph.started_us else { continue };
        let (s, e) = (s as f64, ph.ended_us.unwrap_or(s) as f64);
        // Gradient's phases nest (parent_seq): only the outermost count
        // towards the totals, so that a job's phases add up to its time.
        if ph.parent_seq.is_none() {
            *totals.entry(ph.phase.clone()).or_default() += e - s;
        }
        t0 = t0.min(s);
        t1 = t1.max(e);
        let item = Phase { phase: ph.phase.clone(), start: s, end: e };
        match jobs.iter_mut().find(|(j, _)| *j == ph.job) {
            Some((_, v)) => v.push(item),
            None => jobs.push((ph.job.clone(), vec![item])),
        }
    }
    let mut totals: Vec<(String, f64)> = totals.into_iter().collect();
    totals.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    jobs.truncate(JOB_LANES);
    Section::Ready(JobPhases { totals, jobs, t0, t1 })
}
