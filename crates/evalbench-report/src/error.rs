//! What can stop a summary or a report from being written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    /// No pass holds anything to summarize; the reader's warnings say why.
    #[error("{}: nothing usable: no pass has spans or a readable \
        run.json{}", bundle.display(), warnings.iter().map(|w| format!("\n  {w}")).collect::<String>())]
    NothingUsable { bundle: PathBuf, warnings: Vec<String> },
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReportError {
        let path = path.into();
        move |source| ReportError::Io { path, source }
    }
}
