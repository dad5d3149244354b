//! What can stop the sample pipeline: a process that would not start or
//! died, a file, a pass that did not complete. Each a variant with what it
//! is about, worded once here.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A role (`--role server|worker|eval`) that ended on an error of its own.
    #[error("sample {role}: {source}")]
    Role { role: &'static str, source: std::io::Error },
    /// A role started without a flag it needs.
    #[error("sample {role}: --{flag} is required")]
    Missing { role: &'static str, flag: &'static str },
    #[error("unknown sample role {0:?}")]
    UnknownRole(String),
    /// A process the driver starts (`the sample server`, `a sample worker`).
    #[error("starting {what}: {source}")]
    Start { what: &'static str, source: std::io::Error },
    /// The server went quiet, or stopped, before it said `what`.
    #[error("{pass}: the sample server stopped or timed out waiting for {what}")]
    Silent { pass: String, what: &'static str },
    #[error("{pass}: unexpected server line {line:?}")]
    Unexpected { pass: String, line: String },
    /// Asking the server to evaluate (its stdin).
    #[error("{pass}: {source}")]
    Request { pass: String, source: std::io::Error },
    /// The evaluation ended, but not Completed.
    #[error("{pass}: the evaluation ended {}", status.as_deref().unwrap_or("without a status"))]
    Ended { pass: String, status: Option<String> },
}

impl SampleError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> SampleError + '_ {
        move |source| SampleError::Io { path: path.to_path_buf(), source }
    }
}
