//! `evalbench-report`: writes what people and scripts read, from the models
//! analyze and history built (what it still computes to draw is listed in
//! docs/ARCHITECTURE.md, "The journey of each output"). One home per output
//! (`summary`, `compare`, `history`, `bisect`, `instructions`, the bundle's
//! page in `html`), each with its writers side by side.

pub mod bisect;
pub mod compare;
pub mod condition_notes;
mod error;
pub mod figures;
pub mod history;
pub mod html;
pub mod instructions;
pub mod output;
pub mod perfetto;
mod placed_fields;
pub mod production;
pub mod summary;
pub mod words;
#[cfg(test)]
mod words_tests;

pub use error::ReportError;
pub use perfetto::{write_trace, write_trace_spans, PendingTrace};
pub use summary::{PassSummary, Summary};
