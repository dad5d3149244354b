//! What can go wrong inside the lab's server, typed: a statement that
//! failed (and what the server was doing), a report that names no job of
//! the server's, the graph writer's failure or its absence. The server does
//! not stop for these: each is said on its stderr (the lab's
//! logs/server.log), and the evaluation concerned fails where it cannot go on.

use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{doing}: {source}")]
    Db { doing: &'static str, source: tokio_postgres::Error },
    #[error("a report names job {job:?}, not a job id: {source}")]
    NotAJob { job: String, source: uuid::Error },
    #[error("a report names job {0}, which the server did not hand out")]
    UnknownJob(uuid::Uuid),
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// The diagnostic report could not be written (SQLite said why).
    #[error("writing the diagnostic report: {0}")]
    Report(#[from] rusqlite::Error),
    /// The graph writer ended (on an error it said): nothing records derivations.
    #[error("the graph writer is gone")]
    WriterGone,
}

/// The graph writer's failure, sent to every batch of the flush that failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GraphError {
    /// The transaction's error, as PostgreSQL said it.
    #[error("{0}")]
    Failed(Arc<tokio_postgres::Error>),
    /// A serialization failure or deadlock on every try.
    #[error("gave up after {attempts} attempts: {last}")]
    GaveUp { attempts: u32, last: Arc<tokio_postgres::Error> },
}

/// A step whose failure the server does not stop for: said on the
/// server's stderr, never dropped; its value where it had one.
pub trait Logged<T> {
    fn logged(self) -> Option<T>;
}

impl<T> Logged<T> for Result<T, ServerError> {
    fn logged(self) -> Option<T> {
        self.map_err(|e| eprintln!("lab server: {e}")).ok()
    }
}
