//! One worker's `/proto` connection: requests answered here, reports queued
//! behind each other (their wait is `job_event.queue_wait_us`) and handled
//! in order by a task of their own.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug_span, Instrument};

use evalbench_bundle::contract::Status;

use super::db::set_status;
use super::graph::Batch;
use super::Shared;
use crate::msg::{encode, ToServer, ToWorker};

const SCHED: &str = "gradient_server::scheduler";
const JOBS: &str = "gradient_server::jobs";
const GRAPH: &str = "gradient_graph::writer";
const WALKS: &str = "gradient_graph::walks";

pub async fn handle(s: Arc<Shared>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<ToWorker>();
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if sink.send(Message::Binary(encode(&m).into())).await.is_err() {
                break;
            }
        }
    });
    let (report_tx, report_rx) = mpsc::unbounded_channel::<(Instant, ToServer)>();
    let mut worker = String::new();
    let reports = tokio::spawn(reports(s.clone(), report_rx));
    while let Some(Ok(frame)) = stream.next().await {
        let data = match frame {
            Message::Binary(b) => b.to_vec(),
            Message::Text(t) => t.as_bytes().to_vec(),
            Message::Close(_) => break,
            _ => continue,
        };
        let received = Instant::now();
        let msg: ToServer = match serde_json::from_slice(&data) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("lab server: bad /proto message from {worker:?}: {e}");
                continue;
            }
        };
        match msg {
            ToServer::Hello { worker: w } => {
                worker = w;
                s.workers.lock().await.insert(worker.clone(), tx.clone());
                s.wake.notify_one();
            }
            ToServer::Scores { scores } => on_scores(&s, &worker, scores).await,
            ToServer::RequestJob => on_request_job(&s, &worker, &tx).await,
            ToServer::Phase { job, phase } => on_phase(&s, &worker, &job, &phase).await,
            ToServer::Known { id, drvs } => {
                let span = debug_span!(target: JOBS, "known_derivations", asked = drvs.len(), known = tracing::field::Empty);
                let known = async {
                    s.db.query("SELECT drv_path FROM derivation WHERE drv_path = ANY($1) AND walked", &[&drvs])
                        .await
                        .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>())
                        .unwrap_or_default()
                }
                .instrument(span.clone())
                .await;
                span.record("known", known.len());
                drop(span);
                let _ = tx.send(ToWorker::KnownReply { id, known });
            }
            report @ (ToServer::EvalResult { .. } | ToServer::EvalDone { .. } | ToServer::EvalFailed { .. }) => {
                let _ = report_tx.send((received, report));
            }
        }
    }
    drop(report_tx);
    let _ = reports.await;
    s.workers.lock().await.remove(&worker);
    writer.abort();
    // A job still in hand when the worker goes fails its evaluation, rather than hang.
    if let Ok(rows) = s.db.query("UPDATE job SET state = 'lost' WHERE worker = $1 AND state = 'dispatched' RETURNING evaluation", &[&worker]).await {
        for r in rows {
            let e: uuid::Uuid = r.get(0);
            let msg = format!("worker {worker} disconnected during the job");
            set_status(&s.db, e, Status::Failed, Some(&msg)).await.logged("setting the evaluation's status");
        }
    }
}

async fn on_scores(s: &Shared, worker: &str, scores: Vec<(String, i32)>) {
    async {
        async {
            for (job, score) in &scores {
                if let Ok(j) = uuid::Uuid::parse_str(job) {
                    s.db.execute("INSERT INTO worker_score (job, worker, score) VALUES ($1, $2, $3)", &[&j, &worker, score])
                        .await
                        .logged("recording a worker's score");
                }
            }
        }
        .instrument(debug_span!(target: SCHED, "record_scores", count = scores.len()))
        .await
    }
    .instrument(debug_span!(target: SCHED, "on_request_job_chunk", worker))
    .await
}

