//! Schema 19 of Gradient's diagnostic report, as its exporter writes it
//! (`backend/gradient-report`: `schema.rs`, `tables.rs`, `logs.rs`): every
//! table with its columns in Gradient's order and SQLite types. The reader
//! checks a file against this list (a missing table or column is named, never
//! guessed) and the lab writes its reports from it, so the two cannot drift.
//! The phase codes of `dispatched_job_phase` are kept per schema version.

/// The schema versions this reader knows. Gradient's own inspector pins one;
/// a file of another version is refused, naming both.
pub const SCHEMA_VERSIONS: [i64; 1] = [19];

/// When a table is in a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Always: the evaluation's own tables.
    Always,
    /// Only with `include_instance` (the fleet, which needs ManageWorkers).
    Instance,
    /// Only with `include_logs` (`build_log`, failed attempts only).
    Logs,
    /// Written by some exporters of this version and not others: read where present.
    Optional,
}

/// One exported table: its name and its columns (`name TYPE, ...`, Gradient's DDL).
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static str,
    pub presence: Presence,
    /// What the exporter's `$1` selects (its manifest's `scope`), for the lab to declare.
    pub scope: &'static str,
}

impl Table {
    /// The column names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.columns.split(", ").map(|c| c.split(' ').next().unwrap_or(c))
    }

    /// `CREATE TABLE "name" (...)`, as Gradient creates it.
    pub fn ddl(&self) -> String {
        format!("CREATE TABLE \"{}\" ({})", self.name, self.columns)
    }
}

const EVAL: &str = "the evaluation";
const SHARED: &str = "the evaluation's derivations, shared with every other evaluation that built them";
const HASHES: &str = "the evaluation's output hashes, shared with every other evaluation that produced them";
const WHILE: &str = "the workers that ran this evaluation, while it ran";
const INSTANCE: &str = "the whole instance";

const fn t(name: &'static str, columns: &'static str, presence: Presence, scope: &'static str) -> Table {
    Table { name, columns, presence, scope }
}

