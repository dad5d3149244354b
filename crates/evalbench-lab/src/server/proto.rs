//! The transport of one worker's `/proto` connection: frames decoded and
//! dispatched to the service. Requests are answered here; reports are queued
//! behind each other (their wait is `job_event.queue_wait_us`) and handled
//! in order by a task of their own. A service step's error is said on the
//! server's stderr; the connection goes on.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::ws::{Message, WebSocket};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tracing::{debug_span, Instrument};

use super::error::Logged;
use super::{service, Shared};
use crate::msg::{encode, ToServer, ToWorker};

const JOBS: &str = "gradient_server::jobs";

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
            ToServer::Scores { scores } => service::record_scores(&s, &worker, scores).await,
            ToServer::RequestJob => service::request_job(&s, &worker, &tx).await,
            ToServer::Phase { job, phase } => {
                service::phase(&s, &worker, &job, &phase).await.logged();
            }
            ToServer::Known { id, drvs } => {
                // The worker waits for a reply: a failed read answers "none known", and is said.
                let known = service::known_derivations(&s, drvs).await;
                let known = known.map_err(|e| eprintln!("lab server: {e} (answered: none known)")).unwrap_or_default();
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
    service::worker_gone(&s, &worker).await.logged();
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
        let handled = async {
            match report {
                ToServer::EvalResult { drvs, .. } => service::eval_result(&s, &job, drvs).await,
                ToServer::EvalDone { metric, roots, .. } => service::eval_done(&s, &job, metric, roots).await,
                ToServer::EvalFailed { attr, message, .. } => service::eval_failed(&s, &job, attr, message).await,
                _ => Ok(()),
            }
        };
        handled.instrument(span).await.logged();
    }
}