async fn on_request_job(s: &Shared, worker: &str, tx: &mpsc::UnboundedSender<ToWorker>) {
    let outer = debug_span!(target: SCHED, "on_request_job", worker, kind = tracing::field::Empty, job_id = tracing::field::Empty);
    let named = outer.clone();
    async {
        async {
            let claimed =
                s.db.query_opt(
                    "UPDATE job SET state = 'dispatched', worker = $1, dispatched_at = clock_timestamp() WHERE id = \
                     (SELECT id FROM job WHERE state = 'queued' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) \
                     RETURNING id, evaluation",
                    &[&worker],
                )
                .instrument(debug_span!(target: SCHED, "claim_dispatch", worker))
                .await;
            let Ok(Some(row)) = claimed else {
                let _ = tx.send(ToWorker::NoJob);
                return;
            };
            let (job, evaluation): (uuid::Uuid, uuid::Uuid) = (row.get(0), row.get(1));
            let job_s = job.to_string();
            // As Gradient's: on_request_job names the job it handed out and its kind.
            named.record("kind", "eval");
            named.record("job_id", job_s.as_str());
            {
                let _c = debug_span!(target: SCHED, "send_credentials", job_id = job_s.as_str()).entered();
                let _ = tx.send(ToWorker::Credentials { job: job_s.clone(), token: format!("lab-{}", &job_s[..8]) });
            }
            let repository = s.provision.repository.clone();
            set_status(&s.db, evaluation, Status::Fetching, None).await.logged("setting the evaluation's status");
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

/// A database write whose failure the server does not stop for: said on
/// the server's stderr (the lab's logs/server.log), never dropped.
trait Logged {
    fn logged(self, what: &str);
}

impl<T, E: std::fmt::Display> Logged for Result<T, E> {
    fn logged(self, what: &str) {
        if let Err(e) = self {
            eprintln!("lab server: {what}: {e}");
        }
    }
}

/// Ends the job's open phase (a new phase, the end of the job, or its failure).
async fn end_phase(s: &Shared, job: uuid::Uuid) {
    s.db.execute(
        "UPDATE dispatched_job_phase p SET ended_at = clock_timestamp(), \
         end_ms = (extract(epoch FROM clock_timestamp() - j.dispatched_at) * 1000)::int8 \
         FROM job j WHERE j.id = p.dispatched_job AND p.dispatched_job = $1 AND p.ended_at IS NULL",
        &[&job],
    )
    .await
    .logged("ending the job's phase");
}

async fn evaluation_of(s: &Shared, job: &str) -> Option<(uuid::Uuid, uuid::Uuid)> {
    let j = uuid::Uuid::parse_str(job).map_err(|e| eprintln!("lab server: a report names job {job:?}, not a job id: {e}")).ok()?;
    let row =
        s.db.query_opt("SELECT evaluation FROM job WHERE id = $1", &[&j])
            .await
            .map_err(|e| eprintln!("lab server: finding job {job}'s evaluation: {e}"))
            .ok()??;
    Some((j, row.get(0)))
}

async fn on_phase(s: &Shared, worker: &str, job: &str, phase: &str) {
    let Some((j, e)) = evaluation_of(s, job).await else {
        return;
    };
    end_phase(s, j).await;
    // Gradient's code for the phase; the lab's worker names its three as its own messages do.
    let code = lab_phase_code(phase);
    s.db.execute(
        "INSERT INTO dispatched_job_phase (dispatched_job, seq, phase, start_ms, worker, phase_name) \
         SELECT $1, (SELECT count(*)::int FROM dispatched_job_phase WHERE dispatched_job = $1), $2, \
                (extract(epoch FROM clock_timestamp() - j.dispatched_at) * 1000)::int8, $3, $4 FROM job j WHERE j.id = $1",
        &[&j, &code, &worker, &phase],
    )
    .await
    .logged("recording the job's phase");
    let status = match phase {
        "fetching" => Status::Fetching,
        "evaluating_flake" => Status::EvaluatingFlake,
        "evaluating_derivations" => Status::EvaluatingDerivation,
        _ => return,
    };
    set_status(&s.db, e, status, None).await.logged("setting the evaluation's status");
}

/// Reports of one worker, in arrival order.
async fn reports(s: Arc<Shared>, mut rx: mpsc::UnboundedReceiver<(Instant, ToServer)>) {
    while let Some((received, report)) = rx.recv().await {
        let wait = received.elapsed().as_micros() as u64;
        let (job, kind) = match &report {
            ToServer::EvalResult { job, .. } => (job.clone(), "eval_result"),
            ToServer::EvalDone { job, .. } => (job.clone(), "eval_done"),
            ToServer::EvalFailed { job, .. } => (job.clone(), "eval_failed"),
            _ => continue,
        };
        let span = debug_span!(target: JOBS, "job_event", job_id = job.as_str(), kind, queue_wait_us = wait);
        handle_report(&s, &job, report).instrument(span).await;
    }
}

async fn handle_report(s: &Shared, job: &str, report: ToServer) {
    let Some((j, evaluation)) = evaluation_of(s, job).await else {
        return;
    };
    match report {
        ToServer::EvalResult { drvs, .. } => {
            async {
                let paths: Vec<String> = drvs.iter().map(|d| d.path.clone()).collect();
                let _cached =
                    s.db.query("SELECT drv_path FROM build WHERE drv_path = ANY($1) AND status = 'Completed'", &[&paths])
                        .instrument(debug_span!(target: JOBS, "assess_cached", drvs = paths.len()))
                        .await;
                let (done_tx, done_rx) = oneshot::channel();
                let rows = drvs.len();
                async {
                    // A send to a writer that is gone drops done_tx: done_rx says so below.
                    let _ = s.graph.send(Batch { evaluation, drvs, done: done_tx });
                    match done_rx.await {
                        Ok(Err(e)) => {
                            set_status(&s.db, evaluation, Status::Failed, Some(&format!("recording derivations: {e}")))
                                .await
                                .logged("setting the evaluation's status");
                        }
                        // The graph writer is gone (it ended on an error it said): the
                        // evaluation cannot complete, so it fails rather than hang.
                        Err(_) => set_status(&s.db, evaluation, Status::Failed, Some("recording derivations: the graph writer is gone"))
                            .await
                            .logged("setting the evaluation's status"),
                        Ok(Ok(_)) => {}
                    }
                }
                .instrument(debug_span!(target: GRAPH, "record", job_id = job, rows))
                .await;
            }
            .instrument(debug_span!(target: JOBS, "handle_eval_result", job_id = job, drvs = tracing::field::Empty))
            .await
        }
        ToServer::EvalDone { metric, roots, .. } => {
            async {
                end_phase(s, j).await;
                s.db.execute("UPDATE job SET state = 'done' WHERE id = $1", &[&j]).await.logged("marking the job done");
                // The closure before Building: what is built is what it holds,
                // so the walk is part of the evaluation's time, as in Gradient.
                if let Err(e) = record_closure(s, evaluation, &roots).await {
                    set_status(&s.db, evaluation, Status::Failed, Some(&format!("recording the evaluation's closure: {e}"))).await.logged("setting the evaluation's status");
                    return;
                }
                set_status(&s.db, evaluation, Status::Building, None).await.logged("setting the evaluation's status");
                let n = |k: &str| metric.get(k).and_then(|v| v.as_i64());
                let count = |k: &str| metric.get("counts").and_then(|c| c.get(k)).and_then(|v| v.as_i64());
                // Every derivation the worker walked, known to the server or not.
                let derivations = n("derivations").unwrap_or(0);
                let new = s
                    .db
                    .query_one("SELECT count(*) FROM derivation WHERE first_evaluation = $1", &[&evaluation])
                    .await
                    .map(|r| r.get::<_, i64>(0))
                    .map_err(|e| eprintln!("lab server: counting the evaluation's new derivations (left NULL): {e}"))
                    .ok();
                s.db
                    .execute(
                        "INSERT INTO evaluation_metric (evaluation, fetch_ms, flake_ms, derivations_ms, total_ms, eval_peak_rss_kb, attrs, derivations, new_derivations, drvs_written, \
                         total_thunks, fn_calls, primop_calls, lookups, alloc_bytes) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7::int8::int4, $8::int8::int4, $9::int8::int4, $10::int8::int4, $11, $12, $13, $14, $15) ON CONFLICT (evaluation) DO NOTHING",
                        &[
                            &evaluation,
                            &n("fetch_ms"),
                            &n("flake_ms"),
                            &n("derivations_ms"),
                            &n("total_ms"),
                            &n("eval_peak_rss_kb"),
                            &n("attrs"),
                            &derivations,
                            &new,
                            &n("drvs_written"),
                            &count("total_thunks"),
                            &count("fn_calls"),
                            &count("primop_calls"),
                            &count("lookups"),
                            &count("alloc_bytes"),
                        ],
                    )
                    .await
                    .logged("recording the evaluation's metric");
                // The lab builds nothing: an evaluated project is complete.
                set_status(&s.db, evaluation, Status::Completed, None).await.logged("setting the evaluation's status");
            }
            .instrument(debug_span!(target: JOBS, "eval_stream_completed", job_id = job))
            .await
        }
        ToServer::EvalFailed { attr, message, .. } => {
            end_phase(s, j).await;
            s.db.execute("UPDATE job SET state = 'failed' WHERE id = $1", &[&j]).await.logged("marking the job failed");
            let msg = match attr {
                Some(a) => format!("{a}: {message}"),
                None => message,
            };
            set_status(&s.db, evaluation, Status::Failed, Some(&msg)).await.logged("setting the evaluation's status");
        }
        _ => {}
    }
}

/// The evaluation's entry points, then its closure by the one recursive walk
/// (`walks::record_eval_closure`, in the form the lab was started with).
async fn record_closure(s: &Shared, evaluation: uuid::Uuid, roots: &[String]) -> Result<(), tokio_postgres::Error> {
    s.db.execute(
        "INSERT INTO entry_point (evaluation, derivation) SELECT $1, id FROM derivation WHERE drv_path = ANY($2) ON CONFLICT DO NOTHING",
        &[&evaluation, &roots],
    )
    .instrument(debug_span!(target: WALKS, "record_entry_points", roots = roots.len()))
    .await?;
    let span = debug_span!(target: WALKS, "eval_closure", form = s.graph_walk.as_str(), derivations = tracing::field::Empty);
    let n: i64 = s.db.query_one(&super::walks::record_eval_closure(s.graph_walk), &[&evaluation]).instrument(span.clone()).await?.get(0);
    span.record("derivations", n);
    Ok(())
}
