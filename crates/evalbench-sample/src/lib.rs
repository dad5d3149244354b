//! `evalbench-sample`: real test data without a real CI.
//!
//! Three kinds of process, each instrumented with `evalbench-trace` and
//! emitting the span names of the benchmark's contract with their fields: a server that schedules
//! jobs and records derivations through a graph-writer mailbox, workers that
//! take jobs over a loopback TCP connection, and an eval child per job that
//! "evaluates" (hashes) attributes and keeps a cache between passes, so warm
//! passes are faster for a real reason. `--worker-clock-skew-ms` shifts the
//! worker side's timestamps so alignment can be tested against a known truth.
//!
//! The lab (a real pipeline with PostgreSQL and nix) is a separate crate; this
//! one exists so every test and benchmark can make bundles in a second.

mod driver;
mod error;
mod eval;
mod proto;
mod server;
pub mod tune;
mod worker;

use std::path::PathBuf;

pub use driver::run;
pub use error::SampleError;

/// Options of `evalbench sample` (its command line is the binary's), and of
/// the processes it starts: the same flags, read back by the binary.
#[derive(Debug, Clone)]
pub struct Opts {
    /// Bundle directory to write (one sub-directory per pass).
    pub out: PathBuf,
    /// Passes to run, in order. A `cold-*` pass empties the eval cache first.
    pub passes: Vec<String>,
    /// CI jobs the evaluation is split into (a size of the workload, not a
    /// concurrency: `--jobs` elsewhere means how many run at once).
    pub jobs: u32,
    /// Derivations each job evaluates.
    pub drvs: u32,
    /// Worker processes.
    pub workers: u32,
    /// Added to every worker and eval timestamp (the truth alignment must find, negated).
    pub worker_clock_skew_ms: i64,
    /// Give each worker host its own skew: worker k gets skew × (k+1).
    pub skew_per_worker: bool,
    /// Give up on a pass after this many seconds.
    pub timeout_s: u64,
    /// Sleep this many ms inside every span of a name (`--delay SPAN=MS`).
    pub delays: Vec<(String, u64)>,
    /// Scale the CPU work of every span of a name (`--work SPAN=FACTOR`).
    pub work: Vec<(String, f64)>,
    /// Internal: the role of this process (server, worker, eval).
    pub role: Option<String>,
    /// Internal: address of the server for workers.
    pub connect: Option<String>,
    /// Internal: the job an eval child works on.
    pub job: Option<String>,
    /// Internal: the shard an eval child works on.
    pub shard: u64,
    /// Internal: the eval cache directory.
    pub cache: Option<PathBuf>,
}

/// Installs the span layer from the environment; the guard flushes on drop.
pub(crate) fn init_tracing() -> evalbench_trace::TraceGuard {
    use tracing_subscriber::prelude::*;
    let (layer, guard) = evalbench_trace::Builder::from_env().build();
    let _ = tracing_subscriber::registry().with(layer).try_init();
    guard
}
