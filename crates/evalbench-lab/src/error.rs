//! What can go wrong in the lab. The lower layers' errors are kept whole
//! (a command and its stderr, an API request, a PostgreSQL error); the lab's
//! own are sentences that name the file, the process or the flag to change.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Host(#[from] evalbench_host::HostError),
    #[error(transparent)]
    Api(#[from] evalbench_api::ApiError),
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// The eval subprocess's failure, its cause kept.
    #[error(transparent)]
    Eval(#[from] crate::eval::Failure),
    /// A program that would not start (`postgres -C`, git, nix).
    #[error("{command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// A server the lab's processes connect to (PostgreSQL, the lab server's /proto).
    #[error("connecting to {url}: {source}")]
    Connect { url: String, source: Box<dyn std::error::Error + Send + Sync> },
    #[error("listening on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    /// Installing a signal handler, or serving until one comes.
    #[error("{0}")]
    Serve(std::io::Error),
    #[error("provisioning: {0}")]
    Provision(tokio_postgres::Error),
    /// A file that is not what it should be (provision.json, lab.json), and why.
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("{}: no flake.nix here", .0.display())]
    NoFlake(PathBuf),
    /// lab.json unreadable: the lab is not up here.
    #[error("{}: {source} (is the lab up? `evalbench lab up`)", path.display())]
    NotUp { path: PathBuf, source: std::io::Error },
    /// lab.json present but unreadable: a lab may still be running from it.
    #[error("{0}: a lab may still be running from it; stop its processes, or remove the file to start afresh")]
    Stale(Box<LabError>),
    /// A process of the lab that ended while it was being started: its log.
    #[error("{what} exited; see {}", log.display())]
    Exited { what: String, log: PathBuf },
    /// `lab down` that could not stop the lab: what is still running.
    #[error("{error}: the lab was not stopped; {running}")]
    NotStopped { error: Box<LabError>, running: String },
    /// A lab directory PostgreSQL (running as its own user) cannot enter.
    #[error("{}: PostgreSQL runs as {user} and cannot enter this directory (mode {mode:o}); use a lab directory under \
        a world-traversable path, or chmod o+x it", dir.display())]
    Unreachable { dir: PathBuf, user: &'static str, mode: u32 },
    /// A fixed sentence: what is missing and how to get it.
    #[error("{0}")]
    Needs(&'static str),
    #[error("timed out waiting for {what}; logs in {}", logs.display())]
    Timeout { what: String, logs: PathBuf },
    /// A `--pg-setting` PostgreSQL would not take, and what it said.
    #[error("--pg-setting {setting}: {said}")]
    PgSetting { setting: String, said: String },
    /// A `--lab-setting` the lab does not take.
    #[error(transparent)]
    Setting(#[from] crate::setting::SettingError),
    /// `lab evaluate`: an evaluation that ended, but not Completed (its fields as the API gave them).
    #[error("evaluation {id} ended {status}: {error}")]
    Ended { id: String, status: String, error: String },
    #[error("no free 10.213.N.0/30 for the lab's link: 200 labs are up")]
    NoSubnet,
    #[error("{}: cannot lock: {source}", path.display())]
    Lock { path: PathBuf, source: std::io::Error },
    /// A worker or server role that ended on an error of its own, worded by it.
    #[error("{0}")]
    Role(String),
}

impl LabError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
        move |source| LabError::Io { path: path.to_path_buf(), source }
    }
}
