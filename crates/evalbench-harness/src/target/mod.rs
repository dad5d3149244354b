//! Targets: what the runner measures. Each knows how to reset itself for a
//! cold pass, how to reach its API and its database, and where to capture.

pub mod gradient;
pub mod lab;

use crate::error::HarnessError;
use std::path::{Path, PathBuf};

use evalbench_api::Endpoint;
use evalbench_bundle::provenance::{System, Workload};
use evalbench_host::HostExec;

/// Where and how to capture.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CaptureInfo {
    pub server: HostExec,
    pub worker: HostExec,
    /// Interface and port of /proto on the server host.
    pub proto_iface: String,
    pub proto_port: u16,
    /// Interface and port of PostgreSQL as the server reaches it, on the server host.
    pub pg_iface: String,
    pub pg_port: u16,
    /// PostgreSQL's log on the server host (for auto_explain).
    pub pg_log: Option<String>,
    /// Superuser connection from the runner, for statistics.
    pub admin_database_url: String,
    /// The CI's role: statistics are filtered by it.
    pub ci_role: String,
    /// PostgreSQL settings given to the target's server, as it shows them (`--pg-setting`).
    pub pg_settings: Vec<(String, String)>,
    /// How to put a packet on each captured link after the window, where
    /// the target knows (`capture::tcpdump::Nudge`); without one a capture
    /// waits for 400 ms of silence before it stops.
    #[serde(skip)]
    pub proto_nudge: Option<crate::capture::tcpdump::Nudge>,
    #[serde(skip)]
    pub pg_nudge: Option<crate::capture::tcpdump::Nudge>,
}

/// Where a pass's files go, and whether it is instrumented.
pub struct PassPlace<'a> {
    pub trace_dir: &'a Path,
    /// nix's statistics (`<pass>/eval`), where the target can write them.
    pub eval_dir: &'a Path,
    pub instrumented: bool,
    /// Instrumented and not switched off: nix traces its calls (a profile).
    pub nix_trace: bool,
    /// A counted pass: nix's instructions counted under Valgrind.
    pub counted: bool,
}

pub trait Target {
    fn name(&self) -> &str;
    /// Whether the pipeline (nix, git, PostgreSQL) runs on this machine,
    /// started by us, so its tools are checked before the first pass.
    fn pipeline_here(&self) -> bool;
    /// Brings the target up (the lab) or checks that it answers.
    fn start(&mut self) -> Result<(), HarnessError>;
    /// Before a pass: a cold reset (database recreated, eval cache emptied) or
    /// a warm restart. Spans of the pass go to `place.trace_dir`, or are fetched there.
    fn prepare(&mut self, cold: bool, place: &PassPlace<'_>) -> Result<(), HarnessError>;
    /// After a pass: make sure every span of the pass is in `trace_dir`.
    fn collect_spans(&mut self, trace_dir: &Path) -> Result<(), HarnessError>;
    fn endpoint(&self) -> Endpoint;
    fn capture(&self) -> CaptureInfo;
    fn server_pid(&self) -> Result<u32, HarnessError>;
    fn worker_pids(&self) -> Result<Vec<u32>, HarnessError>;
    /// The eval subprocesses already running on the worker host when the
    /// captures start (strace attaches to them too); none where each job
    /// starts its own, as the worker's child.
    fn eval_pids(&self) -> Result<Vec<u32>, HarnessError> {
        Ok(Vec::new())
    }
    /// What it evaluates and with what, for the run's provenance (after
    /// `start`): the flake as given, its revision and narHash, nix's and the
    /// server's versions. What it cannot learn stays None ("unknown").
    fn describe(&mut self) -> (Workload, System);
    /// After a pass failed: the target's own processes that died, each
    /// named with how it ended and its last log lines (the lab knows its
    /// processes; a deployment elsewhere says nothing). `evaluation_error`
    /// is what the server reported, where it still could.
    fn autopsy(&mut self, _evaluation_error: Option<&str>) -> Vec<String> {
        Vec::new()
    }
    /// Stops what `start` started. Never fails.
    fn finish(&mut self);
    /// The target's processes on this machine that the runner did not
    /// start as its own children (a daemon adopted by init): their CPU is
    /// the pipeline's, not another process's.
    fn own_pids(&self) -> Vec<u32> {
        Vec::new()
    }
    /// The workload this target was made for, where another target of the
    /// session may serve it instead (the lab's flake, and the lab settings it
    /// is measured with); None: it cannot trade.
    fn workload(&self) -> Option<Served> {
        None
    }
    /// Serves `workload` from the next cold pass on, in place of its own:
    /// an interleaved session crosses its two targets this way, so that a
    /// difference between them falls on both sides (`run_sides`).
    fn serve(&mut self, workload: &Served) -> Result<(), HarnessError> {
        Err(HarnessError::Workload { target: self.name().to_string(), flake: workload.flake.clone() })
    }
}

/// What a side of a session measures, as a target serves it: the flake,
/// and the lab's settings, which go with the side wherever it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub flake: PathBuf,
    pub lab_settings: evalbench_lab::setting::LabSettings,
}

/// The server's version from its health endpoint (`message.version`, or a
/// top-level `version`), where it tells one.
pub(crate) fn server_version(ep: Endpoint) -> Option<String> {
    let h = evalbench_api::Client::new(ep, std::time::Duration::from_secs(5)).health()?;
    h["message"]["version"].as_str().or(h["version"].as_str()).map(String::from)
}
