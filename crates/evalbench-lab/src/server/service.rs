//! The server's service: what a request or a worker's message does: an
//! evaluation queued, a job claimed and handed out, its phases and reports
//! recorded, the evaluation moved through its statuses to its end. Each
//! step runs inside the span the benchmark's contract names for it
//! (`contract::SPANS`: the critical path reads the hand-offs and waits by
//! those names). It runs the store's statements and sends the worker its
//! messages through a channel; the WebSocket and HTTP are the transport's.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tracing::{debug_span, Instrument};
use uuid::Uuid;

use evalbench_bundle::contract::Status;

use super::error::{Logged, ServerError};
use super::graph::Batch;
use super::store::{EvaluationRow, JobEnd, Metric};
use super::Shared;
use crate::msg::{Drv, ToWorker};

const SCHED: &str = "gradient_server::scheduler";
const JOBS: &str = "gradient_server::jobs";
const GRAPH: &str = "gradient_graph::writer";
const WALKS: &str = "gradient_graph::walks";

/// `POST .../evaluate`: a new evaluation of the key's project, Queued
/// (None: the key's organization has no such project).
pub async fn queue_evaluation(s: &Shared, org_id: i64, org: &str, project: &str) -> Result<Option<Uuid>, ServerError> {
    let Some(project_id) = s.store.project_id(org, project, org_id).await? else {
        return Ok(None);
    };
    let id = Uuid::new_v4();
    s.store.queue_evaluation(id, project_id).await?;
    s.wake.notify_one();
    // The commit it evaluates, as Gradient records one (read from the repository's files, off no process).
    if let Some(hash) = super::report::head_commit(std::path::Path::new(&s.provision.repository)) {
        s.store.record_commit(id, &hash).await.logged();
    }
    Ok(Some(id))
}

/// `GET evals/{id}/report`: the diagnostic report's bytes (None: no such evaluation).
pub async fn report(s: &Shared, id: Uuid, opts: super::report::Options) -> Result<Option<Vec<u8>>, ServerError> {
    let rows = s.store.report_rows(id).await?;
    let version = concat!("evalbench-lab ", env!("CARGO_PKG_VERSION"));
    Ok(super::report::write(&rows, &id.to_string(), opts, version)?)
}

/// `GET evals/{id}`: the evaluation and its statuses in order.
pub async fn evaluation(s: &Shared, id: Uuid) -> Result<Option<(EvaluationRow, Vec<(String, i64)>)>, ServerError> {
    let Some(row) = s.store.evaluation(id).await? else {
        return Ok(None);
    };
    Ok(Some((row, s.store.timeline(id).await?)))
}

/// Of the derivations a worker asks about, those the server has recorded.
pub async fn known_derivations(s: &Shared, drvs: Vec<String>) -> Result<Vec<String>, ServerError> {
    let span = debug_span!(target: JOBS, "known_derivations", asked = drvs.len(), known = tracing::field::Empty);
    let known = s.store.walked_among(&drvs).instrument(span.clone()).await?;
    span.record("known", known.len());
    Ok(known)
}

/// A worker gone with a job still in hand fails its evaluation, rather than hang.
pub async fn worker_gone(s: &Shared, worker: &str) -> Result<(), ServerError> {
    for e in s.store.lose_jobs_of(worker).await? {
        let msg = format!("worker {worker} disconnected during the job");
        s.store.set_status(e, Status::Failed, Some(&msg)).await.logged();
    }
    Ok(())
}

pub async fn record_scores(s: &Shared, worker: &str, scores: Vec<(String, i32)>) {
    async {
        async {
            for (job, score) in &scores {
                if let Ok(j) = Uuid::parse_str(job) {
                    s.store.record_score(j, worker, *score).await.logged();
                }
            }
        }
        .instrument(debug_span!(target: SCHED, "record_scores", count = scores.len()))
        .await
    }
    .instrument(debug_span!(target: SCHED, "on_request_job_chunk", worker))
    .await
}

