//! A diagnostic report as evalbench reads it: the rows of the tables it
//! uses, typed (timestamps as Unix microseconds, UTC), and how many rows the
//! tables it only counts hold. Nothing here is computed from them; that is
//! `evalbench-analyze`'s `production`.

use std::path::PathBuf;

use serde::Serialize;

/// One report, read.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub bytes: u64,
    pub meta: Meta,
    /// `report_manifest`: what each table holds of what was there.
    pub manifest: Vec<ManifestRow>,
    pub evaluation: Evaluation,
    /// `"commit"`: the commit the evaluation evaluated (none where the table is empty).
    pub commit: Option<Commit>,
    pub messages: Vec<Message>,
    /// `evaluation_metric`'s row, numbers as JSON numbers (the shape a bundle's
    /// `evaluation_metric.json` row has), none where the worker reported none.
    pub metric: Option<serde_json::Map<String, serde_json::Value>>,
    /// The evaluation's dispatched jobs with their phases, by `queued_at`.
    pub jobs: Vec<Job>,
    /// `worker_sample` (with `include_instance`), by time.
    pub samples: Vec<WorkerSample>,
    pub counts: Counts,
    /// What reading went past, each with its table and row.
    pub warnings: Vec<String>,
}

/// `report_meta`.
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    pub schema_version: i64,
    pub gradient_version: String,
    pub generated_at: String,
    pub evaluation: String,
    pub anonymize_identities: bool,
    pub anonymize_packages: bool,
    pub include_logs: bool,
    pub include_instance: bool,
}

/// A `report_manifest` row.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestRow {
    pub table: String,
    pub rows_included: i64,
    pub rows_available: i64,
    pub scope: String,
    pub filter: String,
    pub redactions: String,
}

/// The `evaluation` row; each `*_at` is when the evaluation entered that status.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Evaluation {
    pub id: String,
    pub task: Option<String>,
    pub wildcard: Option<String>,
    pub status: Option<i64>,
    pub commit_id: Option<String>,
    pub created_at: Option<i64>,
    pub updated_at: Option<i64>,
    pub fetch_started_at: Option<i64>,
    pub eval_flake_started_at: Option<i64>,
    pub eval_drv_started_at: Option<i64>,
    pub building_started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// `created_at` as the report has it (PostgreSQL's text, UTC).
    pub created_at_text: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Commit {
    pub id: String,
    /// Hex, as the exporter encodes it.
    pub hash: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub level: Option<i64>,
    pub message: String,
    pub source: Option<String>,
    pub created_at: Option<i64>,
}

/// A `dispatched_job`, with its `dispatched_job_phase` rows by `seq`.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    pub id: String,
    pub kind: Option<i64>,
    pub worker_id: Option<String>,
    pub queued_at: Option<i64>,
    pub ready_at: Option<i64>,
    pub dispatched_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub outcome: Option<i64>,
    pub phases: Vec<Phase>,
}

/// A `dispatched_job_phase`: ms from the job's dispatch; `parent_seq` names the phase it is inside.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub seq: i64,
    pub parent_seq: Option<i64>,
    pub code: i64,
    /// The code's name in the report's schema version (`unknown_<n>` where none).
    pub name: String,
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub paths: Option<i64>,
    pub bytes: Option<i64>,
}

/// A `worker_sample`.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerSample {
    pub worker_id: Option<String>,
    pub at: i64,
    pub cpu_usage_pct: Option<f64>,
    pub ram_free_mb: Option<i64>,
    pub ram_total_mb: Option<i64>,
    pub assigned_jobs: Option<i64>,
}

/// Rows of the tables evalbench counts and does not read row by row.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub derivations: u64,
    pub dependencies: u64,
    pub derivation_outputs: u64,
    pub cached_paths: u64,
    pub build_jobs: u64,
    pub entry_points: u64,
    pub build_attempts: u64,
    pub build_logs: u64,
}
