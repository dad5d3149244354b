//! What can be wrong with a file given as a diagnostic report, each kind
//! naming what was expected, with the file it was found in.

use std::path::PathBuf;

/// A report that could not be read: the file and what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", file.display())]
pub struct DiagnosticError {
    pub file: PathBuf,
    pub kind: ErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a SQLite file (a Gradient diagnostic report starts with \"SQLite format 3\")")]
    NotSqlite,
    #[error("{size} bytes, past the limit of {limit} (--max-unpacked)")]
    TooLarge { size: u64, limit: u64 },
    #[error("SQLite could not read it: {0}")]
    Sqlite(String),
    #[error("no report_meta table with one row: not a Gradient diagnostic report")]
    NoMeta,
    #[error(
        "schema version {found} of Gradient's diagnostic report; evalbench reads version {} (Gradient's own \
         inspector refuses other versions too)",
        reads.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    )]
    Schema { found: i64, reads: Vec<i64> },
    #[error("table {table} is missing (schema {schema} has it{why})")]
    MissingTable { table: String, schema: i64, why: &'static str },
    #[error("table {table} has no column {column} (schema {schema} has it)")]
    MissingColumn { table: String, column: String, schema: i64 },
    #[error("{table}, row {row}, column {column}: expected {expected}, found {found}")]
    BadValue { table: String, row: u64, column: String, expected: &'static str, found: String },
    #[error("{table} holds more than {limit} rows: more than evalbench reads of one evaluation")]
    TooManyRows { table: String, limit: u64 },
    #[error("reading {table} ran past its bound of {steps} SQLite steps (a view or a hostile file?)")]
    Bounded { table: String, steps: u64 },
    #[error("{0}")]
    Invalid(String),
}

impl DiagnosticError {
    pub fn new(file: impl Into<PathBuf>, kind: ErrorKind) -> DiagnosticError {
        DiagnosticError { file: file.into(), kind }
    }

    /// A schema version evalbench does not read (compare exits 2 on it, naming it).
    pub fn is_unknown_schema(&self) -> bool {
        matches!(self.kind, ErrorKind::Schema { .. })
    }
}
