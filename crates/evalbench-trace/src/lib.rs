//! `evalbench-trace`: the capture side of evalbench, for instrumented services.
//!
//! A [`tracing_subscriber::Layer`] that writes every closed span whose target
//! starts with a prefix (default `gradient`) at level DEBUG or above as one JSON
//! line to `<trace_dir>/<process>-<pid>.jsonl` (Gradient's name):
//!
//! ```json
//! {"name":"flush","target":"gradient_graph::writer","ts_us":1759140000123456,"dur_us":8123,"pid":812,
//!  "process":"server","id":7,"parent":3,"thread":815,"fields":{"batches":2,"rows":100}}
//! ```
//!
//! (one line in the file, folded here).
//!
//! It exists because a service's console filter (say `warn`) must not decide
//! what the benchmark sees: the layer carries its own per-layer filter, so it
//! is composed next to the console layer, not under it.
//!
//! The calling thread never touches the disk. Closed spans go through a bounded
//! queue to a writer thread; when the queue is full the span is dropped and
//! counted, and the count is written as a `{"dropped_spans":N,...}` line on
//! flush and shutdown. Keep the [`TraceGuard`] alive for as long as the service
//! runs; dropping it flushes and stops the writer.
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//! let (spans, _guard) = evalbench_trace::Builder::from_env().process("server").build();
//! tracing_subscriber::registry()
//!     .with(tracing_subscriber::fmt::layer().with_filter(tracing_subscriber::filter::LevelFilter::WARN))
//!     .with(spans)
//!     .init();
//! ```

mod builder;
mod clock;
mod json;
mod layer;
mod writer;

pub use builder::{Builder, ENV_CLOCK_SKEW_US, ENV_HOST, ENV_PREFIX, ENV_PROCESS, ENV_QUEUE, ENV_TRACE_DIR};
pub use clock::{at_one_instant, at_wall_us};
pub use layer::{SpanFilter, SpanLayer};
pub use writer::TraceGuard;