/// Every table of schema 19, in the exporter's order.
pub const TABLES: [Table; 26] = [
    t(
        "evaluation",
        "id TEXT, task TEXT, repository TEXT, commit_id TEXT, wildcard TEXT, status INTEGER, previous TEXT, next TEXT, \
         created_at TEXT, updated_at TEXT, flake_source TEXT, waiting_reason TEXT, trigger_id TEXT, \
         concurrent INTEGER, \
         fetch_started_at TEXT, eval_flake_started_at TEXT, eval_drv_started_at TEXT, building_started_at TEXT, \
         finished_at TEXT, started_by TEXT, cache_status INTEGER, kind INTEGER",
        Presence::Always,
        EVAL,
    ),
    t(
        "commit",
        "id TEXT, hash TEXT, author TEXT, author_name TEXT, message TEXT",
        Presence::Always,
        "the evaluation's commit",
    ),
    t(
        "evaluation_message",
        "id TEXT, evaluation TEXT, level INTEGER, message TEXT, source TEXT, created_at TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "evaluation_metric",
        "id TEXT, evaluation TEXT, total_thunks INTEGER, fn_calls INTEGER, primop_calls INTEGER, lookups INTEGER, \
         alloc_bytes INTEGER, peak_heap_mb INTEGER, peak_rss_mb INTEGER, fetch_ms INTEGER, eval_flake_ms INTEGER, \
         eval_drv_ms INTEGER, total_eval_ms INTEGER, worker_id TEXT, created_at TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "entry_point",
        "id TEXT, task TEXT, evaluation TEXT, created_at TEXT, eval TEXT, repo_check_id TEXT, derivation TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "build_job",
        "id TEXT, evaluation TEXT, derivation TEXT, derivation_build TEXT, score REAL, score_breakdown TEXT, \
         created_at TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "derivation_build",
        "id TEXT, derivation TEXT, status INTEGER, substitutable INTEGER, substituted INTEGER, attempt INTEGER, \
         timeout_secs INTEGER, max_silent_secs INTEGER, created_at TEXT, updated_at TEXT, queued_at TEXT, \
         ready_at TEXT, dispatched_at TEXT, closure_complete INTEGER, drv_closure_cached INTEGER",
        Presence::Always,
        SHARED,
    ),
    t(
        "derivation",
        "id TEXT, created_at TEXT, architecture TEXT, hash TEXT, name TEXT, pname TEXT, prefer_local_build INTEGER, \
         allow_substitutes INTEGER, closure_size INTEGER, is_fixed_output INTEGER, dep_closure_count INTEGER, \
         walked INTEGER",
        Presence::Always,
        SHARED,
    ),
    t(
        "derivation_output",
        "id TEXT, derivation TEXT, name TEXT, hash TEXT, package TEXT, ca TEXT, nar_size INTEGER, is_cached INTEGER, \
         created_at TEXT, cached_path TEXT, external_url TEXT, nar_hash TEXT, file_size INTEGER, \
         references_list TEXT, deriver TEXT, file_hash TEXT",
        Presence::Always,
        SHARED,
    ),
    t(
        "build_attempt",
        "id TEXT, build_job TEXT, derivation_build TEXT, dispatched_job TEXT, substitute INTEGER, outcome INTEGER, \
         reason INTEGER, failure_message TEXT, build_context TEXT, build_started_at TEXT, build_finished_at TEXT, \
         created_at TEXT",
        Presence::Always,
        "the evaluation's build anchors, so attempts made for other evaluations are included",
    ),
    t(
        "dispatched_job",
        "id TEXT, kind INTEGER, evaluation_id TEXT, project TEXT, task TEXT, worker_id TEXT, score REAL, \
         queued_at TEXT, ready_at TEXT, dispatched_at TEXT, finished_at TEXT, outcome INTEGER, score_breakdown TEXT, \
         worker_context TEXT, job_context TEXT, candidates TEXT, created_at TEXT, instance_context TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "dispatched_job_phase",
        "id TEXT, dispatched_job TEXT, seq INTEGER, parent_seq INTEGER, phase INTEGER, start_ms INTEGER, \
         end_ms INTEGER, paths INTEGER, bytes INTEGER, created_at TEXT",
        Presence::Always,
        EVAL,
    ),
    t(
        "phase_event",
        "id TEXT, subject_kind INTEGER, subject_id TEXT, phase INTEGER, event INTEGER, at TEXT, worker_id TEXT, \
         detail TEXT",
        Presence::Always,
        "the evaluation and its build anchors, so events from other evaluations are included",
    ),
    t("derivation_dependency", "derivation TEXT, dependency TEXT", Presence::Always, SHARED),
    t(
        "cached_path",
        "id TEXT, hash TEXT, package TEXT, file_hash TEXT, file_size INTEGER, nar_size INTEGER, nar_hash TEXT, \
         ca TEXT, created_at TEXT, deriver TEXT, closure_complete INTEGER",
        Presence::Always,
        HASHES,
    ),
    t(
        "cached_path_reference",
        "referrer TEXT, reference TEXT, reference_hash TEXT, position INTEGER",
        Presence::Optional,
        HASHES,
    ),
    t(
        "cached_path_signature",
        "id TEXT, cached_path TEXT, cache TEXT, cache_name TEXT, signed INTEGER, last_fetched_at TEXT, \
         fetch_count INTEGER, created_at TEXT",
        Presence::Always,
        "the evaluation's output hashes, one row per cache holding the path",
    ),
    t(
        "evaluation_input_update",
        "id TEXT, evaluation TEXT, base_commit TEXT, generator TEXT, target_inputs TEXT, bumped_inputs TEXT, \
         discover_only INTEGER, created_at TEXT, updated_at TEXT",
        Presence::Always,
        "the evaluation's input-update sidecar",
    ),
    t(
        "worker_registration",
        "id TEXT, peer_id TEXT, worker_id TEXT, created_at TEXT, managed INTEGER, url TEXT, active INTEGER, \
         display_name TEXT, created_by TEXT, enable_fetch INTEGER, enable_eval INTEGER, enable_build INTEGER",
        Presence::Instance,
        INSTANCE,
    ),
    t(
        "worker_connection",
        "id TEXT, worker_id TEXT, project TEXT, display_name TEXT, connected_at TEXT, disconnected_at TEXT, \
         capabilities TEXT, reason INTEGER",
        Presence::Instance,
        WHILE,
    ),
    t(
        "worker_sample",
        "id TEXT, worker_id TEXT, project TEXT, at TEXT, cpu_usage_pct REAL, ram_free_mb INTEGER, \
         ram_total_mb INTEGER, disk_speed_mbps REAL, network_speed_mbps REAL, assigned_jobs INTEGER, \
         max_concurrent_builds INTEGER, state INTEGER, capabilities TEXT",
        Presence::Instance,
        WHILE,
    ),
    t(
        "cache_upstream",
        "id TEXT, cache TEXT, display_name TEXT, mode INTEGER, upstream_cache TEXT, url TEXT, public_key TEXT, \
         kind INTEGER, remote_cache_name TEXT",
        Presence::Instance,
        "the caches this project subscribes to",
    ),
    t(
        "upstream_metric",
        "id TEXT, bucket_time TEXT, latency_ms_sum INTEGER, request_count INTEGER, narinfo_hits INTEGER, \
         narinfo_misses INTEGER, upstream_url TEXT",
        Presence::Instance,
        "the whole instance, last 7 days",
    ),
    t(
        "base_worker",
        "id TEXT, worker_id TEXT, display_name TEXT, url TEXT, enabled INTEGER, enable_fetch INTEGER, \
         enable_eval INTEGER, enable_build INTEGER, created_by TEXT, created_at TEXT",
        Presence::Instance,
        INSTANCE,
    ),
    t(
        "project_base_worker",
        "id TEXT, project TEXT, base_worker TEXT, created_by TEXT, created_at TEXT",
        Presence::Instance,
        "this project's base worker opt-ins",
    ),
    t(
        "build_log",
        "build_attempt TEXT PRIMARY KEY, log TEXT NOT NULL",
        Presence::Logs,
        "the evaluation's build anchors, so attempts made for other evaluations are included",
    ),
];

