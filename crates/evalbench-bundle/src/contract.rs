//! The pipeline's contract, in one place: what Gradient's processes write
//! and what every reader and writer of ours must agree on with it (the
//! facts and their sources: docs/GRADIENT-FORMAT.md).
//!
//! Why a module of its own: evalbench reads bundles that Gradient wrote as
//! well as the lab's, and the lab exists to be Gradient's twin. A name
//! written in two places drifts; a span field the lab writes one way and
//! Gradient another makes every test read a format no user has (the job
//! was once `job` here and `job_id` there, and clock alignment silently
//! failed on every real bundle).

use std::collections::HashMap;

use crate::spans::{Span, Stream};

/// The span field naming the job a hand-off belongs to (Gradient's
/// `job_events.rs` opens `job_event` with `%job_id`; `assign_job`, the
/// worker's `job` and `report_eval_result` carry it too).
pub const JOB_ID: &str = "job_id";
/// The same field as bundles of evalbench before it spoke Gradient's
/// schema wrote it: still read.
pub const JOB_LEGACY: &str = "job";
/// `job_event`'s kind of message, and the wait behind earlier reports of
/// the same worker, in µs.
pub const KIND: &str = "kind";
pub const QUEUE_WAIT_US: &str = "queue_wait_us";
/// The kind of `job_event` that carries an evaluation's results upstream.
pub const EVAL_RESULT: &str = "eval_result";

/// Span names of the hand-offs between processes.
pub mod span {
    /// Server: the job handed to a worker (downstream send).
    pub const ASSIGN_JOB: &str = "assign_job";
    /// Worker: the job, from its arrival (downstream receive).
    pub const JOB: &str = "job";
    /// Worker: one batch of results sent (upstream send).
    pub const REPORT_EVAL_RESULT: &str = "report_eval_result";
    /// Server: a message of a job handled (upstream receive when `kind` is
    /// `eval_result`; its start less `queue_wait_us` is the arrival).
    pub const JOB_EVENT: &str = "job_event";
}

/// The steps by which a queued evaluation's job reaches a worker, in order
/// (the benchmark's "assignment path"): each the latest of its name that
/// starts before the next, from the first `assign_job` back.
pub const ASSIGNMENT_CHAIN: [(&str, &str); 9] = [
    (process::SERVER, "assign_queued_evals"),
    (process::SERVER, "offer_jobs"),
    (process::WORKER, "on_job_offer"),
    (process::WORKER, "send_scores"),
    (process::WORKER, "request_job"),
    (process::SERVER, "on_request_job"),
    (process::SERVER, "claim_dispatch"),
    (process::SERVER, "send_credentials"),
    (process::SERVER, span::ASSIGN_JOB),
];

/// The spans each process of the pipeline emits, with the fields each must
/// carry: Gradient's (its benchmark's page lists them; `job_id`, `kind` and
/// `queue_wait_us` as its `job_events.rs` writes them), and the lab's own
/// walk at completion. The lab's test checks every one in a real run; the
/// critical path reads the hand-offs and waits by these names.
pub const SPANS: &[(&str, &str, &[&str])] = &[
    ("server", "assign_queued_evals", &[]),
    ("server", "offer_jobs", &["jobs", "workers"]),
    ("server", "on_request_job_chunk", &["worker"]),
    ("server", "record_scores", &["count"]),
    ("server", "on_request_job", &["worker", "kind", "job_id"]),
    ("server", "request_job", &["worker"]),
    ("server", "claim_dispatch", &[]),
    ("server", "send_credentials", &["job_id"]),
    ("server", "assign_job", &["job_id"]),
    ("server", "job_event", &["job_id", "kind", "queue_wait_us"]),
    ("server", "handle_eval_result", &["job_id"]),
    ("server", "assess_cached", &["drvs"]),
    ("server", "record", &["job_id", "rows"]),
    ("server", "flush", &["batches", "rows"]),
    ("server", "record_one", &["drv"]),
    ("server", "commit_one", &[]),
    ("server", "transact_once", &["attempt"]),
    ("server", "apply_batch", &["rows"]),
    ("server", "lock_seed_shared_builds", &[]),
    ("server", "became_fetchable", &[]),
    ("server", "seed_blocking_deps", &[]),
    ("server", "promote", &[]),
    ("server", "unpromote_ungated", &[]),
    ("server", "emit_transition_effects", &[]),
    ("server", "move_batch_need", &[]),
    ("server", "after_commit", &[]),
    ("server", "known_derivations", &["asked", "known"]),
    ("server", "eval_stream_completed", &["job_id"]),
    // Not the seed's: the lab's walk over the derivation graph at completion, as Gradient's.
    ("server", "record_entry_points", &["roots"]),
    ("server", "eval_closure", &["form", "derivations"]),
    ("worker", "on_job_offer", &["jobs"]),
    ("worker", "score_candidates", &[]),
    ("worker", "send_scores", &[]),
    ("worker", "request_job", &[]),
    ("worker", "job", &["job_id"]),
    ("worker", "fetch_repository", &[]),
    ("worker", "clone_and_checkout", &[]),
    ("worker", "run_input_update", &[]),
    ("worker", "fetch_inputs", &[]),
    ("worker", "missing_paths", &[]),
    ("worker", "evaluate_flake", &["job_id"]),
    ("worker", "evaluate_derivations", &["job_id"]),
    ("worker", "wave", &["drvs"]),
    ("worker", "parse_drv_wave", &["drvs"]),
    ("worker", "query_known_derivations", &["drvs"]),
    ("worker", "report_eval_result", &["job_id", "drvs"]),
    ("eval", "open", &[]),
    ("eval", "lock_flake", &["eval_cache_entries"]),
    ("eval", "discover", &["attrs"]),
    ("eval", "plan_shards", &["shards"]),
    ("eval", "resolve", &["attr"]),
];

