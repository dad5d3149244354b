//! How a lab is set up: one value that `lab up`, `run` and the tests build
//! once and the lab's start reads (`control::up`).

use std::path::PathBuf;

use crate::control::NetMode;

/// How a lab is set up, whoever starts it (`lab up`, `run`, a test): one
/// value, made once from the flags both commands share.
#[derive(Debug, Clone)]
pub struct LabConfig {
    pub net: NetMode,
    /// Shift every worker and eval span timestamp by this much (to see alignment work).
    pub worker_clock_skew_ms: i64,
    /// Long-lived nix evaluators per eval subprocess, attributes sharded over them.
    pub eval_workers: u32,
    /// Recycle an evaluator past this RSS (bytes) after an attribute.
    pub eval_max_rss: Option<u64>,
    /// PostgreSQL settings (`--pg-setting NAME=VALUE`), checked by PostgreSQL itself.
    pub pg_settings: Vec<crate::pg::PgSetting>,
    /// The nix the worker runs (`--nix`); None: nix on PATH.
    pub nix: Option<PathBuf>,
    /// The lab's own settings (`--lab-setting NAME=VALUE`); the server starts with them.
    pub lab_settings: crate::setting::LabSettings,
}

impl Default for LabConfig {
    /// As `lab up` without flags: namespaces when root, one evaluator, nix on PATH.
    fn default() -> LabConfig {
        LabConfig {
            net: NetMode::Auto,
            worker_clock_skew_ms: 0,
            eval_workers: 1,
            eval_max_rss: None,
            pg_settings: Vec::new(),
            nix: None,
            lab_settings: Default::default(),
        }
    }
}
