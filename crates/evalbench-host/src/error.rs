//! What can go wrong on a host: a command that cannot start or that fails
//! (with its stderr), a file, a fetch from a remote host.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The program could not be started.
    #[error("{command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    /// It ran and failed; `stderr` is its last word.
    #[error("{command} failed ({status}): {stderr}")]
    Failed { command: String, status: std::process::ExitStatus, stderr: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// Bringing a file back from a remote host failed.
    #[error("fetching {what}: {why}")]
    Fetch { what: String, why: String },
}

impl HostError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HostError {
        let path = path.into();
        move |source| HostError::Io { path, source }
    }
    pub(crate) fn spawn(cmd: &std::process::Command) -> impl FnOnce(std::io::Error) -> HostError {
        let command = format!("{cmd:?}");
        move |source| HostError::Spawn { command, source }
    }
}

/// For callers that still carry errors as text.
impl From<HostError> for String {
    fn from(e: HostError) -> String {
        e.to_string()
    }
}
