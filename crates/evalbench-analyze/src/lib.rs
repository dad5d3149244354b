//! `evalbench-analyze`: turns what a bundle holds into numbers, reading only
//! the bundle. Clock alignment puts worker and eval spans on the server's
//! clock; statistics aggregate spans by name; tracks lay concurrent spans of
//! one process out so that each track nests (what Perfetto needs).

pub mod align;
pub mod attributes;
pub mod bisect;
pub mod compare_error;
mod compare_opts;
pub mod comparison;
pub mod conditions;
pub mod counters;
pub mod drift;
pub mod explore;
pub mod gate;
pub mod grounds;
pub mod instructions;
pub mod latency;
pub mod machine;
pub mod mann_whitney;
pub mod metrics;
pub mod outcomes;
pub mod over_runs;
pub mod pass;
pub mod path;
pub use evalbench_host::phase;
pub mod plans;
pub mod power;
pub mod production;
pub mod reason;
pub mod runs;
pub mod scan;
#[cfg(test)]
mod seeded;
pub mod sides;
pub mod spread;
pub mod stats;
pub mod store_writes;
pub mod summary;
pub use evalbench_bundle::suggest;
pub mod tracks;
mod undecided;
pub mod verdict;
#[cfg(test)]
mod verdict_tests;
pub mod view;

pub use align::{align_pass, Alignment, HostAlignment};
pub use evalbench_host::phase::phase;
pub use latency::{LatencyTable, StatementLatency};
pub use outcomes::evaluated;
pub use pass::{fields_read, load, window, Fields, PassData, Warning};
pub use stats::{span_stats, SpanStat};
pub use tracks::{assign as assign_tracks, lay_out, Layout, TrackOf, Tracks};
