//! PostgreSQL: pg_stat_statements (reset at the start of the window, top
//! 100 of the CI role by total time at its end), wait-event samples of the
//! role's busy backends every 100 ms, auto_explain switched on for the
//! window, and the rows the CI wrote (job phases, evaluation_metric).
//! The runner connects as the superuser; its own queries are not the
//! role's, so they stay out of the statistics.

use crate::error::HarnessError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_postgres::{Client, NoTls};

/// The server's own message, not just "db error".
pub fn pg_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => e.to_string(),
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

pub struct Db {
    rt: tokio::runtime::Runtime,
    client: Client,
    url: String,
}

async fn connect(url: &str) -> Result<Client, HarnessError> {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|source| HarnessError::Connect { url: evalbench_lab::pg::redacted(url), source })?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

impl Db {
    pub fn connect(url: &str) -> Result<Db, HarnessError> {
        let rt = rt();
        let client = rt.block_on(connect(url))?;
        Ok(Db { rt, client, url: url.to_string() })
    }

    fn json(&self, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> Result<Value, HarnessError> {
        let row = self
            .rt
            .block_on(self.client.query_one(sql, params))
            .map_err(|e| HarnessError::Sql { sql: sql.to_string(), message: pg_error(&e) })?;
        Ok(row.get::<_, Option<Value>>(0).unwrap_or(Value::Null))
    }

    fn exec(&self, sql: &str) -> Result<(), HarnessError> {
        self.rt
            .block_on(self.client.batch_execute(sql))
            .map_err(|e| HarnessError::Sql { sql: sql.to_string(), message: pg_error(&e) })
    }

    /// PostgreSQL's `server_version`, for the run's provenance.
    pub fn server_version(&self) -> Result<String, HarnessError> {
        let v = self.json("SELECT to_json(current_setting('server_version'))", &[])?;
        Ok(v.as_str().unwrap_or_default().to_string())
    }

    /// Every setting not at its built-in default, as the server shows it
    /// (`current_setting`), without ports, addresses and paths, which differ
    /// from run to run and say nothing of how the server behaves.
    pub fn settings(&self) -> Result<std::collections::BTreeMap<String, String>, HarnessError> {
        let v = self.json(
            "SELECT coalesce(json_object_agg(name, current_setting(name) ORDER BY name), '{}'::json) FROM pg_settings
             WHERE source IN ('command line', 'configuration file')
               AND name NOT IN ('port', 'listen_addresses', 'unix_socket_directories', 'data_directory', 'config_file',
                                'hba_file', 'ident_file', 'external_pid_file', 'log_directory', 'log_filename')",
            &[],
        )?;
        Ok(serde_json::from_value(v).unwrap_or_default())
    }

    pub fn reset_statements(&self) -> Result<(), HarnessError> {
        self.exec("SELECT pg_stat_statements_reset()")
    }

    /// Top 100 statements of `role` by total execution time, with planning
    /// time: Gradient's keys (`total_ms`, `mean_ms`: its benchmark's
    /// columns, rounded as it rounds them) and PostgreSQL's own beside them.
    pub fn statements(&self, role: &str) -> Result<Value, HarnessError> {
        self.json(
            "SELECT coalesce(json_agg(t), '[]'::json) FROM (
               SELECT s.calls, round(s.total_exec_time::numeric, 3) AS total_ms, round(s.mean_exec_time::numeric, 3) \
                   AS mean_ms,
                      s.queryid, s.query, s.rows, s.total_exec_time, s.mean_exec_time, s.max_exec_time,
                      s.total_plan_time, s.plans, s.mean_plan_time, s.shared_blks_hit, s.shared_blks_read
               FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
               WHERE r.rolname = $1 ORDER BY s.total_exec_time DESC LIMIT 100) t",
            &[&role],
        )
    }

    /// auto_explain of every statement (ANALYZE, no per-node timing), or off again.
    pub fn auto_explain(&self, on: bool) -> Result<(), HarnessError> {
        let v = if on { "0" } else { "-1" };
        // ALTER SYSTEM refuses to run inside a transaction: two statements, two round trips.
        self.exec(&format!("ALTER SYSTEM SET auto_explain.log_min_duration = {v}"))?;
        self.exec("SELECT pg_reload_conf()")
    }

