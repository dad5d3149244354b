//! `evalbench-history`: every run kept, so "when did it get slower?" has an
//! answer. `history add` reads a bundle (its passes' evaluated seconds,
//! span and statement totals, evaluation_metric, alignment) and stores it
//! under a commit in SQLite or in a PostgreSQL server shared by many CI
//! machines; `history show` and `history report` read the series back and
//! judge each commit against the ones before it with `compare`'s rules.

pub mod changepoint;
mod error;
pub mod record;
pub mod series;
pub mod store;

pub use error::HistoryError;
pub use record::BundleRecord;
pub use series::{build, Change, Commit, History, PassRule, Point, Select, BASELINE_COMMITS};
pub use store::{open, open_existing, Meta, Store, Stored, SCHEMA_VERSION};