/// The messages between processes, (sender, receiver): the job handed
/// down to a worker, and its results sent up. Both clock alignment and the
/// critical path pair them by job ([`pair_by_job`]).
pub const HAND_OFFS: [(&str, &str); 2] = [(span::ASSIGN_JOB, span::JOB), (span::REPORT_EVAL_RESULT, span::JOB_EVENT)];

/// The spans clock alignment pairs: both ends of both directions.
pub const ALIGNMENT_SPANS: [&str; 4] = [span::ASSIGN_JOB, span::JOB_EVENT, span::JOB, span::REPORT_EVAL_RESULT];

/// The steps of one batch in Gradient's graph writer, in the order they
/// run, each a span under `advance_can_start` (named in [`SPANS`]). The
/// lab's server runs a statement per step and the sample pipeline a
/// stand-in: both open their spans here, so that neither names a step of
/// its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchStep {
    LockSeedSharedBuilds,
    BecameFetchable,
    SeedBlockingDeps,
    Promote,
    UnpromoteUngated,
    EmitTransitionEffects,
    MoveBatchNeed,
}

/// The graph writer's span target, as Gradient's.
pub const GRAPH_WRITER_TARGET: &str = "gradient_graph::writer";

impl BatchStep {
    pub const ALL: [BatchStep; 7] = [
        BatchStep::LockSeedSharedBuilds,
        BatchStep::BecameFetchable,
        BatchStep::SeedBlockingDeps,
        BatchStep::Promote,
        BatchStep::UnpromoteUngated,
        BatchStep::EmitTransitionEffects,
        BatchStep::MoveBatchNeed,
    ];

    /// The step's name, as its span has it.
    pub fn name(self) -> &'static str {
        match self {
            BatchStep::LockSeedSharedBuilds => "lock_seed_shared_builds",
            BatchStep::BecameFetchable => "became_fetchable",
            BatchStep::SeedBlockingDeps => "seed_blocking_deps",
            BatchStep::Promote => "promote",
            BatchStep::UnpromoteUngated => "unpromote_ungated",
            BatchStep::EmitTransitionEffects => "emit_transition_effects",
            BatchStep::MoveBatchNeed => "move_batch_need",
        }
    }

    /// The step's span, entered by the caller. `tracing` takes a span's
    /// name only as a literal: one arm per step.
    pub fn span(self) -> tracing::Span {
        use tracing::debug_span;
        match self {
            BatchStep::LockSeedSharedBuilds => debug_span!(target: GRAPH_WRITER_TARGET, "lock_seed_shared_builds"),
            BatchStep::BecameFetchable => debug_span!(target: GRAPH_WRITER_TARGET, "became_fetchable"),
            BatchStep::SeedBlockingDeps => debug_span!(target: GRAPH_WRITER_TARGET, "seed_blocking_deps"),
            BatchStep::Promote => debug_span!(target: GRAPH_WRITER_TARGET, "promote"),
            BatchStep::UnpromoteUngated => debug_span!(target: GRAPH_WRITER_TARGET, "unpromote_ungated"),
            BatchStep::EmitTransitionEffects => debug_span!(target: GRAPH_WRITER_TARGET, "emit_transition_effects"),
            BatchStep::MoveBatchNeed => debug_span!(target: GRAPH_WRITER_TARGET, "move_batch_need"),
        }
    }
}

