//! The server's store: every statement the server runs, each a method
//! named for what it does (`claim_job`, `record_derivation`,
//! `set_status`). The service above it decides when; the store only says
//! how, and hands back typed rows. The statements' text is what
//! pg_stat_statements, the bundle's `pg/` and the report show users, and
//! what `compare` matches between two bundles: it is kept word for word,
//! so a bundle of this lab still compares with one of an older lab.

use tokio_postgres::{Client, Transaction};
use uuid::Uuid;

use evalbench_bundle::contract::{BatchStep, Status};

use super::db::{Provision, SCHEMA};
use super::error::ServerError;
use super::walks::{self, ready, DEPENDENCIES};
use crate::msg::Drv;
use crate::setting::GraphWalk;

/// A statement's failure, named for what the server was doing.
pub(super) fn db(doing: &'static str) -> impl FnOnce(tokio_postgres::Error) -> ServerError {
    move |source| ServerError::Db { doing, source }
}

/// An evaluation as `GET evals/{id}` shows it.
pub struct EvaluationRow {
    pub status: String,
    pub error: Option<String>,
    pub created_at: f64,
}

/// The end of a job: the state its row is left in.
#[derive(Clone, Copy)]
pub enum JobEnd {
    Done,
    Failed,
}

/// An evaluation's figures as the worker reported them, in the columns of
/// Gradient's `evaluation_metric` and the lab's own beside them.
pub struct Metric {
    pub fetch_ms: Option<i64>,
    pub flake_ms: Option<i64>,
    pub derivations_ms: Option<i64>,
    pub total_ms: Option<i64>,
    pub eval_peak_rss_kb: Option<i64>,
    pub attrs: Option<i64>,
    pub derivations: i64,
    pub new_derivations: Option<i64>,
    pub drvs_written: Option<i64>,
    /// nix's counts (`contract::EVALUATION_METRIC_COUNTS`), in that order.
    pub counts: [Option<i64>; 5],
}

pub struct Store {
    pub(super) db: Client,
}

impl Store {
    pub fn new(db: Client) -> Store {
        Store { db }
    }

    /// The schema (IF NOT EXISTS) and the declarative state, at every start.
    pub async fn migrate_and_provision(&self, p: &Provision) -> Result<(), tokio_postgres::Error> {
        self.db.batch_execute(SCHEMA).await?;
        self.db
            .execute("INSERT INTO organization (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", &[&p.organization])
            .await?;
        self.db
            .execute(
                "INSERT INTO project (organization, name, repository) SELECT id, $2, $3 FROM organization WHERE name = \
                    $1 ON CONFLICT (organization, name) DO UPDATE SET repository = EXCLUDED.repository",
                &[&p.organization, &p.project, &p.repository],
            )
            .await?;
        self.db
            .execute(
                "INSERT INTO api_key (key, organization) SELECT $2, id FROM organization WHERE name = $1 ON CONFLICT \
                    (key) DO NOTHING",
                &[&p.organization, &p.api_key],
            )
            .await?;
        Ok(())
    }

    // The API's reads and writes.

    /// The organization an API key belongs to.
    pub async fn organization_of_key(&self, key: &str) -> Result<Option<i64>, ServerError> {
        let row = self
            .db
            .query_opt("SELECT organization FROM api_key WHERE key = $1", &[&key])
            .await
            .map_err(db("reading the API key"))?;
        Ok(row.map(|r| r.get(0)))
    }

    pub async fn key_exists(&self, key: &str) -> Result<bool, ServerError> {
        Ok(self
            .db
            .query_opt("SELECT key FROM api_key WHERE key = $1", &[&key])
            .await
            .map_err(db("reading the API key"))?
            .is_some())
    }

