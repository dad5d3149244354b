//! The lab's directory and `lab.json`: what is running, where, and how to
//! reach it. Every control command reads it; `up` and `down` write it.

use crate::error::LabError;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Net {
    /// "netns" (server and worker each in a namespace) or "loopback".
    pub mode: String,
    pub server_ns: Option<String>,
    pub worker_ns: Option<String>,
    /// Interfaces a capture would watch: root <-> server, server <-> worker.
    pub runner_if: Option<String>,
    pub proto_if: Option<String>,
    /// Address the runner uses for the server, and the worker uses.
    pub server_addr: String,
    pub server_addr_for_worker: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct LabState {
    pub dir: PathBuf,
    pub net: Net,
    pub pg_port: u16,
    pub server_port: u16,
    /// Port the workers use for /proto: the API port in netns mode (the
    /// link is the workers' own), a second port on loopback, so a capture
    /// of /proto does not see the runner's API calls.
    #[serde(default)]
    pub proto_port: u16,
    pub server_pid: Option<u32>,
    pub worker_pids: Vec<u32>,
    /// When each was started (`/proc/PID/stat` start time): `down` stops a
    /// recorded pid only while it is still that process.
    #[serde(default)]
    pub server_started: Option<u64>,
    #[serde(default)]
    pub worker_started: Vec<u64>,
    pub api_key: String,
    /// The lab's secrets, generated when it is first brought up: the
    /// PostgreSQL superuser's and CI role's passwords, and the token the
    /// workers show on `/proto`. lab.json is its owner's alone (0600).
    #[serde(default)]
    pub pg_password: String,
    #[serde(default)]
    pub ci_password: String,
    #[serde(default)]
    pub proto_token: String,
    pub organization: String,
    pub project: String,
    pub repository: PathBuf,
    pub trace_dir: Option<PathBuf>,
    /// Where the eval subprocess writes nix's statistics (`<pass>/eval`).
    #[serde(default)]
    pub nix_stats_dir: Option<PathBuf>,
    /// nix counts calls too (instrumented passes).
    #[serde(default)]
    pub count_calls: bool,
    /// nix traces its calls, folded into a profile (instrumented passes).
    #[serde(default)]
    pub nix_trace: bool,
    /// nix runs under Valgrind, which counts its instructions (counted passes).
    #[serde(default)]
    pub count_instructions: bool,
    pub worker_clock_skew_ms: i64,
    pub workers: u32,
    /// Evaluators (shards) each worker's eval subprocess runs at once.
    #[serde(default = "one")]
    pub eval_workers: u32,
    /// Recycle an evaluator past this RSS (bytes) after an attribute.
    #[serde(default)]
    pub eval_max_rss: Option<u64>,
    /// The nix the worker runs (`--nix`), when not the one on PATH.
    #[serde(default)]
    pub nix: Option<PathBuf>,
    /// `--pg-setting NAME=VALUE`, as given; PostgreSQL runs with them.
    #[serde(default)]
    pub pg_settings: Vec<crate::pg::PgSetting>,
    /// The same settings as the running server shows them (`current_setting`).
    #[serde(default)]
    pub pg_settings_shown: Vec<(String, String)>,
    /// `--lab-setting NAME=VALUE`: how the lab's server does its work.
    #[serde(default)]
    pub lab_settings: crate::setting::LabSettings,
}

/// Where the next pass's spans and nix statistics go, and whether nix counts calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassOutput {
    pub trace_dir: Option<PathBuf>,
    pub nix_stats_dir: Option<PathBuf>,
    pub count_calls: bool,
    pub nix_trace: bool,
    /// Counted passes: nix's instructions counted under Valgrind.
    pub count_instructions: bool,
}

impl PassOutput {
    pub fn spans_to(trace_dir: Option<PathBuf>) -> PassOutput {
        PassOutput { trace_dir, ..PassOutput::default() }
    }
}

fn one() -> u32 {
    1
}

impl LabState {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("lab.json")
    }
    pub fn load(dir: &Path) -> Result<LabState, LabError> {
        let p = Self::path(dir);
        let text = std::fs::read_to_string(&p).map_err(|source| LabError::NotUp { path: p.clone(), source })?;
        serde_json::from_str(&text).map_err(|source| LabError::Parse { path: p.clone(), source })
    }
    pub fn save(&self) -> Result<(), LabError> {
        let p = Self::path(&self.dir);
        let tmp = p.with_extension("json.tmp");
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LabError::Io { path, source }
        };
        // It holds the lab's keys and passwords: its owner's alone.
        crate::pg::write_private(
            &tmp,
            &String::from_utf8(serde_json::to_vec_pretty(self).expect("state serializes")).expect("JSON is UTF-8"),
        )?;
        std::fs::rename(&tmp, &p).map_err(io(&p))
    }
    pub fn set_output(&mut self, out: &PassOutput) {
        self.trace_dir = out.trace_dir.clone();
        self.nix_stats_dir = out.nix_stats_dir.clone();
        self.count_calls = out.count_calls;
        self.nix_trace = out.nix_trace;
        self.count_instructions = out.count_instructions;
    }
    pub fn base_url(&self) -> String {
        format!("http://{}:{}", self.net.server_addr, self.server_port)
    }
    /// Where and as whom the lab's API answers.
    pub fn endpoint(&self) -> evalbench_api::Endpoint {
        evalbench_api::Endpoint {
            url: self.base_url(),
            api_key: self.api_key.clone(),
            organization: self.organization.clone(),
            project: self.project.clone(),
            login: None,
        }
    }
    pub fn pg_dir(&self) -> PathBuf {
        self.dir.join("pg")
    }
    pub fn eval_cache(&self) -> PathBuf {
        self.dir.join("worker-cache")
    }
    pub fn sources(&self) -> PathBuf {
        self.dir.join("sources")
    }
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }
    /// The superuser's URL from the runner's side (statistics, resets), its
    /// password in it: never printed but through `pg::redacted`.
    pub fn admin_database_url(&self) -> String {
        format!(
            "host={} port={} user=postgres password={} dbname=gradient",
            self.net.server_addr, self.pg_port, self.pg_password
        )
    }
    pub fn postgres_log(&self) -> PathBuf {
        self.pg_dir().join("postgres.log")
    }
    /// Database URL for the CI role, as the server (in its namespace) sees
    /// it, its password in it: handed to the server in its environment.
    pub fn database_url(&self) -> String {
        format!("host=127.0.0.1 port={} user=gradient password={} dbname=gradient", self.pg_port, self.ci_password)
    }
}

/// Nix configuration of the lab: flakes on, no substituters (no network),
/// no build users (the lab evaluates, it never builds).
pub const NIX_CONFIG: &str = "experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\n";
