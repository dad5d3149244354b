//! How a run ended, read once from its run.json: the one test of whether a
//! run may give a figure (docs/faults.md).
//!
//! A figure comes only from runs that completed. A run that failed, timed
//! out, was interrupted or lost a process of the pipeline is kept in the
//! bundle for what it shows (its spans, its trace.json, its error), and
//! counted in "k of N runs completed", never in a median. A run whose
//! run.json is missing, does not read, or holds no usable evaluated
//! seconds gives no evaluated time (its spans' extent is not one), but
//! its other files (spans, statements, evaluation_metric.json) still count:
//! a bad file loses only itself.

use std::path::Path;

use serde::Serialize;

use crate::contract::Status;
use crate::RunInfo;

/// How a run that did not complete ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The evaluation ended Failed or Aborted: a verdict on the flake.
    Failed,
    /// The runner gave up waiting (`--timeout-s`).
    TimedOut,
    /// The run was interrupted (Ctrl-C, SIGINT).
    Interrupted,
    /// A process of the pipeline died.
    Crashed,
    /// Something else stopped it (a capture, the API); its words are in `detail`.
    Stopped,
}

impl Ended {
    /// The word a pass's first line says it with.
    pub fn word(self) -> &'static str {
        match self {
            Ended::Failed => "FAILED",
            Ended::TimedOut => "TIMED OUT",
            Ended::Interrupted => "INTERRUPTED",
            Ended::Crashed => "CRASHED",
            Ended::Stopped => "STOPPED",
        }
    }

    /// As run.json's `outcome` writes it.
    pub fn key(self) -> &'static str {
        match self {
            Ended::Failed => "failed",
            Ended::TimedOut => "timed_out",
            Ended::Interrupted => "interrupted",
            Ended::Crashed => "crashed",
            Ended::Stopped => "stopped",
        }
    }

    fn from_key(k: &str) -> Option<Ended> {
        [Ended::Failed, Ended::TimedOut, Ended::Interrupted, Ended::Crashed, Ended::Stopped]
            .into_iter()
            .find(|e| e.key() == k)
    }

    /// The worst of several, for a pass's first line: a crash or an
    /// interruption explains the rest.
    pub fn rank(self) -> u8 {
        match self {
            Ended::Crashed => 5,
            Ended::Interrupted => 4,
            Ended::TimedOut => 3,
            Ended::Failed => 2,
            Ended::Stopped => 1,
        }
    }
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The evaluation completed: every figure may use the run.
    Completed,
    /// It did not: no figure uses it; `detail` is why, in one line.
    Incomplete { ended: Ended, detail: String },
    /// Its evaluated seconds are unknown (`why`: run.json missing,
    /// unreadable, or its `evaluated_s` not a finite non-negative number);
    /// its other files are used.
    NoEvaluated { why: String },
}

impl Outcome {
    /// Of the run in `dir`, from its run.json.
    pub fn of_dir(dir: &Path) -> Outcome {
        let path = dir.join(crate::layout::RUN_JSON);
        if !path.exists() {
            return Outcome::NoEvaluated { why: format!("{}: missing", path.display()) };
        }
        match RunInfo::read(&path) {
            Ok(info) => Outcome::of(&info, &path),
            Err(e) => Outcome::NoEvaluated { why: format!("unreadable: {e}") },
        }
    }

