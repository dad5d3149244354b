//! What can stop `history`: a bundle that is not one, a database that
//! cannot be reached or is of a newer schema, a bundle added twice.

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    #[error("{db}: {source}")]
    Sqlite { db: String, source: rusqlite::Error },
    #[error("{db}: {message}")]
    Postgres { db: String, message: String },
    /// The database was made by a newer evalbench.
    #[error("{db}: schema version {found} is newer than this evalbench knows ({known}); use a newer evalbench")]
    NewerSchema { db: String, found: i64, known: i64 },
    /// The same bundle (same passes, same run.json files) was added before.
    #[error("{bundle}: already in the history (added {added}, commit {commit}); a bundle is added once")]
    Duplicate { bundle: String, added: String, commit: String },
    /// Input the user can fix: the flag or file named.
    #[error("{0}")]
    Invalid(String),
}

/// Postgres errors with their server message, not only "db error".
pub(crate) fn pg(db: &str, e: tokio_postgres::Error) -> HistoryError {
    let message = match e.as_db_error() {
        Some(d) => format!("{}: {}", d.code().code(), d.message()),
        None => {
            // "error connecting to server" says little; its cause says why.
            let mut m = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                m.push_str(&format!(": {c}"));
                cause = c.source();
            }
            m
        }
    };
    HistoryError::Postgres { db: db.to_string(), message }
}
