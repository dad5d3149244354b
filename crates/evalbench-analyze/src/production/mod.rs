//! A production evaluation, from Gradient's diagnostic report: what its
//! summary and its page show, computed. The report holds one evaluation as
//! it happened (no repeats), so every time here is a single measurement:
//! shown, never judged; nix's counts in `evaluation_metric` are exact and
//! are what two reports are judged on ([`compare`]).
//!
//! The evaluation's stages come from its own timeline (`evaluation`'s
//! `*_started_at`); each dispatched job's wait in the queue and its phases
//! (nested ones inside their parent, never added twice) from
//! `dispatched_job` and `dispatched_job_phase`; the workers' load while each
//! phase ran from `worker_sample`.

pub mod bundle;
pub mod compare;
mod kinds;
mod load;
mod stages;

use std::collections::BTreeMap;

use evalbench_diagnostic::Diagnostic;
use serde::Serialize;

pub use kinds::KindView;
pub use load::{Load, BUSY_CPU_PCT, SHORT_OF_MEMORY_PCT};
pub use stages::Stage;

/// One production evaluation, as its summary shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Production {
    pub file: String,
    pub evaluation: String,
    /// The status's name (`Completed`), or `status <n>` for a code Gradient does not have.
    pub status: String,
    /// The commit's hash (hex), as the report names it.
    pub commit: Option<String>,
    pub task: Option<String>,
    pub wildcard: Option<String>,
    pub gradient_version: String,
    pub schema_version: i64,
    pub generated_at: String,
    /// When the evaluation was created, as the report has it (UTC), and in Unix µs.
    pub created_at: Option<String>,
    pub created_at_us: Option<i64>,
    /// Created to finished (or to its last update, when it did not finish), s.
    pub total_s: Option<f64>,
    /// Created to leaving evaluation (building started, or finished): what the
    /// benchmark's `evaluated_s` measures, and what history keeps.
    pub evaluated_s: Option<f64>,
    pub finished: bool,
    /// The evaluation's stages in timeline order.
    pub stages: Vec<Stage>,
    /// `evaluation_metric`'s counts under nix's names and its times and peaks
    /// as `evaluation_metric.<column>` (what a bundle's counters hold).
    pub counters: BTreeMap<String, f64>,
    pub jobs: Vec<JobView>,
    /// The jobs kind by kind (what the summary's first lines show).
    pub kinds: Vec<KindView>,
    pub counts: evalbench_diagnostic::Counts,
    /// Whether `counts` were counted (a report's tables); false for a bundle's run, which has none.
    pub counted: bool,
    pub messages: Vec<MessageLine>,
    /// Tables the manifest says hold fewer rows than there were.
    pub left_out: Vec<LeftOut>,
    pub anonymized_identities: bool,
    pub anonymized_packages: bool,
    pub include_instance: bool,
    pub worker_samples: usize,
    pub warnings: Vec<String>,
}