/// The table of that name in schema 19.
pub fn table(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// `report_meta` and `report_manifest`, as Gradient's `open_report` makes them.
pub const META_DDL: &str = "CREATE TABLE report_meta (schema_version INTEGER NOT NULL, gradient_version TEXT NOT \
    NULL, generated_at TEXT NOT NULL, evaluation TEXT NOT NULL, anonymize_identities INTEGER NOT NULL, \
    anonymize_packages INTEGER NOT NULL, include_logs INTEGER NOT NULL, include_instance INTEGER NOT NULL); \
    CREATE TABLE report_manifest (\"table\" TEXT NOT NULL PRIMARY KEY, rows_included INTEGER NOT NULL, \
    rows_available INTEGER NOT NULL, scope TEXT NOT NULL, filter TEXT NOT NULL, redactions TEXT NOT NULL);";

/// A phase code's name in a schema version: for 19, the `JobPhase::as_i16`
/// discriminants of the Gradient versions that write it (its wire type;
/// 9 is retired, named for old rows), which `contract::JOB_PHASES` holds.
/// The inspector's own table disagrees from 9 on (it follows the wire enum's
/// order); the stored discriminant is what a row holds. A code no table
/// names is `unknown_<n>`, never guessed.
pub fn phase_name(schema_version: i64, code: i64) -> String {
    match schema_version {
        19 => evalbench_bundle::contract::job_phase_name(code),
        _ => format!("unknown_{code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_gradients_columns_once() {
        for t in TABLES {
            let names: Vec<_> = t.names().collect();
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(names.len(), unique.len(), "{}: {names:?}", t.name);
            assert!(t.ddl().starts_with(&format!("CREATE TABLE \"{}\" (", t.name)));
        }
        assert_eq!(table("dispatched_job_phase").unwrap().names().nth(4), Some("phase"));
        assert_eq!(TABLES.iter().filter(|t| t.presence == Presence::Instance).count(), 7);
    }

    #[test]
    fn phase_codes_are_the_stored_discriminants_and_unknown_ones_are_named() {
        assert_eq!(phase_name(19, 10), "build");
        assert_eq!(phase_name(19, 9), "substitute_passthrough");
        assert_eq!(phase_name(19, 14), "substitute_fetch");
        assert_eq!(phase_name(19, 42), "unknown_42");
        assert_eq!(phase_name(20, 10), "unknown_10");
    }
}
