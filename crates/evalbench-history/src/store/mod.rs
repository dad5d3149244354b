//! Where the history lives: an embedded SQLite file (the default) or a
//! PostgreSQL server many CI machines write to. The same tables in both,
//! made on first use and versioned; every `add` is one transaction, so a
//! writer killed half-way leaves nothing of its bundle behind.

mod judged;
mod judging;
mod postgres;
mod sqlite;

use std::collections::BTreeMap;

use crate::record::BundleRecord;
use crate::HistoryError;

/// The schema this evalbench writes; a database with a higher one is refused.
/// 2: a change found holds its grounds (`series::Why`), worded when shown;
/// 1 held its sentence. A database of 1 is judged again from its own rows
/// on first use, in the opening transaction (`judging::judge_stored_again`).
pub const SCHEMA_VERSION: i64 = 2;

/// Where the bundle came from, as `history add` was told.
#[derive(Debug, Clone)]
pub struct Meta {
    pub commit: String,
    /// Unix seconds.
    pub commit_time: i64,
    pub branch: Option<String>,
    pub machine: Option<String>,
    /// The benchmark: the flake as given (the bundle's provenance, or `--benchmark`).
    pub benchmark: Option<String>,
    /// The bundle's path, for messages.
    pub bundle: String,
}

/// One pass run as stored, with its commit.
#[derive(Debug, Clone)]
pub struct Stored {
    pub run_id: i64,
    pub commit: String,
    pub commit_time: i64,
    /// Unix µs when it was added: orders runs of one commit time.
    pub added_us: i64,
    pub branch: Option<String>,
    pub machine: Option<String>,
    /// The benchmark (None for runs added before it was kept).
    pub benchmark: Option<String>,
    /// The bundle (or diagnostic report) as `history add` was given it.
    pub source: String,
    pub pass: String,
    pub repeat: i64,
    pub evaluated_s: Option<f64>,
    pub spans: BTreeMap<String, f64>,
    /// nix's counters of the run (empty when it had none).
    pub counters: BTreeMap<String, f64>,
}

/// The judged series as `add` stored them, and the commits.
#[derive(Debug, Clone)]
pub struct JudgedHistory {
    pub commits: Vec<crate::series::Commit>,
    pub series: BTreeMap<crate::series::SeriesKey, Vec<crate::judge::Judged>>,
}

pub trait Store {
    /// Adds a bundle and judges its commit in each series it touches, in
    /// one transaction; refuses one added before.
    fn add(&mut self, meta: &Meta, record: &BundleRecord) -> Result<i64, HistoryError>;
    /// Every stored pass run with its span totals.
    fn load(&mut self) -> Result<Vec<Stored>, HistoryError>;
    /// The judged series (without inputs; with each commit's span medians
    /// when `medians`). None for a history whose runs no `add` judged yet
    /// (written by an evalbench before judgements were kept).
    fn load_judged(&mut self, medians: bool) -> Result<Option<JudgedHistory>, HistoryError>;
}

/// `postgresql://...` (or `postgres://...`) is a server; anything else a SQLite file.
/// Made where it is not there yet (for `history add`).
pub fn open(db: &str) -> Result<Box<dyn Store>, HistoryError> {
    open_with(db, true)
}

/// A history that must be there already: what only reads (`show`,
/// `report`) never makes an empty one out of a mistyped name.
pub fn open_existing(db: &str) -> Result<Box<dyn Store>, HistoryError> {
    open_with(db, false)
}

fn open_with(db: &str, create: bool) -> Result<Box<dyn Store>, HistoryError> {
    if db.starts_with("postgresql://") || db.starts_with("postgres://") {
        Ok(Box::new(postgres::PgStore::open(db, create)?))
    } else {
        Ok(Box::new(sqlite::SqliteStore::open(db, create)?))
    }
}

/// What a reader says of a database without a history in it.
pub(crate) fn no_history(db: &str, what: &str) -> HistoryError {
    HistoryError::Invalid(format!("{db}: {what}; `evalbench history add BUNDLE --commit REV --db {db}` makes one"))
}

/// The tables; `{id}` is the backend's auto-increment key, `{float}` its double.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS evalbench_schema (version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id {id},
    digest TEXT NOT NULL UNIQUE,
    commit_rev TEXT NOT NULL,
    commit_time BIGINT NOT NULL,
    added_us BIGINT NOT NULL,
    branch TEXT,
    machine TEXT,
    bundle TEXT NOT NULL,
    benchmark TEXT
);
CREATE TABLE IF NOT EXISTS passes (
    id {id},
    run_id BIGINT NOT NULL REFERENCES runs(id),
    pass TEXT NOT NULL,
    repeat BIGINT NOT NULL,
    evaluated_s {float},
    metric TEXT,
    offset_us BIGINT,
    bound_us BIGINT
);
CREATE TABLE IF NOT EXISTS span_totals (
    pass_id BIGINT NOT NULL REFERENCES passes(id),
    what TEXT NOT NULL,
    total_ms {float} NOT NULL
);
CREATE TABLE IF NOT EXISTS statement_totals (
    pass_id BIGINT NOT NULL REFERENCES passes(id),
    statement TEXT NOT NULL,
    total_ms {float} NOT NULL
);
-- Added after schema 1 went out: made on first use by an older database too.
CREATE TABLE IF NOT EXISTS counter_totals (
    pass_id BIGINT NOT NULL REFERENCES passes(id),
    name TEXT NOT NULL,
    value {float} NOT NULL
);
CREATE INDEX IF NOT EXISTS span_totals_pass ON span_totals (pass_id);
CREATE INDEX IF NOT EXISTS passes_run ON passes (run_id);
";

/// Added to `runs` after schema 1 went out: the column older databases get on first use.
const BENCHMARK_COLUMN: &str = "ALTER TABLE runs ADD COLUMN benchmark TEXT";

fn tables(id: &str, float: &str) -> String {
    TABLES.replace("{id}", id).replace("{float}", float) + judged::TABLE
}

/// What `add` says when the digest is there already.
fn duplicate(meta: &Meta, added_us: i64, commit: String) -> HistoryError {
    HistoryError::Duplicate {
        bundle: meta.bundle.clone(),
        added: format!("at Unix time {}", added_us / 1_000_000),
        commit,
    }
}

fn newer(db: &str, found: i64) -> HistoryError {
    HistoryError::NewerSchema { db: db.to_string(), found, known: SCHEMA_VERSION }
}
