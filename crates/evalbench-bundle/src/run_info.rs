//! `<run>/run.json`: what the runner knew about a pass. Every key is optional
//! to the reader, and unknown keys are kept in `raw`.
//!
//! Gradient's benchmark writes `{eval_id, cold, instrumented, evaluated_s}`
//! and keeps the evaluation's `evaluation_metric` rows in a file beside it
//! (`evaluation_metric.json`); evalbench writes those keys and that file
//! too, beside its own richer keys, and reads either (docs/GRADIENT-FORMAT.md).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{io, BundleError};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatusChange {
    pub status: String,
    pub ts_us: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_id: Option<String>,
    /// Gradient's name for the evaluation id (the same value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_id: Option<String>,
    /// Gradient's: whether the pass began from a fresh database and cache,
    /// and whether perf, strace and auto_explain ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrumented: Option<bool>,
    /// Final status of the evaluation (Completed, Failed, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Status timeline as polled by the runner, on the runner's clock.
    #[serde(default)]
    pub statuses: Vec<StatusChange>,
    /// Seconds from the evaluate request until the evaluation left EvaluatingDerivation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluated_s: Option<f64>,
    /// Unix microseconds of the evaluate request, on the runner's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_us: Option<i64>,
    /// Which captures were on, as file or capture names.
    #[serde(default)]
    pub captures: Vec<String>,
    /// The `evaluation_metric` row of the CI, when the target has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_metric: Option<serde_json::Value>,
    /// nix's own counters, summed over the pass's nix evaluations
    /// (`eval/nix-stats.*.json`; see `nix_stats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nix_stats: Option<serde_json::Value>,
    /// What was measured and where (the same in every pass of a run);
    /// absent in bundles written before it was kept, or by other tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::Provenance>,
    /// What the runner adds about its captures; absent in bundles other
    /// tools wrote.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<RunnerInfo>,
    /// Everything, as read.
    #[serde(skip)]
    pub raw: serde_json::Value,
    /// What reading the files beside run.json went past (an unreadable
    /// `evaluation_metric.json`), for the reader's warnings.
    #[serde(skip)]
    pub read_warnings: Vec<String>,
}

/// The runner's own record of a pass: where it ran, when the captures ran,
/// what went wrong with them. Every key is always written (an empty list, a
/// null), so a reader tells "nothing happened" from "not recorded".
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunnerInfo {
    /// `lab` or `gradient`.
    #[serde(default)]
    pub target: String,
    /// The server's own status timeline, on the server's clock.
    #[serde(default)]
    pub server_statuses: Vec<StatusChange>,
    /// Unix microseconds, runner clock, when the captures were armed and stopped.
    #[serde(default)]
    pub capture_started_us: i64,
    #[serde(default)]
    pub capture_stopped_us: i64,
    /// The evaluation's error message, as the server gave it.
    #[serde(default)]
    pub error: Option<String>,
    /// Captures that failed to start, stop or be written, in words.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Captures a pass of this kind has that were switched off.
    #[serde(default)]
    pub captures_off: Vec<String>,
    /// The server side of each capture, for decoders of captures that began
    /// mid-connection.
    #[serde(default)]
    pub capture_ports: Option<CapturePorts>,
    /// Per packet capture, the packets cut from it for lying outside
    /// `[capture_started_us, capture_stopped_us]` (absent in older bundles).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub outside_window: std::collections::BTreeMap<String, OutsideWindow>,
    /// PostgreSQL settings the run was given (`--pg-setting`), as the server showed them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub pg_settings: std::collections::BTreeMap<String, String>,
    /// Why the pass did not finish, as the runner saw it (absent: it finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// How the run ended: `completed`, `failed`, `timed_out`,
    /// `interrupted`, `crashed` or `stopped` (`outcome::Ended`); absent in
    /// bundles written before it was recorded (then read from `status` and
    /// `failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The target's processes that died during the pass, each named with
    /// how it ended and the last lines of its log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead: Vec<String>,
    /// What the machine did during the window besides the pipeline
    /// (absent in bundles written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineState>,
    /// In an interleaved session, which of its two targets ran this run
    /// (0: side A's, 1: side B's); the sides cross between them round by
    /// round. Absent: one target ran every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u32>,
}