/// The process names of Gradient's span files (`<process>-<pid>.jsonl`).
pub mod process {
    pub const SERVER: &str = "server";
    pub const WORKER: &str = "worker";
    pub const EVAL: &str = "eval";
}

/// A span file's name as Gradient writes it: `server-11.jsonl`.
pub fn span_file_name(process: &str, pid: u32) -> String {
    format!("{process}-{pid}.jsonl")
}

/// The process and pid a span file's name gives, for lines that carry
/// neither: Gradient's `server-11.jsonl`, and evalbench's older
/// `server.11.jsonl`. A name of neither form is the process, pid 0.
pub fn span_file_identity(file_name: &str) -> (String, u32) {
    let stem = file_name.strip_suffix(".jsonl").unwrap_or(file_name);
    for sep in ['-', '.'] {
        if let Some((p, pid)) = stem.rsplit_once(sep) {
            if let Ok(pid) = pid.parse() {
                return (p.to_string(), pid);
            }
        }
    }
    (stem.to_string(), 0)
}

/// The job a span belongs to: its `job_id` field (Gradient's), or `job`
/// (evalbench's older bundles); a number is taken as its text.
pub fn job_key(st: &Stream, s: &Span) -> Option<String> {
    let v = st.field(s, JOB_ID).or_else(|| st.field(s, JOB_LEGACY))?;
    match v {
        serde_json::Value::String(j) => Some(j),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Whether a `job_event` span carries evaluation results.
pub fn is_eval_result(st: &Stream, s: &Span) -> bool {
    matches!(st.field(s, KIND), Some(serde_json::Value::String(k)) if k == EVAL_RESULT)
}

/// The message pairing both alignment and the critical path use: per job,
/// the n-th sender with the n-th receiver, each side in time order (as
/// Gradient's `summarize.py` pairs them). Jobs on one side only give no
/// pair.
pub fn pair_by_job<K: std::hash::Hash + Eq, T: Copy>(
    senders: &HashMap<K, Vec<T>>,
    receivers: &HashMap<K, Vec<T>>,
) -> Vec<(T, T)> {
    let mut out = Vec::new();
    for (job, rs) in receivers {
        let Some(ss) = senders.get(job) else { continue };
        out.extend(ss.iter().copied().zip(rs.iter().copied()));
    }
    out
}

/// An evaluation's status as Gradient's API gives it (`.message.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Status {
    Queued,
    Fetching,
    EvaluatingFlake,
    EvaluatingDerivation,
    Building,
    Waiting,
    Completed,
    Failed,
    Aborted,
}

impl Status {
    pub const ALL: [Status; 9] = [
        Status::Queued,
        Status::Fetching,
        Status::EvaluatingFlake,
        Status::EvaluatingDerivation,
        Status::Building,
        Status::Waiting,
        Status::Completed,
        Status::Failed,
        Status::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "Queued",
            Status::Fetching => "Fetching",
            Status::EvaluatingFlake => "EvaluatingFlake",
            Status::EvaluatingDerivation => "EvaluatingDerivation",
            Status::Building => "Building",
            Status::Waiting => "Waiting",
            Status::Completed => "Completed",
            Status::Failed => "Failed",
            Status::Aborted => "Aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The code Gradient stores (`evaluation.status`; a test of Gradient's fixes
    /// them: Fetching came last, as 8).
    pub fn code(self) -> i64 {
        match self {
            Status::Queued => 0,
            Status::EvaluatingFlake => 1,
            Status::EvaluatingDerivation => 2,
            Status::Building => 3,
            Status::Waiting => 4,
            Status::Completed => 5,
            Status::Failed => 6,
            Status::Aborted => 7,
            Status::Fetching => 8,
        }
    }

    /// The status of a stored code; None for a code Gradient does not have.
    pub fn from_code(code: i64) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.code() == code)
    }

    /// At and after these the evaluation has left EvaluatingDerivation:
    /// where the benchmark stops its clock (Building, Waiting, Completed)
    /// or gives up (Failed, Aborted).
    pub fn left_evaluation(self) -> bool {
        matches!(self, Status::Building | Status::Waiting | Status::Completed | Status::Failed | Status::Aborted)
    }

    /// The statuses an evaluation ends in.
    pub fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Aborted)
    }
}

