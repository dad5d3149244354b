//! A Gradient deployment (or anything that speaks its API subset) as a
//! target, described by a JSON file: where the API is, how to reach the
//! database, how commands run on the server and worker hosts (locally, in a
//! namespace, or through `ssh host`), and how to restart and reset it.

use crate::error::HarnessError;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evalbench_api::Endpoint;
use evalbench_bundle::provenance::{System, Workload};

use super::{CaptureInfo, Target};
use evalbench_host::HostExec;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct GradientConfig {
    pub url: String,
    /// A Bearer API key; or leave it out and give `login`.
    #[serde(default)]
    pub api_key: String,
    /// What to evaluate: `tasks/{organization}/{project}/evaluate` (Gradient
    /// today calls these the project and the task), or on an older Gradient
    /// `projects/{organization}/{project}/evaluate`.
    pub organization: String,
    pub project: String,
    /// A user to log in as (`{"loginname": …, "password": …}`), for a token.
    #[serde(default)]
    pub login: Option<evalbench_api::Login>,
    /// Superuser connection to the CI's database (statistics, job phases).
    pub admin_database_url: String,
    /// Superuser connection to a maintenance database (for the cold reset's DROP/CREATE).
    pub maintenance_database_url: String,
    #[serde(default = "default_db")]
    pub database: String,
    #[serde(default = "default_db")]
    pub ci_role: String,
    #[serde(default)]
    pub server: HostExec,
    #[serde(default)]
    pub worker: HostExec,
    /// Prints the server's pid on the server host.
    pub server_pid_cmd: String,
    /// Prints the worker's pid on the worker host.
    pub worker_pid_cmd: String,
    /// Prints the pids of the eval subprocesses already running on the
    /// worker host, any number of them (strace attaches to each); by
    /// default as Gradient's benchmark finds them.
    #[serde(default = "default_eval_pids_cmd")]
    pub eval_pids_cmd: String,
    /// Span directories on each host (services.gradient.log.traceDir).
    pub server_trace_dir: String,
    pub worker_trace_dir: String,
    /// Restarts server and workers (run here, by `sh -c`); the server re-provisions at start.
    pub restart_cmd: String,
    /// Empties the worker's eval cache (on the worker host).
    pub clear_eval_cache_cmd: String,
    pub proto_iface: String,
    pub proto_port: u16,
    #[serde(default = "default_lo")]
    pub pg_iface: String,
    #[serde(default = "default_pg_port")]
    pub pg_port: u16,
    /// PostgreSQL's log on the server host, for auto_explain.
    pub pg_log: Option<String>,
}

fn default_eval_pids_cmd() -> String {
    "pgrep -f '[-]-eval-subprocess' || true".into()
}
fn default_db() -> String {
    "gradient".into()
}
fn default_lo() -> String {
    "lo".into()
}
fn default_pg_port() -> u16 {
    5432
}

pub struct Gradient {
    pub config: GradientConfig,
    pub source: PathBuf,
}

impl Gradient {
    pub fn load(path: &Path) -> Result<Gradient, HarnessError> {
        let text = std::fs::read_to_string(path).map_err(HarnessError::io(path))?;
        let config =
            serde_json::from_str(&text).map_err(|source| HarnessError::Config { path: path.to_path_buf(), source })?;
        Ok(Gradient { config, source: path.to_path_buf() })
    }

    fn wait_ready(&self) -> Result<(), HarnessError> {
        let client = evalbench_api::Client::new(self.endpoint(), Duration::from_secs(2));
        // Any answer means the server is up; where it says how many workers, wait for one.
        let ready =
            |h: Option<&serde_json::Value>| h.is_some_and(|v| v["message"]["workers"].as_u64().is_none_or(|w| w > 0));
        client.wait_healthy(Duration::from_secs(120), &ready, &mut || Ok::<(), HarnessError>(())).map_err(|e| match e {
            Some(e) => e,
            None => HarnessError::NoAnswer { url: self.config.url.clone(), seconds: 120 },
        })
    }

