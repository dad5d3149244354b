use std::fmt;
use std::path::PathBuf;

/// What went wrong, always naming the file and, where it helps, the entry or offset.
#[derive(Debug)]
pub enum BundleError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The archive stream could not be read (truncated or corrupt gzip/tar).
    Archive {
        path: PathBuf,
        entry: Option<String>,
        offset: u64,
        message: String,
    },
    /// An entry was refused for safety; nothing of it was written.
    Refused {
        path: PathBuf,
        entry: String,
        reason: String,
    },
    /// The unpacked size or entry count went over the configured limit.
    TooLarge {
        path: PathBuf,
        limit: String,
    },
    NotABundle {
        path: PathBuf,
        reason: String,
    },
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            BundleError::Archive { path, entry: Some(e), offset, message } => {
                write!(f, "{}: entry {e:?}, at compressed byte {offset}: {message}", path.display())
            }
            BundleError::Archive { path, entry: None, offset, message } => {
                write!(f, "{}: at compressed byte {offset}: {message}", path.display())
            }
            BundleError::Refused { path, entry, reason } => {
                write!(f, "{}: refused entry {entry:?}: {reason}", path.display())
            }
            BundleError::TooLarge { path, limit } => {
                write!(f, "{}: unpacking stopped at the limit of {limit}; raise it (--max-unpacked) if the bundle is trusted", path.display())
            }
            BundleError::NotABundle { path, reason } => write!(f, "{}: not an evalbench bundle: {reason}", path.display()),
        }
    }
}

impl std::error::Error for BundleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BundleError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> BundleError {
    let path = path.into();
    move |source| BundleError::Io { path, source }
}