    pub fn job_phases(&self, evaluation: &str) -> Result<Value, HarnessError> {
        self.json(
            // Gradient's benchmark's query (test.py's dump_postgres), on
            // Gradient's tables, which the lab has too; the job's id beside
            // it, so that a reader tells the jobs apart.
            "SELECT coalesce(json_agg(t), '[]'::json) FROM (
               SELECT dj.kind, p.seq, p.parent_seq, p.phase, p.start_ms, p.end_ms, p.dispatched_job::text AS job
               FROM dispatched_job_phase p JOIN dispatched_job dj ON dj.id = p.dispatched_job
               WHERE dj.evaluation_id::text = $1 ORDER BY dj.dispatched_at, p.seq) t",
            &[&evaluation],
        )
    }

    pub fn evaluation_metric(&self, evaluation: &str) -> Result<Value, HarnessError> {
        self.json("SELECT row_to_json(m) FROM evaluation_metric m WHERE m.evaluation::text = $1", &[&evaluation])
            .or(Ok(Value::Null))
    }

    /// Samples the role's busy backends every 100 ms on a connection of its own.
    pub fn start_wait_samples(&self, role: &str) -> Result<WaitSampler, HarnessError> {
        let url = self.url.clone();
        let role = role.to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || -> Result<Vec<Value>, HarnessError> {
            let rt = rt();
            rt.block_on(async move {
                let client = match connect(&url).await {
                    Ok(c) => c,
                    Err(e) => {
                        // The error itself is this thread's result, read by the caller's join.
                        let _ = ready_tx.send(Err(()));
                        return Err(e);
                    }
                };
                let q = client
                    .prepare(
                        "SELECT a.pid, a.state, a.wait_event_type, a.wait_event, left(a.query, 2000), a.backend_type
                         FROM pg_stat_activity a WHERE a.usename = $1 AND a.state IS DISTINCT FROM 'idle' AND a.pid <> \
                             pg_backend_pid()",
                    )
                    .await?;
                let _ = ready_tx.send(Ok(()));
                let mut samples = Vec::new();
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                // A tick a busy machine delayed is not made up for by a burst
                // of samples: each sample stands for 100 ms (by default tokio
                // fires the missed ticks at once, and two samples once lay 66 ms
                // apart in a CI run).
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !flag.load(Ordering::Relaxed) {
                    tick.tick().await;
                    let ts = evalbench_host::now_us();
                    let rows = client.query(&q, &[&role]).await?;
                    let backends: Vec<Value> = rows
                        .iter()
                        .map(|r| {
                            serde_json::json!({
                                "pid": r.get::<_, i32>(0),
                                "state": r.get::<_, Option<String>>(1),
                                "wait_event_type": r.get::<_, Option<String>>(2),
                                "wait_event": r.get::<_, Option<String>>(3),
                                "query": r.get::<_, Option<String>>(4),
                                "backend_type": r.get::<_, Option<String>>(5),
                            })
                        })
                        .collect();
                    samples.push(serde_json::json!({"ts_us": ts, "backends": backends}));
                }
                Ok(samples)
            })
        });
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(WaitSampler { stop, handle }),
            // The sampler ended before it was ready: its own error, whole.
            Ok(Err(())) | Err(_) => Err(match handle.join() {
                Ok(Err(e)) => e,
                Ok(Ok(_)) => HarnessError::Died("wait sampler"),
                Err(_) => HarnessError::Absent("the wait sampler panicked"),
            }),
        }
    }
}

pub struct WaitSampler {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Result<Vec<Value>, HarnessError>>,
}

impl WaitSampler {
    pub fn stop(self) -> Result<Value, HarnessError> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.handle.join().map_err(|_| HarnessError::Absent("the wait sampler panicked"))??;
        // Gradient's shape: a flat array, a row per busy backend and sample,
        // each with the sample's time (its benchmark's `wait_sample` rows).
        let rows = samples
            .into_iter()
            .flat_map(|s| {
                let ts = s["ts_us"].clone();
                s["backends"].as_array().cloned().unwrap_or_default().into_iter().map(move |mut b| {
                    b["ts_us"] = ts.clone();
                    b
                })
            })
            .collect();
        Ok(Value::Array(rows))
    }
}