/// A dispatched job: its wait in the queue, its run and its phases.
#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    pub id: String,
    /// `eval`, `build` or `kind_<n>`.
    pub kind: String,
    pub worker: Option<String>,
    /// Queued to ready, ready to dispatched, dispatched to finished; s.
    pub to_ready_s: Option<f64>,
    pub to_dispatch_s: Option<f64>,
    pub run_s: Option<f64>,
    /// When it was dispatched (its phases' `start_ms` count from here), Unix µs.
    pub dispatched_us: Option<i64>,
    pub outcome: Option<i64>,
    /// Phases in a tree's order (each after its parent), with their depth.
    pub phases: Vec<PhaseView>,
    /// The worker's load while the job ran.
    pub load: Option<Load>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PhaseView {
    pub seq: i64,
    pub parent_seq: Option<i64>,
    /// 0 for a top-level phase, 1 inside one, ...
    pub depth: usize,
    pub name: String,
    pub code: i64,
    pub start_ms: i64,
    /// None while the phase had not ended when the report was made.
    pub ms: Option<i64>,
    pub paths: Option<i64>,
    pub bytes: Option<i64>,
    pub load: Option<Load>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MessageLine {
    /// `info`, `warning`, `error` or `level <n>`.
    pub level: String,
    pub text: String,
    pub source: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub table: String,
    pub included: i64,
    pub available: i64,
    pub filter: String,
}

/// Seconds between two instants, µs; None where either is unknown.
pub(crate) fn between_s(from: Option<i64>, to: Option<i64>) -> Option<f64> {
    Some(to?.checked_sub(from?)? as f64 / 1e6)
}

/// `at` plus `ms` milliseconds, µs; None where a hostile value would overflow.
fn after_ms(at: Option<i64>, ms: Option<i64>) -> Option<i64> {
    at?.checked_add(ms?.checked_mul(1000)?)
}

fn level(l: Option<i64>) -> String {
    match l {
        Some(0) => "info".into(),
        Some(1) => "warning".into(),
        Some(2) => "error".into(),
        Some(n) => format!("level {n}"),
        None => "unknown level".into(),
    }
}

/// The production evaluation a report holds.
pub fn of_report(d: &Diagnostic) -> Production {
    let mut p = of_rows(d);
    p.kinds = kinds::of(&p.jobs);
    p
}

fn of_rows(d: &Diagnostic) -> Production {
    let e = &d.evaluation;
    let end = e.finished_at.or(e.updated_at);
    let counters = d
        .metric
        .as_ref()
        .and_then(|m| crate::counters::from_evaluation_metric(&serde_json::Value::Object(m.clone())))
        .unwrap_or_default();
    let status = e.status.map_or_else(
        || "unknown status".to_string(),
        |c| evalbench_bundle::contract::Status::from_code(c).map_or(format!("status {c}"), |s| s.as_str().to_string()),
    );
    Production {
        file: d.file.display().to_string(),
        evaluation: e.id.clone(),
        status,
        commit: d.commit.as_ref().and_then(|c| c.hash.clone()),
        task: e.task.clone(),
        wildcard: e.wildcard.clone(),
        gradient_version: d.meta.gradient_version.clone(),
        schema_version: d.meta.schema_version,
        generated_at: d.meta.generated_at.clone(),
        created_at: e.created_at_text.clone(),
        created_at_us: e.created_at,
        total_s: between_s(e.created_at, end),
        evaluated_s: between_s(e.created_at, e.building_started_at.or(e.finished_at)),
        finished: e.finished_at.is_some(),
        stages: stages::of(e),
        counters,
        kinds: Vec::new(),
        jobs: d.jobs.iter().map(|j| job(j, &d.samples)).collect(),
        counts: d.counts.clone(),
        counted: true,
        messages: d
            .messages
            .iter()
            .map(|m| MessageLine { level: level(m.level), text: m.message.clone(), source: m.source.clone() })
            .collect(),
        left_out: d
            .manifest
            .iter()
            .filter(|m| m.rows_included < m.rows_available)
            .map(|m| LeftOut {
                table: m.table.clone(),
                included: m.rows_included,
                available: m.rows_available,
                filter: m.filter.clone(),
            })
            .collect(),
        anonymized_identities: d.meta.anonymize_identities,
        anonymized_packages: d.meta.anonymize_packages,
        include_instance: d.meta.include_instance,
        worker_samples: d.samples.len(),
        warnings: d.warnings.clone(),
    }
}

fn job(j: &evalbench_diagnostic::Job, samples: &[evalbench_diagnostic::WorkerSample]) -> JobView {
    let worker = j.worker_id.as_deref();
    let load_between = |from: Option<i64>, to: Option<i64>| load::while_running(samples, worker, from, to);
    let mut phases = Vec::with_capacity(j.phases.len());
    for (p, depth) in tree_order(&j.phases) {
        let start = after_ms(j.dispatched_at, Some(p.start_ms));
        let end = after_ms(j.dispatched_at, p.end_ms);
        phases.push(PhaseView {
            seq: p.seq,
            parent_seq: p.parent_seq,
            depth,
            name: p.name.clone(),
            code: p.code,
            start_ms: p.start_ms,
            ms: p.end_ms.and_then(|e| e.checked_sub(p.start_ms)),
            paths: p.paths,
            bytes: p.bytes,
            load: load_between(start, end),
        });
    }
    JobView {
        id: j.id.clone(),
        kind: j.kind.map_or_else(|| "job".to_string(), evalbench_bundle::contract::job_kind_name),
        worker: j.worker_id.clone(),
        to_ready_s: between_s(j.queued_at, j.ready_at),
        to_dispatch_s: between_s(j.ready_at.or(j.queued_at), j.dispatched_at),
        run_s: between_s(j.dispatched_at, j.finished_at),
        dispatched_us: j.dispatched_at,
        outcome: j.outcome,
        phases,
        load: load_between(j.dispatched_at, j.finished_at),
    }
}

/// Phases each after its parent, children by start; a phase whose parent
/// is not there (or that would make a cycle) is shown at the top.
fn tree_order(phases: &[evalbench_diagnostic::Phase]) -> Vec<(&evalbench_diagnostic::Phase, usize)> {
    let seqs: std::collections::BTreeSet<i64> = phases.iter().map(|p| p.seq).collect();
    let parent = |p: &evalbench_diagnostic::Phase| p.parent_seq.filter(|s| seqs.contains(s) && *s != p.seq);
    let mut children: BTreeMap<Option<i64>, Vec<&evalbench_diagnostic::Phase>> = BTreeMap::new();
    for p in phases {
        children.entry(parent(p)).or_default().push(p);
    }
    for list in children.values_mut() {
        list.sort_by_key(|p| (p.start_ms, p.seq));
    }
    let mut out = Vec::with_capacity(phases.len());
    let mut seen = std::collections::BTreeSet::new();
    let mut stack: Vec<(&evalbench_diagnostic::Phase, usize)> =
        children.get(&None).into_iter().flatten().rev().map(|p| (*p, 0)).collect();
    while let Some((p, depth)) = stack.pop() {
        if !seen.insert(p.seq) {
            continue;
        }
        out.push((p, depth));
        for c in children.get(&Some(p.seq)).into_iter().flatten().rev() {
            stack.push((c, depth + 1));
        }
    }
    // A cycle of parents reaches no top: its phases are shown at the top, once.
    for p in phases {
        if seen.insert(p.seq) {
            out.push((p, 0));
        }
    }
    out
}
