//! The graph writer: derivations arrive in batches through a mailbox and are
//! committed together, one transaction per flush. `record` (the sender's
//! span) minus `flush` is a batch's wait in the mailbox. The statements are
//! the store's; the spans, at the places Gradient's writer has them, here.

use std::sync::{Arc, LazyLock};

use evalbench_bundle::contract::BatchStep;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Client;
use tracing::{debug_span, Instrument};

use super::error::GraphError;
use super::store;
use crate::msg::Drv;

const T: &str = "gradient_graph::writer";

pub struct Batch {
    pub evaluation: uuid::Uuid,
    pub drvs: Vec<Drv>,
    pub done: oneshot::Sender<Result<usize, GraphError>>,
}

/// Each step of a batch with its statement, made once.
static STEPS: LazyLock<Vec<(BatchStep, String)>> =
    LazyLock::new(|| BatchStep::ALL.iter().map(|&s| (s, store::batch_step_sql(s))).collect());

pub async fn run(mut db: Client, mut rx: mpsc::UnboundedReceiver<Batch>) {
    while let Some(first) = rx.recv().await {
        let mut batches = vec![first];
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        let rows: usize = batches.iter().map(|b| b.drvs.len()).sum();
        let result =
            flush(&mut db, &batches).instrument(debug_span!(target: T, "flush", batches = batches.len(), rows)).await;
        let span = debug_span!(target: T, "after_commit", batches = batches.len());
        let _e = span.enter();
        for b in batches {
            let n = b.drvs.len();
            let _ = b.done.send(result.clone().map(|_| n));
        }
    }
}

async fn flush(db: &mut Client, batches: &[Batch]) -> Result<(), GraphError> {
    const ATTEMPTS: u32 = 3;
    // Only a serialization failure or deadlock is worth another try.
    let retried = |e: &tokio_postgres::Error| e.code().is_some_and(|c| c.code() == "40001" || c.code() == "40P01");
    let mut attempt = 1;
    loop {
        match transact_once(db, batches).instrument(debug_span!(target: T, "transact_once", attempt)).await {
            Ok(()) => return Ok(()),
            Err(e) if retried(&e) && attempt < ATTEMPTS => attempt += 1,
            Err(e) if retried(&e) => return Err(GraphError::GaveUp { attempts: ATTEMPTS, last: Arc::new(e) }),
            Err(e) => return Err(GraphError::Failed(Arc::new(e))),
        }
    }
}

async fn transact_once(db: &mut Client, batches: &[Batch]) -> Result<(), tokio_postgres::Error> {
    let tx = db.transaction().await?;
    let rows: usize = batches.iter().map(|b| b.drvs.len()).sum();
    async {
        for b in batches {
            for d in &b.drvs {
                store::record_derivation(&tx, b.evaluation, d)
                    .instrument(debug_span!(target: T, "record_one", drv = d.path.as_str()))
                    .await?;
            }
            let paths: Vec<&str> = b.drvs.iter().map(|d| d.path.as_str()).collect();
            async {
                for (step, sql) in STEPS.iter() {
                    tx.execute(sql.as_str(), &[&b.evaluation, &paths]).instrument(step.span()).await?;
                }
                Ok::<(), tokio_postgres::Error>(())
            }
            .instrument(debug_span!(target: T, "advance_can_start", rows = paths.len()))
            .await?;
        }
        Ok::<(), tokio_postgres::Error>(())
    }
    .instrument(debug_span!(target: T, "apply_batch", rows))
    .await?;
    tx.commit().instrument(debug_span!(target: T, "commit_one", batches = batches.len())).await
}
