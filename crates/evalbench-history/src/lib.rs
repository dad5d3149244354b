//! `evalbench-history`: every run kept, so "when did it get slower?" has an
//! answer. `history add` reads a bundle (its passes' evaluated seconds,
//! span and statement totals, evaluation_metric, alignment), stores it
//! under a commit in SQLite or in a PostgreSQL server shared by many CI
//! machines, and judges that commit against the ones before it with
//! `compare`'s rules (`judge`); `history show` and `history report` read
//! the judged series back.

pub mod changepoint;
pub mod chart;
mod error;
pub mod judge;
pub mod medians;
pub mod production;
pub mod record;
pub mod series;
pub mod store;

pub use error::HistoryError;
pub use judge::{Judged, Rule, RunInput, BASELINE_COMMITS};
pub use record::BundleRecord;
pub use series::{
    assemble, build, commits_of, judge_all, Change, Commit, History, PassRule, Point, Select, SeriesKey, Why,
};
pub use store::{open, open_existing, JudgedHistory, Meta, Store, Stored, SCHEMA_VERSION};
