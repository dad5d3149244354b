//! A capture that cannot be decoded: the file, and where in it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A read failed at this line of a text capture.
    #[error("{name}:{line}: {source}")]
    Line { name: String, line: u64, source: std::io::Error },
    /// The bytes are not what this decoder reads; `at` says where (a byte
    /// offset, a line and column) and `expected` what it wanted.
    #[error("{name}: {at}{expected}")]
    Format { name: String, at: String, expected: String },
    /// A tool the decoder runs (perf) failed or is missing.
    #[error("{tool}: {message}")]
    Tool { tool: String, message: String },
}

impl DecodeError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> DecodeError {
        let path = path.into();
        move |source| DecodeError::Io { path, source }
    }
    pub(crate) fn format(name: impl Into<String>, at: impl Into<String>, expected: impl Into<String>) -> DecodeError {
        DecodeError::Format { name: name.into(), at: at.into(), expected: expected.into() }
    }
}
