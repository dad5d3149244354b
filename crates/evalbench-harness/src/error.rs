//! What can stop a pass, a capture, a gate or a bench run. Lower layers'
//! errors are kept whole; the harness's own are sentences that name the
//! file, the step or the flag to change.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Host(#[from] evalbench_host::HostError),
    #[error(transparent)]
    Api(#[from] evalbench_api::ApiError),
    #[error(transparent)]
    Lab(#[from] evalbench_lab::LabError),
    #[error(transparent)]
    Decode(#[from] evalbench_decode::DecodeError),
    #[error(transparent)]
    Bundle(#[from] evalbench_bundle::BundleError),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// A tool that would not start, and how to install it.
    #[error("{tool}: {source} ({install})")]
    Tool { tool: &'static str, install: &'static str, source: std::io::Error },
    /// A command (argv, or a shell line) that would not start.
    #[error("{command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    /// Waiting for a measured command.
    #[error("wait4: {0}")]
    Wait(std::io::Error),
    #[error("tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// A PostgreSQL server that could not be reached.
    #[error("connecting to {url}: {source}")]
    Connect { url: String, source: tokio_postgres::Error },
    /// A statement PostgreSQL refused, its error as `capture::pgstat::pg_error` words it.
    #[error("{sql}: {message}")]
    Sql { sql: String, message: String },
    /// The deployment's description (`--target-config`).
    #[error("{}: line {}, column {}: {source}", path.display(), source.line(), source.column())]
    Config { path: PathBuf, source: serde_json::Error },
    /// A command that should have printed a pid.
    #[error("`{command}` printed no pid")]
    NoPid { command: String },
    /// `stat` of a file on a host, and what it printed instead of a number.
    #[error("stat {path}: {printed:?}")]
    Stat { path: String, printed: String },
    /// Something the step needs is not there: its words.
    #[error("{0}")]
    Absent(&'static str),
    /// A thread the capture runs on ended without its result.
    #[error("the {0} died")]
    Died(&'static str),
    /// A target asked to serve a flake it does not hold.
    #[error("the {target} target serves only its own workload, not {}", flake.display())]
    Workload { target: String, flake: PathBuf },
    /// A deployment that did not answer after its restart.
    #[error("{url} did not answer within {seconds} s after the restart")]
    NoAnswer { url: String, seconds: u64 },
    /// `nix eval` listing a flake's attributes for the gate.
    #[error("listing {attr}: {message}")]
    Listing { attr: String, message: String },
    #[error("{flake} has no attribute {set}")]
    NoAttribute { flake: String, set: String },
    #[error("{flake}: no machines (nixosConfigurations, or --machines ATTR) and no checks found")]
    NothingToGate { flake: String },
    /// Tools missing before the first pass, each with how to install it.
    #[error("missing before the first pass: {}", .0.join("; "))]
    Missing(Vec<String>),
    #[error("perf cannot record here ({0}); run with --no-perf")]
    PerfCannot(String),
    /// tcpdump that said why it stopped, or did not start.
    #[error("tcpdump on {iface} port {port}: {}", said.as_deref().unwrap_or("did not start"))]
    Tcpdump { iface: String, port: u16, said: Option<String> },
    /// tcpdump that lost packets: the capture is not whole.
    #[error(
        "tcpdump on {what}: {captured} packets captured of {received} received, {dropped} dropped by the kernel; the \
            capture is incomplete"
    )]
    Incomplete { what: String, captured: u64, received: u64, dropped: u64 },
    /// A bench's `--prepare` command that failed.
    #[error("--prepare {0:?} failed")]
    Prepare(String),
}

impl HarnessError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> HarnessError + '_ {
        move |source| HarnessError::Io { path: path.to_path_buf(), source }
    }
}
