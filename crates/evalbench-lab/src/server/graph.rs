//! The graph writer: derivations arrive in batches through a mailbox and are
//! committed together, one transaction per flush. `record` (the sender's
//! span) minus `flush` is a batch's wait in the mailbox.

use std::sync::LazyLock;

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::Client;
use tracing::{debug_span, Instrument};

use crate::msg::Drv;

const T: &str = "gradient_graph::writer";

pub struct Batch {
    pub evaluation: uuid::Uuid,
    pub drvs: Vec<Drv>,
    pub done: oneshot::Sender<Result<usize, String>>,
}

/// The statements run for every batch, in order, with the evaluation and
/// the batch's paths; the graph's own parts are `walks`'.
static STEPS: LazyLock<[(&str, String); 7]> = LazyLock::new(|| {
    use super::walks::{ready, DEPENDENCIES};
    [
        ("lock_seed_shared_builds", "SELECT id FROM build WHERE evaluation = $1 AND drv_path = ANY($2) FOR UPDATE".into()),
        ("became_fetchable", "UPDATE build SET status = 'Fetchable' WHERE evaluation = $1 AND drv_path = ANY($2) AND status = 'Queued'".into()),
        (
            "seed_blocking_deps",
            format!(
                "INSERT INTO build (evaluation, drv_path, status) SELECT $1, d.drv_path, 'Queued' FROM {DEPENDENCIES} \
                 WHERE p.drv_path = ANY($2) ON CONFLICT (evaluation, drv_path) DO NOTHING"
            ),
        ),
        ("promote", format!("UPDATE build b SET can_start = true WHERE b.evaluation = $1 AND b.drv_path = ANY($2) AND {}", ready("b"))),
        ("unpromote_ungated", "UPDATE build SET can_start = false WHERE evaluation = $1 AND drv_path = ANY($2) AND status = 'Blocked'".into()),
        ("emit_transition_effects", "SELECT count(*) FROM build WHERE evaluation = $1 AND drv_path = ANY($2) AND can_start".into()),
        ("move_batch_need", "UPDATE evaluation SET updated_at = clock_timestamp() WHERE id = $1 AND cardinality($2::text[]) >= 0".into()),
    ]
});

/// Span names are static in `tracing`: one arm per step.
fn step_span(step: &str) -> tracing::Span {
    match step {
        "lock_seed_shared_builds" => debug_span!(target: T, "lock_seed_shared_builds"),
        "became_fetchable" => debug_span!(target: T, "became_fetchable"),
        "seed_blocking_deps" => debug_span!(target: T, "seed_blocking_deps"),
        "promote" => debug_span!(target: T, "promote"),
        "unpromote_ungated" => debug_span!(target: T, "unpromote_ungated"),
        "emit_transition_effects" => debug_span!(target: T, "emit_transition_effects"),
        _ => debug_span!(target: T, "move_batch_need"),
    }
}

pub async fn run(mut db: Client, mut rx: mpsc::UnboundedReceiver<Batch>) {
    while let Some(first) = rx.recv().await {
        let mut batches = vec![first];
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        let rows: usize = batches.iter().map(|b| b.drvs.len()).sum();
        let result = flush(&mut db, &batches).instrument(debug_span!(target: T, "flush", batches = batches.len(), rows)).await;
        let span = debug_span!(target: T, "after_commit", batches = batches.len());
        let _e = span.enter();
        for b in batches {
            let n = b.drvs.len();
            let _ = b.done.send(result.clone().map(|_| n));
        }
    }
}

async fn flush(db: &mut Client, batches: &[Batch]) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 1..=3u32 {
        match transact_once(db, batches).instrument(debug_span!(target: T, "transact_once", attempt)).await {
            Ok(()) => return Ok(()),
            // Only a serialization failure or deadlock is worth another try.
            Err(e) if e.code().is_some_and(|c| c.code() == "40001" || c.code() == "40P01") => last = e.to_string(),
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!("gave up after 3 attempts: {last}"))
}

async fn transact_once(db: &mut Client, batches: &[Batch]) -> Result<(), tokio_postgres::Error> {
    let tx = db.transaction().await?;
    let rows: usize = batches.iter().map(|b| b.drvs.len()).sum();
    async {
        for b in batches {
            for d in &b.drvs {
                async {
                    tx.execute(
                        // A row named earlier as a dependency gets its record now.
                        "INSERT INTO derivation (drv_path, name, system, first_evaluation, walked) VALUES ($1, $2, $3, $4, true) \
                         ON CONFLICT (drv_path) DO UPDATE SET name = EXCLUDED.name, system = EXCLUDED.system, walked = true, \
                         first_evaluation = COALESCE(derivation.first_evaluation, EXCLUDED.first_evaluation) WHERE NOT derivation.walked",
                        &[&d.path, &d.name, &d.system, &b.evaluation],
                    )
                    .await?;
                    for (name, path) in &d.outputs {
                        tx.execute(
                            "INSERT INTO derivation_output (drv_path, name, path) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                            &[&d.path, name, path],
                        )
                        .await?;
                    }
                    if !d.input_drvs.is_empty() {
                        tx.execute(
                            // The inputs not yet named get their ids here; the snapshot
                            // sees the others (one writer: nothing else inserts between).
                            "WITH named AS (INSERT INTO derivation (drv_path) SELECT unnest($2::text[]) ON CONFLICT (drv_path) DO NOTHING RETURNING id), \
                             deps AS (SELECT id FROM named UNION ALL SELECT id FROM derivation WHERE drv_path = ANY($2)) \
                             INSERT INTO derivation_dependency (derivation, dependency) SELECT p.id, deps.id FROM derivation p, deps \
                             WHERE p.drv_path = $1 ON CONFLICT DO NOTHING",
                            &[&d.path, &d.input_drvs],
                        )
                        .await?;
                    }
                    tx.execute(
                        "INSERT INTO evaluation_derivation (evaluation, drv_path) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                        &[&b.evaluation, &d.path],
                    )
                    .await?;
                    tx.execute(
                        "INSERT INTO build (evaluation, drv_path, status) VALUES ($1, $2, 'Queued') ON CONFLICT (evaluation, drv_path) DO NOTHING",
                        &[&b.evaluation, &d.path],
                    )
                    .await?;
                    Ok::<(), tokio_postgres::Error>(())
                }
                .instrument(debug_span!(target: T, "record_one", drv = d.path.as_str()))
                .await?;
            }
            let paths: Vec<&str> = b.drvs.iter().map(|d| d.path.as_str()).collect();
            async {
                for (step, sql) in STEPS.iter() {
                    tx.execute(sql.as_str(), &[&b.evaluation, &paths]).instrument(step_span(step)).await?;
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
