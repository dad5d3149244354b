//! Why the eval subprocess failed, with the cause kept: an error of nix's
//! own words, of nix's output, of the machine, or of the markers that tie
//! the spans to nix's work. The worker is told its text (`EvalLine::Error`).

use std::path::PathBuf;

/// How a nix process ended: wait4's raw status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended(pub i32);

impl Ended {
    pub fn success(self) -> bool {
        libc::WIFEXITED(self.0) && libc::WEXITSTATUS(self.0) == 0
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::os::unix::process::ExitStatusExt;
        f.write_str(&evalbench_host::describe_status(std::process::ExitStatus::from_raw(self.0)))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{}: no flake.nix", .0.display())]
    NoFlake(PathBuf),
    #[error("nix: {0} (install the Debian package nix-bin)")]
    Start(#[source] std::io::Error),
    /// nix failed and said why (its message, without warnings and traces).
    #[error("{0}")]
    Nix(String),
    #[error("{what}: nix printed what is not the JSON expected: {source}")]
    Output {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("{what}: {detail}")]
    Unexpected { what: &'static str, detail: String },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file the evaluation writes (its profile, the lab's eval cache).
    #[error(transparent)]
    Write(#[from] evalbench_bundle::BundleError),
    #[error("nix eval ended with {0}")]
    Ended(Ended),
    /// The evaluator could not learn how nix ended.
    #[error("waiting for nix (pid {pid}): {source}")]
    Wait {
        pid: i32,
        #[source]
        source: std::io::Error,
    },
    #[error("packages.x86_64-linux has {now} attributes now, {then} at discovery")]
    AttributesChanged { now: String, then: usize },
    /// The markers and nix's printed list are two readings of one evaluation.
    #[error("nix printed {printed} drvPaths, its markers named {named} of {of} attributes (is this nix 2.8?)")]
    Disagree { printed: usize, named: usize, of: usize },
    #[error("reading nix's standard output failed: the reader thread panicked")]
    ReaderPanicked,
    #[error("an evaluator thread panicked")]
    EvaluatorPanicked,
    #[error("stopped: another evaluator failed")]
    Stopped,
    /// A counted pass's nix process left no count: Valgrind writes it when
    /// the process exits, so it was killed, or Valgrind did not start it.
    #[error("valgrind wrote no instruction count for nix's {who} process (pid {pid}) in {}; its log: \
        {}", .dir.display(), .log.display())]
    Uncounted { who: String, pid: i32, dir: PathBuf, log: PathBuf },
}

/// An evaluation's failure: the attribute it was on, when one is to blame.
#[derive(Debug, thiserror::Error)]
#[error("{}{error}", attr.as_deref().map(|a| format!("{a}: ")).unwrap_or_default())]
pub struct Failure {
    pub attr: Option<String>,
    #[source]
    pub error: EvalError,
}

impl From<EvalError> for Failure {
    fn from(error: EvalError) -> Failure {
        Failure { attr: None, error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_nix_ended_is_said_as_the_host_says_it() {
        assert_eq!(Ended(0).to_string(), "exit status 0");
        assert!(Ended(0).success());
        assert_eq!(Ended(1 << 8).to_string(), "exit status 1");
        assert!(Ended(libc::SIGKILL).to_string().contains("SIGKILL"));
        assert!(!Ended(libc::SIGKILL).success());
        // A failed wait is its own error, never "a signal".
        let e = EvalError::Wait { pid: 7, source: std::io::Error::from_raw_os_error(libc::ECHILD) };
        assert!(e.to_string().starts_with("waiting for nix (pid 7): "), "{e}");
        let f = Failure { attr: Some("packages.x86_64-linux.a".into()), error: EvalError::Ended(Ended(libc::SIGKILL)) };
        assert!(f.to_string().starts_with("packages.x86_64-linux.a: nix eval ended with killed by signal 9"), "{f}");
        // nix's output that is not JSON keeps serde's words.
        let source = serde_json::from_str::<Vec<String>>("[\"a\",").unwrap_err();
        let e = EvalError::Output { what: "nix eval", source };
        assert!(e.to_string().contains("EOF while parsing"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
}
