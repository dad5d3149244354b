//! The statements behind the diagnostic report (`GET evals/{id}/report`) and
//! the task's metrics (`GET tasks/{p}/{t}/metrics`): the lab's rows in the
//! shape of Gradient's tables, timestamps as PostgreSQL's text of a UTC
//! timestamp without time zone, as Gradient's exporter casts them. They
//! run only when a report is asked for, never inside a measured pass.

use serde_json::Value;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::error::ServerError;
use super::store::{db, Store};

/// A timestamp column as Gradient's exporter has it: PostgreSQL's text of it in UTC.
fn utc(column: &str) -> String {
    format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')")
}

/// The lab's rows of one evaluation, each a JSON object named as Gradient's columns are.
#[derive(Default)]
pub struct ReportRows {
    pub evaluation: Option<Value>,
    /// Each status and when the evaluation first entered it.
    pub statuses: Vec<(String, String)>,
    pub commit: Option<String>,
    pub metric: Option<Value>,
    pub jobs: Vec<Value>,
    pub phases: Vec<Value>,
    pub derivations: Vec<Value>,
    pub edges: Vec<(i64, i64)>,
    pub outputs: Vec<Value>,
    pub entry_points: Vec<i64>,
}

impl Store {
    async fn json_rows(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Value>, ServerError> {
        let sql = format!("SELECT row_to_json(r) FROM ({sql}) r");
        let rows = self.db.query(&sql, params).await.map_err(db("reading the evaluation for its report"))?;
        Ok(rows.iter().map(|r| r.get::<_, Value>(0)).collect())
    }

    /// Every row the report of evaluation `id` is made of.
    pub async fn report_rows(&self, id: Uuid) -> Result<ReportRows, ServerError> {
        let evaluation = self
            .json_rows(
                &format!(
                    "SELECT e.id::text AS id, e.project::text AS task, p.repository, e.status, e.error, {} AS \
                     created_at, {} AS updated_at FROM evaluation e JOIN project p ON p.id = e.project WHERE e.id = $1",
                    utc("e.created_at"),
                    utc("e.updated_at")
                ),
                &[&id],
            )
            .await?
            .pop();
        if evaluation.is_none() {
            return Ok(ReportRows::default());
        }
        let statuses = self
            .json_rows(
                &format!(
                    "SELECT status, {} AS at FROM evaluation_status WHERE evaluation = $1 GROUP BY status",
                    utc("min(at)")
                ),
                &[&id],
            )
            .await?
            .into_iter()
            .filter_map(|v| Some((v["status"].as_str()?.to_string(), v["at"].as_str()?.to_string())))
            .collect();
        let commit = self
            .json_rows("SELECT hash FROM evaluation_commit WHERE evaluation = $1", &[&id])
            .await?
            .pop()
            .and_then(|v| v["hash"].as_str().map(String::from));
        let metric = self.json_rows("SELECT * FROM evaluation_metric WHERE evaluation = $1", &[&id]).await?.pop();
        let mut rows = ReportRows { evaluation, statuses, commit, metric, ..ReportRows::default() };
        self.report_jobs(id, &mut rows).await?;
        self.report_graph(id, &mut rows).await?;
        Ok(rows)
    }

    /// The evaluation's jobs (the lab's `job`, as Gradient's `dispatched_job`) and their phases.
    async fn report_jobs(&self, id: Uuid, rows: &mut ReportRows) -> Result<(), ServerError> {
        rows.jobs = self
            .json_rows(
                &format!(
                    "SELECT j.id::text AS id, j.worker, j.state, {} AS queued_at, {} AS dispatched_at, {} AS \
                     finished_at FROM job j WHERE j.evaluation = $1 ORDER BY j.created_at",
                    utc("j.created_at"),
                    utc("j.dispatched_at"),
                    utc("(SELECT max(p.ended_at) FROM dispatched_job_phase p WHERE p.dispatched_job = j.id)")
                ),
                &[&id],
            )
            .await?;
        rows.phases = self
            .json_rows(
                &format!(
                    "SELECT p.dispatched_job::text AS dispatched_job, p.seq, p.parent_seq, p.phase, p.start_ms, \
                     p.end_ms, {} AS created_at FROM dispatched_job_phase p JOIN job j ON j.id = p.dispatched_job \
                     WHERE j.evaluation = $1 ORDER BY p.dispatched_job, p.seq",
                    utc("p.started_at")
                ),
                &[&id],
            )
            .await?;
        Ok(())
    }

    /// The derivations the evaluation needs (its closure, or those it named),
    /// the edges among them, their outputs, and its entry points.
    async fn report_graph(&self, id: Uuid, rows: &mut ReportRows) -> Result<(), ServerError> {
        const MINE: &str = "(SELECT derivation FROM evaluation_closure WHERE evaluation = $1 UNION SELECT d.id FROM \
            evaluation_derivation ed JOIN derivation d ON d.drv_path = ed.drv_path WHERE ed.evaluation = $1)";
        rows.derivations = self
            .json_rows(
                &format!(
                    "SELECT d.id, d.drv_path, d.name, d.system, d.walked FROM derivation d WHERE d.id IN {MINE} ORDER \
                     BY d.id"
                ),
                &[&id],
            )
            .await?;
        rows.edges = self
            .json_rows(
                &format!(
                    "SELECT derivation, dependency FROM derivation_dependency WHERE derivation IN {MINE} ORDER BY 1, 2"
                ),
                &[&id],
            )
            .await?
            .iter()
            .filter_map(|v| Some((v["derivation"].as_i64()?, v["dependency"].as_i64()?)))
            .collect();
        rows.outputs = self
            .json_rows(
                &format!(
                    "SELECT d.id AS derivation, o.name, o.path FROM derivation_output o JOIN derivation d ON \
                     d.drv_path = o.drv_path WHERE d.id IN {MINE} ORDER BY d.id, o.name"
                ),
                &[&id],
            )
            .await?;
        rows.entry_points = self
            .json_rows("SELECT derivation FROM entry_point WHERE evaluation = $1 ORDER BY derivation", &[&id])
            .await?
            .iter()
            .filter_map(|v| v["derivation"].as_i64())
            .collect();
        Ok(())
    }

    /// The commit evaluation `id` evaluates (the repository's HEAD when queued).
    pub async fn record_commit(&self, id: Uuid, hash: &str) -> Result<(), ServerError> {
        self.db
            .execute("INSERT INTO evaluation_commit (evaluation, hash) VALUES ($1, $2)", &[&id, &hash])
            .await
            .map_err(db("recording the evaluation's commit"))?;
        Ok(())
    }

    /// The completed evaluations of a project, oldest first, as Gradient's
    /// task metrics list them (`eval_time_ms` is updated_at − created_at there).
    pub async fn completed_evaluations(&self, org: &str, project: &str) -> Result<Vec<Value>, ServerError> {
        self.json_rows(
            "SELECT e.id::text AS evaluation_id, to_char(e.created_at AT TIME ZONE 'UTC', \
             'YYYY-MM-DD\"T\"HH24:MI:SS.US') AS created_at, (extract(epoch FROM e.updated_at - e.created_at) * \
             1000)::int8 AS eval_time_ms FROM evaluation e JOIN project p ON p.id = e.project JOIN organization o ON \
             o.id = p.organization WHERE o.name = $1 AND p.name = $2 AND e.status = 'Completed' ORDER BY e.created_at",
            &[&org, &project],
        )
        .await
    }
}
