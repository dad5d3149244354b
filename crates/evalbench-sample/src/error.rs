//! What can stop the sample pipeline: a process that would not start or
//! died, a file, a pass that did not complete.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// Everything else, worded whole.
    #[error("{0}")]
    Message(String),
}

impl From<String> for SampleError {
    fn from(m: String) -> SampleError {
        SampleError::Message(m)
    }
}

impl From<&str> for SampleError {
    fn from(m: &str) -> SampleError {
        SampleError::Message(m.to_string())
    }
}