/// The machine during a pass's window, from /proc at its two ends: what
/// cannot be isolated on a shared machine is measured instead, so that a
/// time taken while something else ran can be named and set aside.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct MachineState {
    /// Seconds between the two readings.
    pub window_s: f64,
    /// CPU the pipeline's own processes used (the runner's process tree and
    /// the target's daemons), in cores: CPU seconds over the window.
    pub lab_cores: f64,
    /// CPU every other process (and the kernel's own threads) used, in
    /// cores: the machine's busy time less the pipeline's.
    pub other_cores: f64,
    /// CPU the hypervisor gave to other guests (steal), in cores.
    pub steal_cores: f64,
    /// Share of the window in which some task stalled on CPU, IO, memory
    /// (PSI's `some` line); None where the kernel has no /proc/pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_io: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub psi_memory: Option<f64>,
    /// Dirty and writeback memory, KiB: the larger of the two readings.
    pub dirty_kib: u64,
    pub writeback_kib: u64,
}

/// Packets a capture held outside the pass's window, cut from its file.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct OutsideWindow {
    pub before: u64,
    pub after: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CapturePorts {
    pub pg: u16,
    pub proto: u16,
}

impl RunInfo {
    /// The PostgreSQL settings the run was given (`--pg-setting`); None when none were.
    pub fn pg_settings(&self) -> Option<&std::collections::BTreeMap<String, String>> {
        self.runner.as_ref().map(|r| &r.pg_settings).filter(|s| !s.is_empty())
    }

    /// Reads run.json, and Gradient's `evaluation_metric.json` beside it
    /// where run.json has no `evaluation_metric` of its own.
    pub fn read(path: &Path) -> Result<RunInfo, BundleError> {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let raw: serde_json::Value =
            serde_json::from_str(&text).map_err(crate::error::parse(path, "run.json, a JSON object"))?;
        let mut info: RunInfo =
            serde_json::from_value(raw.clone()).map_err(crate::error::parse(path, "run.json's fields"))?;
        info.raw = raw;
        if info.evaluation_id.is_none() {
            info.evaluation_id = info.eval_id.clone();
        }
        if info.evaluation_metric.is_none() {
            let beside = path.with_file_name(crate::layout::EVALUATION_METRIC);
            match read_evaluation_metric(&beside) {
                Ok(m) => info.evaluation_metric = m,
                Err(e) => info.read_warnings.push(e.to_string()),
            }
        }
        Ok(info)
    }

    pub fn write(&self, path: &Path) -> Result<(), BundleError> {
        let text = serde_json::to_string_pretty(self).expect("run info serializes");
        crate::write_atomic(path, text.as_bytes())
    }
}

/// Gradient's `evaluation_metric.json` (`SELECT * FROM evaluation_metric`
/// for the evaluation, as a JSON array): its one row, None where the file
/// is absent or empty. More than one row is refused, and said.
pub fn read_evaluation_metric(path: &Path) -> Result<Option<serde_json::Value>, MetricError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(MetricError::Io { path: path.to_path_buf(), source }),
    };
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| MetricError::NotJson { path: path.to_path_buf(), source })?;
    match v {
        serde_json::Value::Array(rows) if rows.len() <= 1 => match rows.into_iter().next() {
            None => Ok(None),
            Some(row @ serde_json::Value::Object(_)) => Ok(Some(row)),
            Some(_) => Err(MetricError::RowNotObject { path: path.to_path_buf() }),
        },
        serde_json::Value::Array(rows) => Err(MetricError::Rows { path: path.to_path_buf(), rows: rows.len() }),
        row @ serde_json::Value::Object(_) => Ok(Some(row)),
        _ => Err(MetricError::Shape { path: path.to_path_buf() }),
    }
}

/// Why `evaluation_metric.json` was not read (its run keeps everything else).
#[derive(Debug, thiserror::Error)]
pub enum MetricError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(
        "{}: line {}, column {}: not JSON ({source}); evaluation_metric not read",
        path.display(),
        source.line(),
        source.column()
    )]
    NotJson { path: PathBuf, source: serde_json::Error },
    #[error("{}: its row is not an object; evaluation_metric not read", path.display())]
    RowNotObject { path: PathBuf },
    #[error("{}: {rows} rows for one evaluation where Gradient keeps one; evaluation_metric not read", path.display())]
    Rows { path: PathBuf, rows: usize },
    #[error("{}: neither an array of rows nor a row; evaluation_metric not read", path.display())]
    Shape { path: PathBuf },
}