/// `dispatched_job.kind` as Gradient stores it.
pub fn job_kind_name(code: i64) -> String {
    match code {
        0 => "eval".into(),
        1 => "build".into(),
        other => format!("kind_{other}"),
    }
}

/// `dispatched_job_phase.phase` as Gradient stores it (smallint), named as
/// Gradient's `JobPhase::name_of` names it; 9 is retired but still named
/// for old rows.
pub const JOB_PHASES: [(i64, &str); 19] = [
    (0, "fetch"),
    (1, "push_inputs"),
    (2, "eval_flake"),
    (3, "eval_derivations"),
    (4, "eval_cache_pull"),
    (5, "eval_cache_push"),
    (6, "known_derivations_wait"),
    (7, "drv_closure_push"),
    (8, "prefetch"),
    (9, "substitute_passthrough"),
    (10, "build"),
    (11, "compress"),
    (12, "nar_push"),
    (13, "cache_query_wait"),
    (14, "substitute_fetch"),
    (15, "download"),
    (16, "nar_fetch"),
    (17, "nar_import"),
    (18, "upload_wait"),
];

/// A phase code's name; an unknown code is `unknown_<code>`, as Gradient's
/// inspector writes it.
pub fn job_phase_name(code: i64) -> String {
    JOB_PHASES.iter().find(|(c, _)| *c == code).map_or_else(|| format!("unknown_{code}"), |(_, n)| (*n).to_string())
}

/// A phase name's code, for the lab's worker, which reports phases by name.
pub fn job_phase_code(name: &str) -> Option<i64> {
    JOB_PHASES.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
}

/// The columns of Gradient's `evaluation_metric` table
/// (`gradient-entity/src/evaluation_metric.rs`), in its order.
pub const EVALUATION_METRIC_COLUMNS: [&str; 15] = [
    "id",
    "evaluation",
    "total_thunks",
    "fn_calls",
    "primop_calls",
    "lookups",
    "alloc_bytes",
    "peak_heap_mb",
    "peak_rss_mb",
    "fetch_ms",
    "eval_flake_ms",
    "eval_drv_ms",
    "total_eval_ms",
    "worker_id",
    "created_at",
];

/// Of those, the exact counts of the evaluator's work, each with the nix
/// counter it is (Gradient's worker fills them from nix's statistics): the
/// same work counts the same every time, so they are judged by equality,
/// like nix's own counters, and under nix's names.
pub const EVALUATION_METRIC_COUNTS: [(&str, &str); 5] = [
    ("total_thunks", "nrThunks"),
    ("fn_calls", "nrFunctionCalls"),
    ("primop_calls", "nrPrimOpCalls"),
    ("lookups", "nrLookups"),
    ("alloc_bytes", "gc.totalBytes"),
];
/// Of those, the times (ms) and memory peaks (MiB): judged as measurements.
pub const EVALUATION_METRIC_MEASURES: [&str; 6] =
    ["fetch_ms", "eval_flake_ms", "eval_drv_ms", "total_eval_ms", "peak_heap_mb", "peak_rss_mb"];

