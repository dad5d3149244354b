//! Why a job failed in the worker, typed until it is sent: over `/proto` an
//! evaluation's failure travels as text (`EvalFailed { attr, message }`),
//! as Gradient's does, and the server records it as the evaluation's error.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// A program that would not start (git, nix).
    #[error("{program}: {source}")]
    Spawn { program: String, source: std::io::Error },
    /// A program that ended badly: the command line and its stderr.
    #[error("{command}: {stderr}")]
    Command { command: String, stderr: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A `.drv` file that is not ATerm where it should be.
    #[error("{path}: {source}")]
    Drv { path: String, source: super::drv::DrvError },
    #[error("starting the eval subprocess: {0}")]
    StartEval(std::io::Error),
    /// The worker's own executable, or waiting for its eval subprocess.
    #[error("{0}")]
    Process(std::io::Error),
    /// The eval subprocess ended without saying why: how it ended.
    #[error("the eval subprocess ended: {0}")]
    EvalEnded(String),
    /// What the eval subprocess reported: the attribute, and nix's words.
    #[error("{message}")]
    Evaluation { attr: Option<String>, message: String },
}

impl JobError {
    /// The attribute whose evaluation failed, where one did.
    pub fn attr(&self) -> Option<String> {
        match self {
            JobError::Evaluation { attr, .. } => attr.clone(),
            _ => None,
        }
    }
}
