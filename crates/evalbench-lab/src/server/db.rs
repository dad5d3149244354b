//! The server's schema and declarative provisioning. The schema is created
//! at every start (IF NOT EXISTS) and the provisioning file applied again,
//! so a dropped and recreated database is whole after the next start, as
//! the benchmark's cold reset expects.

use serde::{Deserialize, Serialize};
use tokio_postgres::Client;

pub const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS organization (id bigserial PRIMARY KEY, name text UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS project (
    id bigserial PRIMARY KEY, organization bigint NOT NULL REFERENCES organization(id),
    name text NOT NULL, repository text NOT NULL, UNIQUE (organization, name));
CREATE TABLE IF NOT EXISTS api_key (key text PRIMARY KEY, organization bigint NOT NULL REFERENCES organization(id));
CREATE TABLE IF NOT EXISTS evaluation (
    id uuid PRIMARY KEY, project bigint NOT NULL REFERENCES project(id), status text NOT NULL,
    error text, created_at timestamptz NOT NULL DEFAULT clock_timestamp(), updated_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS evaluation_status (evaluation uuid NOT NULL REFERENCES evaluation(id), status text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS job (
    id uuid PRIMARY KEY, evaluation uuid NOT NULL REFERENCES evaluation(id), state text NOT NULL, worker text,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(), dispatched_at timestamptz);
CREATE TABLE IF NOT EXISTS worker_score (job uuid NOT NULL, worker text NOT NULL, score int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS dispatched_job_phase (
    job uuid NOT NULL REFERENCES job(id), worker text, phase text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz);
CREATE TABLE IF NOT EXISTS derivation (drv_path text PRIMARY KEY, name text NOT NULL, system text NOT NULL, first_evaluation uuid);
CREATE TABLE IF NOT EXISTS derivation_output (drv_path text NOT NULL REFERENCES derivation(drv_path), name text NOT NULL, path text NOT NULL, PRIMARY KEY (drv_path, name));
CREATE TABLE IF NOT EXISTS derivation_dep (drv_path text NOT NULL, dep text NOT NULL, PRIMARY KEY (drv_path, dep));
CREATE TABLE IF NOT EXISTS evaluation_derivation (evaluation uuid NOT NULL, drv_path text NOT NULL, PRIMARY KEY (evaluation, drv_path));
CREATE TABLE IF NOT EXISTS build (
    id bigserial PRIMARY KEY, evaluation uuid NOT NULL, drv_path text NOT NULL, status text NOT NULL,
    can_start boolean NOT NULL DEFAULT false, UNIQUE (evaluation, drv_path));
-- assess_cached asks by drv_path alone: without this, a scan of every build per batch (41 s of 446 at 100,000 packages).
CREATE INDEX IF NOT EXISTS build_drv_path ON build (drv_path);
CREATE TABLE IF NOT EXISTS evaluation_metric (
    evaluation uuid PRIMARY KEY REFERENCES evaluation(id), fetch_ms bigint, flake_ms bigint, derivations_ms bigint,
    total_ms bigint, eval_peak_rss_kb bigint, attrs int, derivations int, new_derivations int,
    -- The lab's own: of the attributes' .drv files, how many nix wrote to its store.
    drvs_written int,
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp());
"#;

/// The declarative state: what must exist after every start.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Provision {
    pub organization: String,
    pub project: String,
    pub repository: String,
    pub api_key: String,
}

pub async fn migrate_and_provision(db: &Client, p: &Provision) -> Result<(), tokio_postgres::Error> {
    db.batch_execute(SCHEMA).await?;
    db.execute("INSERT INTO organization (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", &[&p.organization]).await?;
    db.execute(
        "INSERT INTO project (organization, name, repository) SELECT id, $2, $3 FROM organization WHERE name = $1 \
         ON CONFLICT (organization, name) DO UPDATE SET repository = EXCLUDED.repository",
        &[&p.organization, &p.project, &p.repository],
    )
    .await?;
    db.execute(
        "INSERT INTO api_key (key, organization) SELECT $2, id FROM organization WHERE name = $1 ON CONFLICT (key) DO NOTHING",
        &[&p.organization, &p.api_key],
    )
    .await?;
    Ok(())
}

/// Sets an evaluation's status and records the change in its timeline.
pub async fn set_status(db: &Client, evaluation: uuid::Uuid, status: &str, error: Option<&str>) -> Result<(), tokio_postgres::Error> {
    // One statement, so that no reader sees the new status without its
    // timeline row (a fast warm evaluation was read between the two).
    db.execute(
        "WITH changed AS (UPDATE evaluation SET status = $2, error = COALESCE($3, error), updated_at = clock_timestamp() \
         WHERE id = $1 AND status NOT IN ('Completed', 'Failed', 'Aborted') AND status <> $2 RETURNING id) \
         INSERT INTO evaluation_status (evaluation, status) SELECT id, $2 FROM changed",
        &[&evaluation, &status, &error],
    )
    .await?;
    Ok(())
}
