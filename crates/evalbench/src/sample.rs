//! `evalbench sample`: the small instrumented pipeline's command line; the
//! pipeline itself is `evalbench-sample`.

use std::path::PathBuf;
use std::process::ExitCode;

/// `evalbench sample`'s command line; `evalbench_sample::Opts` is what it runs with.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Bundle directory to write (one sub-directory per pass).
    #[arg(long, short, default_value = "sample-bundle")]
    pub out: PathBuf,
    /// Passes to run, in order. A `cold-*` pass empties the eval cache first.
    #[arg(long, value_delimiter = ',', default_value = "cold-clean,warm-clean,cold-instrumented,warm-instrumented")]
    pub passes: Vec<String>,
    /// CI jobs the evaluation is split into (a size of the workload, not a
    /// concurrency: `--jobs` elsewhere means how many run at once).
    #[arg(long = "ci-jobs", default_value_t = 4)]
    pub jobs: u32,
    /// Derivations each job evaluates.
    #[arg(long, default_value_t = 50)]
    pub drvs: u32,
    /// Worker processes.
    #[arg(long, default_value_t = 1)]
    pub workers: u32,
    /// Added to every worker and eval timestamp (the truth alignment must find, negated).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    pub worker_clock_skew_ms: i64,
    /// Give each worker host its own skew: worker k gets skew × (k+1).
    #[arg(long)]
    pub skew_per_worker: bool,
    /// Give up on a pass after this many seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout_s: u64,
    /// Sleep MS milliseconds inside every span of SPAN (a delay whose size is
    /// known: the critical path must find it, or say the span was off it); repeatable.
    /// Spans: clone_and_checkout run_input_update fetch_inputs missing_paths lock_flake resolve record_one upload_logs.
    #[arg(long, value_name = "SPAN=MS", value_parser = evalbench_sample::tune::parse::<u64>)]
    pub delay: Vec<(String, u64)>,
    /// Scale the CPU work inside every span of SPAN by FACTOR (0.5 halves it); repeatable.
    #[arg(long, value_name = "SPAN=FACTOR", value_parser = evalbench_sample::tune::parse::<f64>)]
    pub work: Vec<(String, f64)>,
    /// Internal: the role of this process (server, worker, eval).
    #[arg(long, hide = true)]
    pub role: Option<String>,
    /// Internal: address of the server for workers.
    #[arg(long, hide = true)]
    pub connect: Option<String>,
    /// Internal: the job an eval child works on.
    #[arg(long, hide = true)]
    pub job: Option<String>,
    /// Internal: the shard an eval child works on.
    #[arg(long, hide = true, default_value_t = 0)]
    pub shard: u64,
    /// Internal: the eval cache directory.
    #[arg(long, hide = true)]
    pub cache: Option<PathBuf>,
}

impl From<Args> for evalbench_sample::Opts {
    fn from(a: Args) -> Self {
        evalbench_sample::Opts {
            out: a.out,
            passes: a.passes,
            jobs: a.jobs,
            drvs: a.drvs,
            workers: a.workers,
            worker_clock_skew_ms: a.worker_clock_skew_ms,
            skew_per_worker: a.skew_per_worker,
            timeout_s: a.timeout_s,
            delays: a.delay,
            work: a.work,
            role: a.role,
            connect: a.connect,
            job: a.job,
            shard: a.shard,
            cache: a.cache,
        }
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    evalbench_sample::run(a.into())?;
    Ok(ExitCode::SUCCESS)
}