/// An `evaluation_metric` row with every column of Gradient's present
/// (null where unknown), from a row of another schema (the lab's: `flake_ms`,
/// `derivations_ms`, `total_ms`, `eval_peak_rss_kb`, `recorded_at`; it knows
/// no worker id) and nix's counters of
/// the evaluation: what `evaluation_metric.json` holds, Gradient's keys
/// with Gradient's meaning and the row's own keys beside them.
pub fn evaluation_metric_row(
    row: &serde_json::Value,
    evaluation: Option<&str>,
    nix: Option<&serde_json::Value>,
) -> serde_json::Value {
    use serde_json::Value;
    let mut out = row.as_object().cloned().unwrap_or_default();
    let num = |v: Option<&Value>| v.and_then(Value::as_f64);
    let from_row = |k: &str| num(row.get(k));
    let from_nix = |k: &str| num(nix.and_then(|n| n.get(k)));
    let whole = |v: Option<f64>| v.map_or(Value::Null, |v| Value::from(v.round() as i64));
    let mb = |v: Option<f64>, per: f64| v.map_or(Value::Null, |v| Value::from((v / per).round() as i64));
    let counts = EVALUATION_METRIC_COUNTS.map(|(column, counter)| (column, whole(from_nix(counter))));
    let filled: [(&str, Value); 10] = [
        ("id", row.get("id").cloned().unwrap_or_else(|| evaluation.map_or(Value::Null, Value::from))),
        ("evaluation", row.get("evaluation").cloned().unwrap_or_else(|| evaluation.map_or(Value::Null, Value::from))),
        ("peak_heap_mb", mb(from_nix("gc.heapSize"), 1024.0 * 1024.0)),
        ("peak_rss_mb", mb(from_row("eval_peak_rss_kb"), 1024.0)),
        ("fetch_ms", whole(from_row("fetch_ms"))),
        ("eval_flake_ms", whole(from_row("flake_ms"))),
        ("eval_drv_ms", whole(from_row("derivations_ms"))),
        ("total_eval_ms", whole(from_row("total_ms"))),
        ("worker_id", row.get("worker").cloned().unwrap_or(Value::Null)),
        ("created_at", row.get("created_at").or_else(|| row.get("recorded_at")).cloned().unwrap_or(Value::Null)),
    ];
    for (k, v) in counts.into_iter().chain(filled) {
        // A row already in Gradient's schema keeps its own values (a null is none).
        match out.get(k) {
            Some(own) if !own.is_null() => {}
            _ => {
                out.insert(k.to_string(), v);
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_batch_step_is_a_server_span_of_the_contract() {
        for step in BatchStep::ALL {
            assert!(SPANS.iter().any(|(p, n, _)| *p == process::SERVER && *n == step.name()), "{step:?}");
        }
    }

    #[test]
    fn both_file_name_forms_give_process_and_pid() {
        assert_eq!(span_file_identity("server-11.jsonl"), ("server".into(), 11));
        assert_eq!(span_file_identity("server.11.jsonl"), ("server".into(), 11));
        assert_eq!(span_file_identity("eval-worker-7.jsonl"), ("eval-worker".into(), 7));
        assert_eq!(span_file_identity("odd.jsonl"), ("odd".into(), 0));
        assert_eq!(span_file_identity(&span_file_name("worker", 22)), ("worker".into(), 22));
    }

    #[test]
    fn phase_codes_are_named_both_ways() {
        for (code, name) in JOB_PHASES {
            assert_eq!(job_phase_name(code), name);
            assert_eq!(job_phase_code(name), Some(code));
        }
        assert_eq!(job_phase_name(99), "unknown_99");
    }

    #[test]
    fn a_lab_row_gets_every_column_of_gradient_s() {
        let row = serde_json::json!({"evaluation": "e1", "fetch_ms": 12, "flake_ms": 30, "derivations_ms": 400,
            "total_ms": 450, "eval_peak_rss_kb": 204800});
        let nix = serde_json::json!({"nrThunks": 10.0, "nrFunctionCalls": 20.0, "nrPrimOpCalls": 5.0, "nrLookups":
            7.0, "gc.totalBytes": 1e6, "gc.heapSize": 4194304.0});
        let m = evaluation_metric_row(&row, Some("e1"), Some(&nix));
        for c in EVALUATION_METRIC_COLUMNS {
            assert!(m.get(c).is_some(), "{c}");
        }
        assert_eq!(
            (m["fn_calls"].as_i64(), m["eval_drv_ms"].as_i64(), m["peak_rss_mb"].as_i64(), m["peak_heap_mb"].as_i64()),
            (Some(20), Some(400), Some(200), Some(4))
        );
        assert_eq!(m["derivations_ms"], 400, "the row's own keys stay");
        let g = serde_json::json!({"fn_calls": 3, "eval_drv_ms": 9});
        assert_eq!(evaluation_metric_row(&g, None, Some(&nix))["fn_calls"], 3, "Gradient's own values are kept");
    }

    #[test]
    fn statuses_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert!(Status::Building.left_evaluation() && !Status::EvaluatingDerivation.left_evaluation());
    }
}
