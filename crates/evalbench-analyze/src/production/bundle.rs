//! One run of a bundle's pass as a production evaluation, to set beside a
//! diagnostic report of the same flake (`compare REPORT BUNDLE`): its
//! timeline from run.json's statuses, nix's counts from its
//! evaluation_metric (or nix's statistics), its jobs' phases from
//! `pg/job_phases.json`. A bundle counts no derivations or cached paths as
//! a report does, and its workers are not sampled: those are left out of
//! the comparison, not set to 0.

use std::collections::BTreeMap;

use evalbench_bundle::contract::{job_phase_code, Status};
use evalbench_bundle::{layout, PassDir, RunInfo};
use evalbench_diagnostic::{Diagnostic, Evaluation, Job, Meta, Phase};

use super::Production;

/// The first time the run saw each status (µs).
fn first_seen(run: &RunInfo) -> BTreeMap<&str, i64> {
    let mut out = BTreeMap::new();
    for s in &run.statuses {
        out.entry(s.status.as_str()).or_insert(s.ts_us);
    }
    out
}

fn evaluation(run: &RunInfo) -> Evaluation {
    let seen = first_seen(run);
    let at = |s: Status| seen.get(s.as_str()).copied();
    let finished = [Status::Completed, Status::Failed, Status::Aborted].into_iter().filter_map(at).min();
    Evaluation {
        id: run.eval_id.clone().or_else(|| run.evaluation_id.clone()).unwrap_or_default(),
        status: run.status.as_deref().and_then(Status::parse).map(Status::code),
        created_at: run.requested_us.or_else(|| at(Status::Queued)),
        updated_at: run.statuses.iter().map(|s| s.ts_us).max(),
        fetch_started_at: at(Status::Fetching),
        eval_flake_started_at: at(Status::EvaluatingFlake),
        eval_drv_started_at: at(Status::EvaluatingDerivation),
        building_started_at: at(Status::Building),
        finished_at: finished,
        created_at_text: None,
        ..Evaluation::default()
    }
}

/// The run's jobs from its job_phases.json: each job's phases in ms from its first.
fn jobs(pass: &PassDir) -> Vec<Job> {
    let Ok(rows) = evalbench_decode::stats::job_phases(&pass.file(layout::JOB_PHASES)) else { return Vec::new() };
    let mut jobs: Vec<Job> = Vec::new();
    for r in rows {
        let i = match jobs.iter().position(|j| j.id == r.job) {
            Some(i) => i,
            None => {
                let kind = r.kind.as_deref().map(|k| if k == "build" { 1 } else { 0 });
                jobs.push(Job {
                    id: r.job.clone(),
                    kind,
                    worker_id: r.worker.clone(),
                    queued_at: None,
                    ready_at: None,
                    dispatched_at: None,
                    finished_at: None,
                    outcome: None,
                    phases: Vec::new(),
                });
                jobs.len() - 1
            }
        };
        let code = job_phase_code(&r.phase).unwrap_or(-1);
        let seq = r.seq.unwrap_or(jobs[i].phases.len() as i64);
        jobs[i].phases.push(Phase {
            seq,
            parent_seq: r.parent_seq,
            code,
            name: r.phase.clone(),
            start_ms: r.started_us.unwrap_or(0) / 1000,
            end_ms: r.ended_us.map(|e| e / 1000),
            paths: None,
            bytes: None,
        });
    }
    // Times of the lab's rows are Unix µs: counted from each job's first phase.
    for j in &mut jobs {
        let first = j.phases.iter().map(|p| p.start_ms).min().unwrap_or(0);
        if first > 1_000_000_000 {
            for p in &mut j.phases {
                p.start_ms -= first;
                p.end_ms = p.end_ms.map(|e| e - first);
            }
        }
    }
    jobs
}

/// The run in `pass` as a production evaluation; an error says why it cannot be one.
pub fn of_pass(pass: &PassDir) -> Result<Production, String> {
    let run = RunInfo::read(&pass.file(layout::RUN_JSON)).map_err(|e| e.to_string())?;
    let metric = run.evaluation_metric.as_ref().and_then(|m| m.as_object().cloned());
    let d = Diagnostic {
        file: pass.path.clone(),
        bytes: 0,
        meta: Meta {
            schema_version: 0,
            gradient_version: format!("a bundle's pass, {}", pass.name),
            generated_at: String::new(),
            evaluation: run.eval_id.clone().unwrap_or_default(),
            anonymize_identities: false,
            anonymize_packages: false,
            include_logs: false,
            include_instance: false,
        },
        manifest: Vec::new(),
        evaluation: evaluation(&run),
        commit: None,
        messages: Vec::new(),
        metric,
        jobs: jobs(pass),
        samples: Vec::new(),
        counts: Default::default(),
        warnings: Vec::new(),
    };
    let mut p = super::of_report(&d);
    if p.counters.is_empty() {
        p.counters = crate::counters::of_run(Some(&run), &pass.path).unwrap_or_default();
    }
    p.counted = false;
    p.commit = run.provenance.as_ref().and_then(|v| v.workload.rev.clone());
    Ok(p)
}
