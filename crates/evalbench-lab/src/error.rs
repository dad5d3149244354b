//! What can go wrong in the lab. The lower layers' errors are kept whole
//! (a command and its stderr, an API request, a PostgreSQL error); the lab's
//! own are sentences that name the file, the process or the flag to change.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Host(#[from] evalbench_host::HostError),
    #[error(transparent)]
    Api(#[from] evalbench_api::ApiError),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The eval subprocess's failure, its cause kept.
    #[error(transparent)]
    Eval(#[from] crate::eval::Failure),
    /// Everything else, worded whole.
    #[error("{0}")]
    Message(String),
}

impl From<String> for LabError {
    fn from(m: String) -> LabError {
        LabError::Message(m)
    }
}

impl From<&str> for LabError {
    fn from(m: &str) -> LabError {
        LabError::Message(m.to_string())
    }
}

/// For callers that still carry errors as text.
impl From<LabError> for String {
    fn from(e: LabError) -> String {
        e.to_string()
    }
}
