use std::path::PathBuf;

/// What went wrong, always naming the file and, where it helps, the entry or offset.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The archive stream could not be read (truncated or corrupt gzip/tar).
    #[error(
        "{}: {}at compressed byte {offset}: {message}",
        path.display(),
        entry.as_ref().map(|e| format!("entry {e:?}, ")).unwrap_or_default()
    )]
    Archive { path: PathBuf, entry: Option<String>, offset: u64, message: String },
    /// An entry was refused for safety; nothing of it was written.
    #[error("{}: refused entry {entry:?}: {reason}", path.display())]
    Refused { path: PathBuf, entry: String, reason: Refusal },
    /// The unpacked size or entry count went over the configured limit.
    #[error("{}: unpacking stopped at the limit of {limit}; raise it (--max-unpacked) if the bundle is \
        trusted", path.display())]
    TooLarge { path: PathBuf, limit: String },
    /// A JSON file of the bundle that does not read as what it should be;
    /// serde's error (with its line and column) is the source.
    #[error("{}: expected {expected}: {source}", path.display())]
    Parse { path: PathBuf, expected: &'static str, source: serde_json::Error },
    /// A text file of the bundle (Valgrind's cachegrind output) that does
    /// not read: the line (1-based) and what was expected there.
    #[error("{}:{line}: expected {expected}, found {found}", path.display())]
    Line { path: PathBuf, line: usize, expected: &'static str, found: String },
    #[error("{}: not an evalbench bundle: {reason}", path.display())]
    NotABundle { path: PathBuf, reason: String },
    /// Where evalbench would write stands something not its own: refused
    /// before anything is written (`manifest`).
    #[error("{}: {why}; refusing to replace or write into it", path.display())]
    NotOurs { path: PathBuf, why: String },
}

/// Why an archive's entry was refused before anything of it was written.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("path contains `..`")]
    ParentDir,
    #[error("absolute path")]
    Absolute,
    /// A symbolic link that climbs out of its directory.
    #[error("link to {} leads out of its directory (`..`)", .0.display())]
    LinkUp(PathBuf),
    #[error("link to absolute path {}", .0.display())]
    LinkAbsolute(PathBuf),
    #[error("link without a target")]
    LinkWithoutTarget,
    /// A hard link whose target path is itself refused.
    #[error("hard link target: {0}")]
    HardLinkTarget(Box<Refusal>),
    #[error("hard link to {} which is not in the archive", .0.display())]
    HardLinkOutside(PathBuf),
    #[error("hard link to something other than a regular file")]
    HardLinkNotAFile,
    /// A device, a FIFO, ...: tar's name for the type.
    #[error("entry type {0} is not allowed in a bundle")]
    EntryType(String),
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> BundleError {
    let path = path.into();
    move |source| BundleError::Io { path, source }
}

/// `BundleError::Parse` for `path`, expecting `expected`.
pub(crate) fn parse(path: impl Into<PathBuf>, expected: &'static str) -> impl FnOnce(serde_json::Error) -> BundleError {
    let path = path.into();
    move |source| BundleError::Parse { path, expected, source }
}
