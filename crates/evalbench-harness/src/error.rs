//! What can stop a pass, a capture, a gate or a bench run. Lower layers'
//! errors are kept whole; the harness's own are sentences that name the
//! file, the step or the flag to change.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Host(#[from] evalbench_host::HostError),
    #[error(transparent)]
    Api(#[from] evalbench_api::ApiError),
    #[error(transparent)]
    Lab(#[from] evalbench_lab::LabError),
    #[error(transparent)]
    Decode(#[from] evalbench_decode::DecodeError),
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// Everything else, worded whole.
    #[error("{0}")]
    Message(String),
}

impl From<String> for HarnessError {
    fn from(m: String) -> HarnessError {
        HarnessError::Message(m)
    }
}

impl From<&str> for HarnessError {
    fn from(m: &str) -> HarnessError {
        HarnessError::Message(m.to_string())
    }
}

/// For callers that still carry errors as text.
impl From<HarnessError> for String {
    fn from(e: HarnessError) -> String {
        e.to_string()
    }
}