/// A worker asks for work: the oldest queued job is claimed for it, its
/// credentials sent, its evaluation set Fetching, and the job assigned.
pub async fn request_job(s: &Shared, worker: &str, tx: &mpsc::UnboundedSender<ToWorker>) {
    let outer = debug_span!(target: SCHED, "on_request_job", worker, kind = tracing::field::Empty, job_id =
        tracing::field::Empty);
    let named = outer.clone();
    async {
        async {
            let claimed =
                s.store.claim_job(worker).instrument(debug_span!(target: SCHED, "claim_dispatch", worker)).await;
            // No job to hand out, or none that could be claimed (said).
            let Some((job, evaluation)) = claimed.logged().flatten() else {
                let _ = tx.send(ToWorker::NoJob);
                return;
            };
            let job_s = job.to_string();
            // As Gradient's: on_request_job names the job it handed out and its kind.
            named.record("kind", "eval");
            named.record("job_id", job_s.as_str());
            {
                let _c = debug_span!(target: SCHED, "send_credentials", job_id = job_s.as_str()).entered();
                let _ = tx.send(ToWorker::Credentials { job: job_s.clone(), token: format!("lab-{}", &job_s[..8]) });
            }
            let repository = s.provision.repository.clone();
            s.store.set_status(evaluation, Status::Fetching, None).await.logged();
            // The send is the last thing in assign_job: its end stands for the send time.
            let _a = debug_span!(target: SCHED, "assign_job", job_id = job_s.as_str(), worker).entered();
            let _ = tx.send(ToWorker::Assign { job: job_s.clone(), evaluation: evaluation.to_string(), repository });
        }
        .instrument(debug_span!(target: SCHED, "request_job", worker))
        .await
    }
    .instrument(outer)
    .await
}

/// The lab worker's phase names as Gradient's `JobPhase` codes
/// (`contract::JOB_PHASES`): fetching is `fetch`, evaluating the flake
/// `eval_flake`, evaluating derivations `eval_derivations`.
fn lab_phase_code(phase: &str) -> i16 {
    let gradient = match phase {
        "fetching" => "fetch",
        "evaluating_flake" => "eval_flake",
        "evaluating_derivations" => "eval_derivations",
        other => other,
    };
    evalbench_bundle::contract::job_phase_code(gradient).and_then(|c| i16::try_from(c).ok()).unwrap_or(-1)
}

/// The job a report or phase names, and its evaluation.
async fn job_of(s: &Shared, job: &str) -> Result<(Uuid, Uuid), ServerError> {
    let j = Uuid::parse_str(job).map_err(|source| ServerError::NotAJob { job: job.to_string(), source })?;
    let evaluation = s.store.evaluation_of_job(j).await?.ok_or(ServerError::UnknownJob(j))?;
    Ok((j, evaluation))
}

/// A job's new phase: the open one ended, the new one recorded, and the
/// evaluation's status moved to match.
pub async fn phase(s: &Shared, worker: &str, job: &str, phase: &str) -> Result<(), ServerError> {
    let (j, e) = job_of(s, job).await?;
    s.store.end_phase(j).await.logged();
    // Gradient's code for the phase; the lab's worker names its three as its own messages do.
    s.store.record_phase(j, lab_phase_code(phase), worker, phase).await.logged();
    let status = match phase {
        "fetching" => Status::Fetching,
        "evaluating_flake" => Status::EvaluatingFlake,
        "evaluating_derivations" => Status::EvaluatingDerivation,
        _ => return Ok(()),
    };
    s.store.set_status(e, status, None).await
}

/// A batch of derivations, recorded by the graph writer; the evaluation
/// fails when they cannot be.
pub async fn eval_result(s: &Shared, job: &str, drvs: Vec<Drv>) -> Result<(), ServerError> {
    let (_, evaluation) = job_of(s, job).await?;
    async {
        let paths: Vec<String> = drvs.iter().map(|d| d.path.clone()).collect();
        s.store
            .built_among(&paths)
            .instrument(debug_span!(target: JOBS, "assess_cached", drvs = paths.len()))
            .await
            .logged();
        let (done_tx, done_rx) = oneshot::channel();
        let rows = drvs.len();
        async {
            // A send to a writer that is gone drops done_tx: done_rx says so below.
            let _ = s.graph.send(Batch { evaluation, drvs, done: done_tx });
            let failed = match done_rx.await {
                Ok(Ok(_)) => return,
                Ok(Err(e)) => ServerError::Graph(e),
                // The graph writer is gone (it ended on an error it said): the
                // evaluation cannot complete, so it fails rather than hang.
                Err(_) => ServerError::WriterGone,
            };
            s.store
                .set_status(evaluation, Status::Failed, Some(&format!("recording derivations: {failed}")))
                .await
                .logged();
        }
        .instrument(debug_span!(target: GRAPH, "record", job_id = job, rows))
        .await;
    }
    .instrument(debug_span!(target: JOBS, "handle_eval_result", job_id = job, drvs = tracing::field::Empty))
    .await;
    Ok(())
}

