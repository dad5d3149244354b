//! `summary.json` for scripts and `summary.txt` for people: the same
//! numbers, of the model `evalbench_analyze::summary` built. summary.json
//! is that model serialized; summary.txt is written by `text`; each part of it has its
//! module here (`answer`, `path`, `instructions`), beside `write` (the files
//! and trace.json's sink) and `hydra` (Hydra's products and metrics).

pub mod answer;
mod attributes;
pub mod hydra;
pub mod instructions;
pub mod path;
pub mod text;
pub mod write;

pub use evalbench_analyze::summary::{
    NoPath, NotSummarized, PassCounters, PassSettings, PassSummary, PathSummary, RepeatGroup, Summary,
};

/// µs as milliseconds to three places, with the unit.
pub(crate) fn ms(us: i64) -> String {
    format!("{:.3} ms", us as f64 / 1000.0)
}

/// How many span rows summary.txt shows per pass; summary.json has them all.
pub const TEXT_SPAN_ROWS: usize = 40;

/// summary.json: the model as it is.
pub fn json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).expect("summary serializes")
}

/// summary.txt: the answer first (`text::answer`).
pub fn text(s: &Summary) -> String {
    crate::summary::text::answer(s)
}

/// Every run's own section (`summarize --runs`).
pub fn text_runs(s: &Summary) -> String {
    crate::summary::text::runs(s)
}