    /// Of a run whose run.json (at `path`, for the words) reads as `info`.
    ///
    /// evalbench's runner writes `outcome` (and, before it did, `status`
    /// and `failure`); Gradient's benchmark writes neither, and only for
    /// an evaluation that completed: a run.json without them is a run
    /// that completed.
    pub fn of(info: &RunInfo, path: &Path) -> Outcome {
        let runner = info.runner.as_ref();
        let failure = runner.and_then(|r| r.failure.clone());
        let recorded = runner.and_then(|r| r.outcome.as_deref()).and_then(Ended::from_key);
        let status = info.status.as_deref();
        let ended = recorded.or_else(|| {
            let failure = failure.as_deref().unwrap_or("");
            if runner.is_some_and(|r| !r.dead.is_empty()) {
                Some(Ended::Crashed)
            } else if failure.contains("interrupted") {
                Some(Ended::Interrupted)
            } else if failure.contains("--timeout-s") || failure.contains("timed out") {
                Some(Ended::TimedOut)
            } else if matches!(status.and_then(Status::parse), Some(Status::Failed | Status::Aborted)) {
                Some(Ended::Failed)
            } else if !failure.is_empty() || status.is_some_and(|s| s != Status::Completed.as_str()) {
                Some(Ended::Stopped)
            } else {
                None
            }
        });
        if let Some(ended) = ended {
            // The runner's words, and the server's error where they do not hold it.
            let error =
                runner.and_then(|r| r.error.as_deref()).and_then(|e| e.lines().next()).filter(|e| !e.is_empty());
            let said = failure.as_deref().and_then(|f| f.lines().next()).filter(|f| !f.is_empty());
            let detail = match (said, error) {
                (Some(f), Some(e)) if !f.contains(e) => format!("{f}: {e}"),
                (Some(f), _) => f.to_string(),
                (None, Some(e)) => e.to_string(),
                (None, None) => {
                    status.map_or_else(|| "no reason recorded".into(), |s| format!("the evaluation ended {s}"))
                }
            };
            return Outcome::Incomplete { ended, detail };
        }
        match info.evaluated_s {
            Some(s) if s.is_finite() && s >= 0.0 => Outcome::Completed,
            Some(s) => Outcome::NoEvaluated {
                why: format!("{}: evaluated_s is {s}, not a finite non-negative number of seconds", path.display()),
            },
            None => Outcome::NoEvaluated { why: format!("{}: no evaluated_s", path.display()) },
        }
    }

    pub fn completed(&self) -> bool {
        matches!(self, Outcome::Completed)
    }

    /// Whether the run may count in figures at all: it completed, or its
    /// completion is unknown and only its evaluated seconds are.
    pub fn counts(&self) -> bool {
        !matches!(self, Outcome::Incomplete { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(json: &str) -> Outcome {
        let raw: serde_json::Value = serde_json::from_str(json).unwrap();
        let mut info: RunInfo = serde_json::from_value(raw.clone()).unwrap();
        info.raw = raw;
        Outcome::of(&info, Path::new("r/run.json"))
    }

    #[test]
    fn each_way_a_run_ends_is_told_from_its_run_json() {
        assert_eq!(
            outcome(r#"{"eval_id":"x","evaluated_s":1.2}"#),
            Outcome::Completed,
            "Gradient's run.json: it completed"
        );
        assert_eq!(outcome(r#"{"status":"Completed","evaluated_s":0.4}"#), Outcome::Completed);
        let ended = |j: &str| match outcome(j) {
            Outcome::Incomplete { ended, .. } => Some(ended),
            _ => None,
        };
        assert_eq!(
            ended(r#"{"status":"Failed","evaluated_s":0.3,"failure":"the evaluation ended Failed"}"#),
            Some(Ended::Failed)
        );
        assert_eq!(ended(r#"{"status":"EvaluatingFlake","failure":"interrupted"}"#), Some(Ended::Interrupted));
        assert_eq!(
            ended(r#"{"status":"Queued","failure":"evaluation x still Queued after 5 s (--timeout-s)"}"#),
            Some(Ended::TimedOut)
        );
        assert_eq!(
            ended(r#"{"status":"Queued","failure":"x","dead":["the lab server: killed"]}"#),
            Some(Ended::Crashed)
        );
        assert_eq!(
            ended(r#"{"status":"Completed","evaluated_s":0.4,"outcome":"interrupted","failure":"y"}"#),
            Some(Ended::Interrupted)
        );
        for bad in [r#"{"evaluated_s":-1}"#, r#"{"status":"Completed"}"#] {
            assert!(matches!(outcome(bad), Outcome::NoEvaluated { .. }), "{bad}");
        }
    }
}
