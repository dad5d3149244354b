//! What can stop a summary or a report from being written.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    /// No pass holds anything to summarize; the reader's warnings say why.
    #[error("{}: nothing usable: no pass has spans or a readable run.json{}", bundle.display(), warnings.iter().map(|w| format!("\n  {w}")).collect::<String>())]
    NothingUsable { bundle: PathBuf, warnings: Vec<String> },
    /// A thread of ours panicked: a bug, said as one, never taken for "no data".
    #[error("{what}: a worker thread panicked: {message} (a bug in evalbench: please report it)")]
    Panicked { what: String, message: String },
}

/// A scoped thread's result; its panic as [`ReportError::Panicked`].
pub fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>, what: &str) -> Result<T, ReportError> {
    h.join().map_err(|p| ReportError::Panicked { what: what.to_string(), message: panic_message(p.as_ref()) })
}

/// The text a panic was raised with, when it has one.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "no message".into())
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReportError {
        let path = path.into();
        move |source| ReportError::Io { path, source }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_panicking_thread_is_an_error_with_its_message() {
        let r: Result<Option<u32>, _> =
            std::thread::scope(|s| super::joined(s.spawn(|| -> Option<u32> { panic!("boom at span 7") }), "summary of cold-clean"));
        let e = r.unwrap_err().to_string();
        assert!(e.contains("summary of cold-clean") && e.contains("boom at span 7") && e.contains("panicked"), "{e}");
        let ok = std::thread::scope(|s| super::joined(s.spawn(|| Some(3)), "x")).unwrap();
        assert_eq!(ok, Some(3));
    }
}