    fn sql(&self, url: &str, sql: &str) -> Result<(), HarnessError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(HarnessError::Runtime)?;
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                .await
                .map_err(|source| HarnessError::Connect { url: evalbench_lab::pg::redacted(url), source })?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            client
                .batch_execute(sql)
                .await
                .map_err(|e| HarnessError::Sql { sql: sql.to_string(), message: crate::capture::pgstat::pg_error(&e) })
        })
    }

    fn pid(&self, host: &HostExec, cmd: &str) -> Result<u32, HarnessError> {
        let out = host.run(host.sh(cmd))?;
        out.split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| HarnessError::NoPid { command: cmd.to_string() })
    }
}

impl Target for Gradient {
    fn name(&self) -> &str {
        "gradient"
    }
    /// Gradient runs on its own machines; only the capture tools are checked, on its hosts.
    fn pipeline_here(&self) -> bool {
        false
    }
    fn start(&mut self) -> Result<(), HarnessError> {
        self.wait_ready()
    }
    fn prepare(&mut self, cold: bool, _place: &super::PassPlace<'_>) -> Result<(), HarnessError> {
        let c = &self.config;
        if cold {
            let db = &c.database;
            self.sql(&c.maintenance_database_url, &format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"))?;
            self.sql(&c.maintenance_database_url, &format!("CREATE DATABASE \"{db}\" OWNER \"{}\"", c.ci_role))?;
            self.sql(&c.admin_database_url, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
            c.worker.run(c.worker.sh(&c.clear_eval_cache_cmd))?;
        }
        for (host, dir) in [(&c.server, &c.server_trace_dir), (&c.worker, &c.worker_trace_dir)] {
            host.run(host.sh(&format!("mkdir -p '{dir}' && rm -f '{dir}'/*.jsonl")))?;
        }
        HostExec::local().run(HostExec::local().sh(&c.restart_cmd))?;
        self.wait_ready()
    }
    fn collect_spans(&mut self, trace_dir: &Path) -> Result<(), HarnessError> {
        // Writers flush when idle; give them a moment after Completed.
        std::thread::sleep(Duration::from_millis(300));
        let c = &self.config;
        c.server.fetch_dir(&c.server_trace_dir, trace_dir)?;
        if c.worker_trace_dir != c.server_trace_dir || c.worker.prefix != c.server.prefix {
            c.worker.fetch_dir(&c.worker_trace_dir, trace_dir)?;
        }
        Ok(())
    }
    fn endpoint(&self) -> Endpoint {
        let c = &self.config;
        Endpoint {
            url: c.url.clone(),
            api_key: c.api_key.clone(),
            organization: c.organization.clone(),
            project: c.project.clone(),
            login: c.login.clone(),
        }
    }
    fn capture(&self) -> CaptureInfo {
        let c = &self.config;
        CaptureInfo {
            server: c.server.clone(),
            worker: c.worker.clone(),
            proto_iface: c.proto_iface.clone(),
            proto_port: c.proto_port,
            pg_iface: c.pg_iface.clone(),
            pg_port: c.pg_port,
            pg_log: c.pg_log.clone(),
            admin_database_url: c.admin_database_url.clone(),
            ci_role: c.ci_role.clone(),
            pg_settings: Vec::new(),
            // Where a deployment's links are reached from is not known here.
            proto_nudge: None,
            pg_nudge: None,
        }
    }
    fn server_pid(&self) -> Result<u32, HarnessError> {
        self.pid(&self.config.server, &self.config.server_pid_cmd)
    }
    fn worker_pids(&self) -> Result<Vec<u32>, HarnessError> {
        Ok(vec![self.pid(&self.config.worker, &self.config.worker_pid_cmd)?])
    }
    fn eval_pids(&self) -> Result<Vec<u32>, HarnessError> {
        let c = &self.config;
        let out = c.worker.run(c.worker.sh(&c.eval_pids_cmd))?;
        Ok(out.split_whitespace().filter_map(|p| p.parse().ok()).collect())
    }
    fn describe(&mut self) -> (Workload, System) {
        let ep = self.endpoint();
        // The project's repository and revision are the server's to know; its API subset does not tell them.
        let worker = self.capture().worker;
        let nix_version =
            worker.run(worker.sh("nix --version")).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let flake = Some(format!("{}/{}", ep.organization, ep.project));
        (
            Workload { flake, ..Workload::default() },
            System { server_version: super::server_version(ep), nix_version, ..System::default() },
        )
    }
    fn finish(&mut self) {}
}