/// The worker's figures, as its `EvalDone` message holds them.
fn metric(reported: &serde_json::Value, new_derivations: Option<i64>) -> Metric {
    let n = |k: &str| reported.get(k).and_then(|v| v.as_i64());
    let count = |k: &str| reported.get("counts").and_then(|c| c.get(k)).and_then(|v| v.as_i64());
    Metric {
        fetch_ms: n("fetch_ms"),
        flake_ms: n("flake_ms"),
        derivations_ms: n("derivations_ms"),
        total_ms: n("total_ms"),
        eval_peak_rss_kb: n("eval_peak_rss_kb"),
        attrs: n("attrs"),
        // Every derivation the worker walked, known to the server or not.
        derivations: n("derivations").unwrap_or(0),
        new_derivations,
        drvs_written: n("drvs_written"),
        counts: ["total_thunks", "fn_calls", "primop_calls", "lookups", "alloc_bytes"].map(count),
    }
}

/// The evaluation's end: its closure walked, its figures recorded, Completed
/// (the lab builds nothing).
pub async fn eval_done(
    s: &Shared,
    job: &str,
    reported: serde_json::Value,
    roots: Vec<String>,
) -> Result<(), ServerError> {
    let (j, evaluation) = job_of(s, job).await?;
    async {
        s.store.end_phase(j).await.logged();
        s.store.end_job(j, JobEnd::Done).await.logged();
        // The closure before Building: what is built is what it holds,
        // so the walk is part of the evaluation's time, as in Gradient.
        if let Err(e) = record_closure(s, evaluation, &roots).await {
            // The error names the step: recording the entry points, or the closure.
            s.store.set_status(evaluation, Status::Failed, Some(&e.to_string())).await.logged();
            return;
        }
        s.store.set_status(evaluation, Status::Building, None).await.logged();
        let new = s.store.count_new_derivations(evaluation).await;
        if let Err(e) = &new {
            eprintln!("lab server: {e} (left NULL)");
        }
        s.store.record_metric(evaluation, &metric(&reported, new.ok())).await.logged();
        s.store.set_status(evaluation, Status::Completed, None).await.logged();
    }
    .instrument(debug_span!(target: JOBS, "eval_stream_completed", job_id = job))
    .await;
    Ok(())
}

/// The evaluation failed in the worker: the job ends, the evaluation fails with its message.
pub async fn eval_failed(s: &Shared, job: &str, attr: Option<String>, message: String) -> Result<(), ServerError> {
    let (j, evaluation) = job_of(s, job).await?;
    s.store.end_phase(j).await.logged();
    s.store.end_job(j, JobEnd::Failed).await.logged();
    let msg = match attr {
        Some(a) => format!("{a}: {message}"),
        None => message,
    };
    s.store.set_status(evaluation, Status::Failed, Some(&msg)).await
}

/// The evaluation's entry points, then its closure by the one recursive walk
/// (`walks::record_eval_closure`, in the form the lab was started with).
async fn record_closure(s: &Shared, evaluation: Uuid, roots: &[String]) -> Result<(), ServerError> {
    s.store
        .record_entry_points(evaluation, roots)
        .instrument(debug_span!(target: WALKS, "record_entry_points", roots = roots.len()))
        .await?;
    let span =
        debug_span!(target: WALKS, "eval_closure", form = s.graph_walk.as_str(), derivations = tracing::field::Empty);
    let n = s.store.record_closure(evaluation, s.graph_walk).instrument(span.clone()).await?;
    span.record("derivations", n);
    Ok(())
}

/// The scheduler's half of a tick: a job for each queued evaluation without one.
pub async fn create_jobs(s: &Arc<Shared>) -> Result<usize, ServerError> {
    let queued = s.store.queued_without_job().await?;
    for evaluation in &queued {
        s.store.create_job(*evaluation).await?;
    }
    Ok(queued.len())
}
