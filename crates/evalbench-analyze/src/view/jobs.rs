//! The worker's job phases (`pg/job_phases.json`): totals per phase and one
//! lane per job.

use std::collections::HashMap;
use std::path::Path;

use evalbench_bundle::layout;
use serde_json::Value;

use super::{read_json, Section};

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
    let Some(Value::Array(phases)) = read_json(path) else {
        return Section::Missing(layout::JOB_PHASES);
    };
    let mut totals: HashMap<String, f64> = HashMap::new();
    let mut jobs: Vec<(String, Vec<Phase>)> = Vec::new();
    let (mut t0, mut t1) = (f64::MAX, f64::MIN);
    for ph in &phases {
        let (Some(s), Some(e)) = (ph["started_us"].as_f64(), ph["ended_us"].as_f64().or(ph["started_us"].as_f64())) else { continue };
        let phase = ph["phase"].as_str().unwrap_or("?").to_string();
        let job = ph["job"].as_str().unwrap_or("?").to_string();
        *totals.entry(phase.clone()).or_default() += e - s;
        t0 = t0.min(s);
        t1 = t1.max(e);
        let item = Phase { phase, start: s, end: e };
        match jobs.iter_mut().find(|(j, _)| *j == job) {
            Some((_, v)) => v.push(item),
            None => jobs.push((job, vec![item])),
        }
    }
    let mut totals: Vec<(String, f64)> = totals.into_iter().collect();
    totals.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    jobs.truncate(JOB_LANES);
    Section::Ready(JobPhases { totals, jobs, t0, t1 })
}
