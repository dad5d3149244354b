//! `evalbench-report`: writes what people and scripts read. Each output
//! format is its own module and reads only analysed passes.

pub mod compare_headline;
pub mod compare_tables;
pub mod comparison;
pub mod condition_notes;
mod error;
pub mod figures;
pub mod history;
pub mod html;
pub mod hydra;
pub mod output;
pub mod perfetto;
mod placed_fields;
pub mod summarize;
pub mod summary;
pub mod summary_answer;
mod summary_instructions;
pub mod summary_path;
pub mod summary_text;
pub mod words;
#[cfg(test)]
mod words_tests;

pub use error::ReportError;
pub use perfetto::{write_trace, write_trace_spans, PendingTrace};
pub use summary::{PassSummary, Summary};