    /// The project `org/project` of the key's organization.
    pub async fn project_id(&self, org: &str, project: &str, org_id: i64) -> Result<Option<i64>, ServerError> {
        let row = self
            .db
            .query_opt(
                "SELECT p.id FROM project p JOIN organization o ON o.id = p.organization WHERE o.name = $1 AND p.name \
                    = $2 AND o.id = $3",
                &[&org, &project, &org_id],
            )
            .await
            .map_err(db("finding the project"))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// A new evaluation, Queued, with its first timeline row.
    pub async fn queue_evaluation(&self, id: Uuid, project: i64) -> Result<(), ServerError> {
        self.db
            .execute("INSERT INTO evaluation (id, project, status) VALUES ($1, $2, 'Queued')", &[&id, &project])
            .await
            .map_err(db("queueing the evaluation"))?;
        self.db
            .execute("INSERT INTO evaluation_status (evaluation, status) VALUES ($1, 'Queued')", &[&id])
            .await
            .map_err(db("queueing the evaluation"))?;
        Ok(())
    }

    pub async fn evaluation(&self, id: Uuid) -> Result<Option<EvaluationRow>, ServerError> {
        let row = self
            .db
            .query_opt(
                "SELECT status, error, extract(epoch FROM created_at)::float8 FROM evaluation WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(db("reading the evaluation"))?;
        Ok(row.map(|r| EvaluationRow { status: r.get(0), error: r.get(1), created_at: r.get(2) }))
    }

    /// The evaluation's statuses in order, each with its time (Unix µs).
    pub async fn timeline(&self, id: Uuid) -> Result<Vec<(String, i64)>, ServerError> {
        let rows = self
            .db
            .query(
                "SELECT status, (extract(epoch FROM at) * 1000000)::int8 FROM evaluation_status WHERE evaluation = $1 \
                    ORDER BY at",
                &[&id],
            )
            .await
            .map_err(db("reading the evaluation's timeline"))?;
        Ok(rows.iter().map(|t| (t.get(0), t.get(1))).collect())
    }

    /// Sets an evaluation's status and records the change in its timeline;
    /// an ended evaluation keeps its end.
    pub async fn set_status(&self, evaluation: Uuid, status: Status, error: Option<&str>) -> Result<(), ServerError> {
        let status = status.as_str();
        // One statement, so that no reader sees the new status without its
        // timeline row (a fast warm evaluation was read between the two).
        self.db
            .execute(
                "WITH changed AS (UPDATE evaluation SET status = $2, error = COALESCE($3, error), updated_at = \
                    clock_timestamp() WHERE id = $1 AND status NOT IN ('Completed', 'Failed', 'Aborted') AND status <> \
                    $2 RETURNING id) INSERT INTO evaluation_status (evaluation, status) SELECT id, $2 FROM changed",
                &[&evaluation, &status, &error],
            )
            .await
            .map_err(db("setting the evaluation's status"))?;
        Ok(())
    }

    // The scheduler's.

    /// Queued evaluations that have no job yet.
    pub async fn queued_without_job(&self) -> Result<Vec<Uuid>, ServerError> {
        let rows = self
            .db
            .query(
                "SELECT e.id FROM evaluation e WHERE e.status = 'Queued' AND NOT EXISTS (SELECT 1 FROM job j WHERE \
                    j.evaluation = e.id)",
                &[],
            )
            .await
            .map_err(db("finding queued evaluations"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub async fn create_job(&self, evaluation: Uuid) -> Result<(), ServerError> {
        self.db
            .execute(
                "INSERT INTO job (id, evaluation, state) VALUES ($1, $2, 'queued')",
                &[&Uuid::new_v4(), &evaluation],
            )
            .await
            .map_err(db("creating a job"))?;
        Ok(())
    }

    /// Unclaimed jobs, oldest first, each with its evaluation.
    pub async fn queued_jobs(&self) -> Result<Vec<(Uuid, Uuid)>, ServerError> {
        let rows = self
            .db
            .query("SELECT j.id, j.evaluation FROM job j WHERE j.state = 'queued' ORDER BY j.created_at", &[])
            .await
            .map_err(db("finding queued jobs"))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    // The workers'.

    pub async fn record_score(&self, job: Uuid, worker: &str, score: i32) -> Result<(), ServerError> {
        self.db
            .execute("INSERT INTO worker_score (job, worker, score) VALUES ($1, $2, $3)", &[&job, &worker, &score])
            .await
            .map_err(db("recording a worker's score"))?;
        Ok(())
    }

    /// The oldest queued job, dispatched to `worker`: (job, evaluation).
    pub async fn claim_job(&self, worker: &str) -> Result<Option<(Uuid, Uuid)>, ServerError> {
        let row = self
            .db
            .query_opt(
                "UPDATE job SET state = 'dispatched', worker = $1, dispatched_at = clock_timestamp() WHERE id = \
                 (SELECT id FROM job WHERE state = 'queued' ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 RETURNING id, evaluation",
                &[&worker],
            )
            .await
            .map_err(db("claiming a job"))?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// The jobs a worker still had in hand, marked lost: their evaluations.
    pub async fn lose_jobs_of(&self, worker: &str) -> Result<Vec<Uuid>, ServerError> {
        let rows = self
            .db
            .query(
                "UPDATE job SET state = 'lost' WHERE worker = $1 AND state = 'dispatched' RETURNING evaluation",
                &[&worker],
            )
            .await
            .map_err(db("marking the worker's jobs lost"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub async fn evaluation_of_job(&self, job: Uuid) -> Result<Option<Uuid>, ServerError> {
        let row = self
            .db
            .query_opt("SELECT evaluation FROM job WHERE id = $1", &[&job])
            .await
            .map_err(db("finding the job's evaluation"))?;
        Ok(row.map(|r| r.get(0)))
    }

    pub async fn end_job(&self, job: Uuid, end: JobEnd) -> Result<(), ServerError> {
        let done = match end {
            JobEnd::Done => self.db.execute("UPDATE job SET state = 'done' WHERE id = $1", &[&job]).await,
            JobEnd::Failed => self.db.execute("UPDATE job SET state = 'failed' WHERE id = $1", &[&job]).await,
        };
        done.map_err(db("ending the job"))?;
        Ok(())
    }

    /// A job's new phase (Gradient's code, the lab's name), from now.
    pub async fn record_phase(&self, job: Uuid, code: i16, worker: &str, phase: &str) -> Result<(), ServerError> {
        self.db
            .execute(
                "INSERT INTO dispatched_job_phase (dispatched_job, seq, phase, start_ms, worker, phase_name) SELECT \
                    $1, (SELECT count(*)::int FROM dispatched_job_phase WHERE dispatched_job = $1), $2, (extract(epoch \
                    FROM clock_timestamp() - j.dispatched_at) * 1000)::int8, $3, $4 FROM job j WHERE j.id = $1",
                &[&job, &code, &worker, &phase],
            )
            .await
            .map_err(db("recording the job's phase"))?;
        Ok(())
    }

    /// Ends the job's open phase (a new phase, the end of the job, or its failure).
    pub async fn end_phase(&self, job: Uuid) -> Result<(), ServerError> {
        self.db
            .execute(
                "UPDATE dispatched_job_phase p SET ended_at = clock_timestamp(), \
                 end_ms = (extract(epoch FROM clock_timestamp() - j.dispatched_at) * 1000)::int8 \
                 FROM job j WHERE j.id = p.dispatched_job AND p.dispatched_job = $1 AND p.ended_at IS NULL",
                &[&job],
            )
            .await
            .map_err(db("ending the job's phase"))?;
        Ok(())
    }

    /// Of `drvs`, those whose record the server has (walked).
    pub async fn walked_among(&self, drvs: &[String]) -> Result<Vec<String>, ServerError> {
        let rows = self
            .db
            .query("SELECT drv_path FROM derivation WHERE drv_path = ANY($1) AND walked", &[&drvs])
            .await
            .map_err(db("finding known derivations"))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Of `paths`, those some evaluation built already (Gradient's assess_cached).
    pub async fn built_among(&self, paths: &[String]) -> Result<usize, ServerError> {
        let rows = self
            .db
            .query("SELECT drv_path FROM build WHERE drv_path = ANY($1) AND status = 'Completed'", &[&paths])
            .await
            .map_err(db("assessing cached builds"))?;
        Ok(rows.len())
    }

    /// The derivations the evaluation's attributes name: where its closure walk starts.
    pub async fn record_entry_points(&self, evaluation: Uuid, roots: &[String]) -> Result<(), ServerError> {
        self.db
            .execute(
                "INSERT INTO entry_point (evaluation, derivation) SELECT $1, id FROM derivation WHERE drv_path = \
                    ANY($2) ON CONFLICT DO NOTHING",
                &[&evaluation, &roots],
            )
            .await
            .map_err(db("recording the evaluation's entry points"))?;
        Ok(())
    }

    /// The evaluation's closure by the one recursive walk, in `form`: its size.
    pub async fn record_closure(&self, evaluation: Uuid, form: GraphWalk) -> Result<i64, ServerError> {
        let row = self
            .db
            .query_one(&walks::record_eval_closure(form), &[&evaluation])
            .await
            .map_err(db("recording the evaluation's closure"))?;
        Ok(row.get(0))
    }

    /// Derivations this evaluation was the first to record.
    pub async fn count_new_derivations(&self, evaluation: Uuid) -> Result<i64, ServerError> {
        let row = self
            .db
            .query_one("SELECT count(*) FROM derivation WHERE first_evaluation = $1", &[&evaluation])
            .await
            .map_err(db("counting the evaluation's new derivations"))?;
        Ok(row.get(0))
    }

    pub async fn record_metric(&self, evaluation: Uuid, m: &Metric) -> Result<(), ServerError> {
        let [thunks, calls, primops, lookups, bytes] = &m.counts;
        self.db
            .execute(
                "INSERT INTO evaluation_metric (evaluation, fetch_ms, flake_ms, derivations_ms, total_ms, \
                    eval_peak_rss_kb, attrs, derivations, new_derivations, drvs_written, total_thunks, fn_calls, \
                    primop_calls, lookups, alloc_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7::int8::int4, \
                    $8::int8::int4, $9::int8::int4, $10::int8::int4, $11, $12, $13, $14, $15) ON CONFLICT (evaluation) \
                    DO NOTHING",
                &[
                    &evaluation,
                    &m.fetch_ms,
                    &m.flake_ms,
                    &m.derivations_ms,
                    &m.total_ms,
                    &m.eval_peak_rss_kb,
                    &m.attrs,
                    &m.derivations,
                    &m.new_derivations,
                    &m.drvs_written,
                    thunks,
                    calls,
                    primops,
                    lookups,
                    bytes,
                ],
            )
            .await
            .map_err(db("recording the evaluation's metric"))?;
        Ok(())
    }
}

// The graph writer's, inside its transaction.

/// One derivation's record: its row (a row named earlier as a dependency
/// gets its record now), outputs, dependencies, and the evaluation's claim
/// on it and its build.
pub async fn record_derivation(tx: &Transaction<'_>, evaluation: Uuid, d: &Drv) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO derivation (drv_path, name, system, first_evaluation, walked) VALUES ($1, $2, $3, $4, true) ON \
            CONFLICT (drv_path) DO UPDATE SET name = EXCLUDED.name, system = EXCLUDED.system, walked = true, \
            first_evaluation = COALESCE(derivation.first_evaluation, EXCLUDED.first_evaluation) WHERE NOT \
            derivation.walked",
        &[&d.path, &d.name, &d.system, &evaluation],
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
            "WITH named AS (INSERT INTO derivation (drv_path) SELECT unnest($2::text[]) ON CONFLICT (drv_path) DO \
                NOTHING RETURNING id), deps AS (SELECT id FROM named UNION ALL SELECT id FROM derivation WHERE \
                drv_path = ANY($2)) INSERT INTO derivation_dependency (derivation, dependency) SELECT p.id, deps.id \
                FROM derivation p, deps WHERE p.drv_path = $1 ON CONFLICT DO NOTHING",
            &[&d.path, &d.input_drvs],
        )
        .await?;
    }
    tx.execute(
        "INSERT INTO evaluation_derivation (evaluation, drv_path) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[&evaluation, &d.path],
    )
    .await?;
    tx.execute(
        "INSERT INTO build (evaluation, drv_path, status) VALUES ($1, $2, 'Queued') ON CONFLICT (evaluation, drv_path) \
            DO NOTHING",
        &[&evaluation, &d.path],
    )
    .await?;
    Ok(())
}

/// The statement of a batch's step, run with the evaluation and the
/// batch's paths; the graph's own parts are `walks`'.
pub fn batch_step_sql(step: BatchStep) -> String {
    match step {
        BatchStep::LockSeedSharedBuilds => {
            "SELECT id FROM build WHERE evaluation = $1 AND drv_path = ANY($2) FOR UPDATE".into()
        }
        BatchStep::BecameFetchable => {
            "UPDATE build SET status = 'Fetchable' WHERE evaluation = $1 AND drv_path = ANY($2) AND status = 'Queued'"
                .into()
        }
        BatchStep::SeedBlockingDeps => format!(
            "INSERT INTO build (evaluation, drv_path, status) SELECT $1, d.drv_path, 'Queued' FROM {DEPENDENCIES} \
             WHERE p.drv_path = ANY($2) ON CONFLICT (evaluation, drv_path) DO NOTHING"
        ),
        BatchStep::Promote => format!(
            "UPDATE build b SET can_start = true WHERE b.evaluation = $1 AND b.drv_path = ANY($2) AND {}",
            ready("b")
        ),
        BatchStep::UnpromoteUngated => {
            "UPDATE build SET can_start = false WHERE evaluation = $1 AND drv_path = ANY($2) AND status = 'Blocked'"
                .into()
        }
        BatchStep::EmitTransitionEffects => {
            "SELECT count(*) FROM build WHERE evaluation = $1 AND drv_path = ANY($2) AND can_start".into()
        }
        BatchStep::MoveBatchNeed => {
            "UPDATE evaluation SET updated_at = clock_timestamp() WHERE id = $1 AND cardinality($2::text[]) >= 0".into()
        }
    }
}
