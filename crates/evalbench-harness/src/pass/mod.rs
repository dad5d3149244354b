//! One pass: reset or restart the target, arm the captures, request the
//! evaluation, stop the captures when it leaves EvaluatingDerivation, wait
//! for Completed, and write what was captured into the pass directory.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use evalbench_bundle::contract::Status;
use evalbench_bundle::run_info::StatusChange;
use evalbench_bundle::{layout, Ended, RunInfo};
use serde_json::Value;

use crate::capture::{pgstat::Db, Captures};
use crate::error::HarnessError;
use crate::target::{CaptureInfo, Target};
use evalbench_api::{left_evaluation, terminal, Client, Follow};

/// Set by SIGINT: stop captures and services, keep what was captured.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

use evalbench_host::now_us;

mod armed;
mod files;
mod record;

use armed::Armed;
pub use files::expected_files;
use files::{missing_files, write_json};
use record::{collect, run_info, Observed};

/// A pass that failed: which pass, and the error that stopped it, kept
/// whole (its own causes included) for the binary to print as a chain.
#[derive(Debug, thiserror::Error)]
#[error("pass {pass}")]
pub struct PassError {
    pub pass: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
    /// The target's processes that died: a crash of the pipeline, never a
    /// verdict on the flake, even where the evaluation then ended Failed.
    pub dead: Vec<String>,
}

impl PassError {
    pub fn new(pass: &str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> PassError {
        PassError { pass: pass.to_string(), source: source.into(), dead: Vec::new() }
    }
}

pub struct PassPlan<'a> {
    pub name: &'a str,
    pub cold: bool,
    pub captures: Captures,
    pub dir: PathBuf,
    pub timeout: Duration,
    /// Instrumented passes: nix traces its calls (off with `run --no-nix-trace`).
    pub nix_trace: bool,
    /// What the run measures, written into run.json.
    pub provenance: &'a evalbench_bundle::Provenance,
    /// Which of an interleaved session's targets runs it (None: one target).
    pub instance: Option<u32>,
}

pub fn run_pass(
    target: &mut dyn Target,
    plan: &PassPlan<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<RunInfo, PassError> {
    let err = |m: String| PassError::new(plan.name, m);
    let err_from = |e: HarnessError| PassError::new(plan.name, e);
    let dir = &plan.dir;
    progress(if plan.cold { "cold reset" } else { "warm restart" });
    let (cap, db) = prepare(target, plan).map_err(err_from)?;
    let api = Client::new(target.endpoint(), Duration::from_secs(30));
    let c = plan.captures;

    // Arm the captures.
    progress("arming captures");
    let mut armed = Armed::default();
    let mut ending = Ending::default();
    if let Err(e) = armed.arm(c, target, &cap, &db, dir) {
        ending = Ending { failure: Some(e.to_string()), ended: Some(Ended::Stopped) };
    }

    // Request and follow the evaluation until it leaves EvaluatingDerivation.
    let own = target.own_pids();
    let machine_before = crate::capture::machine::take(&own);
    let capture_started_us = now_us();
    let requested_us = now_us();
    let eval_id = ending.ok().then(|| api.evaluate().map_err(|e| ending.api(e)).ok()).flatten();
    let following = Following { api: &api, id: eval_id.as_deref(), t0: Instant::now(), timeout: plan.timeout };
    let (mut seen, mut last) = (Vec::new(), Value::Null);
    ending.unless_failed(|| following.follow(&left_evaluation, &mut seen, &mut last, progress, &mut *target));
    let capture_stopped_us = now_us();
    let machine = crate::capture::machine::between(&machine_before, &crate::capture::machine::take(&own));

    // Disarm, newest first, and write what each captured.
    progress("stopping captures");
    let mut problems: Vec<String> = Vec::new();
    let outside = armed.disarm(c, &cap, &db, dir, (capture_started_us, capture_stopped_us), &mut problems);

    // The pass ends at Completed.
    ending.unless_failed(|| {
        progress("waiting for Completed");
        following.follow(&terminal, &mut seen, &mut last, progress, &mut *target)
    });
    let statuses: Vec<StatusChange> = seen.into_iter().map(|(status, ts_us)| StatusChange { status, ts_us }).collect();
    let status = last["status"].as_str().map(String::from);
    let completed = status.as_deref() == Some(Status::Completed.as_str());
    let dead = autopsy(target, &mut ending, &last, status.as_deref());
    collect(target, &db, eval_id.as_deref(), plan, &mut problems);

    // run.json: what happened, as the runner saw it, and the server's own timeline.
    let (failure_text, ended) = ending.for_run_json(status.as_deref());
    let seen = Observed {
        eval_id: eval_id.clone(),
        requested_us,
        capture_started_us,
        capture_stopped_us,
        statuses,
        last,
        outside,
        failure: failure_text,
        ended,
        dead: dead.clone(),
        machine,
    };
    let info = run_info(target.name(), &cap, &db, plan, &seen, &mut problems);
    // Through a Value, so the keys come out sorted as they always have.
    write_json(&plan.dir.join(layout::RUN_JSON), &serde_json::to_value(&info).expect("serializes"))
        .map_err(err_from)?;
    if let Some(f) = ending.failure {
        return Err(PassError { dead, ..err(f) });
    }
    if !completed {
        let error = seen.last["error"].as_str().unwrap_or("no error message");
        let status = status.as_deref().unwrap_or("without a status");
        return Err(err(format!("evaluation {} ended {status}: {error}", eval_id.unwrap_or_default())));
    }
    complete(dir, c, &problems).map_err(err)?;
    Ok(info)
}

/// The pass directory made afresh, the target reset (cold) or restarted
/// (warm) into it; its capture settings and the admin connection.
fn prepare(target: &mut dyn Target, plan: &PassPlan<'_>) -> Result<(CaptureInfo, Db), HarnessError> {
    let dir = &plan.dir;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| HarnessError::Io { path: dir.clone(), source: e })?;
    }
    let trace_dir = dir.join(layout::TRACE_DIR);
    std::fs::create_dir_all(dir.join("pg")).map_err(|e| HarnessError::Io { path: dir.join("pg"), source: e })?;
    let eval_dir = dir.join(layout::EVAL_DIR);
    let kind = layout::PassKind::of(plan.name);
    let instrumented = kind == layout::PassKind::Instrumented;
    let nix_trace = instrumented && plan.nix_trace;
    let counted = kind == layout::PassKind::Counted;
    let place =
        crate::target::PassPlace { trace_dir: &trace_dir, eval_dir: &eval_dir, instrumented, nix_trace, counted };
    target.prepare(plan.cold, &place)?;
    let cap = target.capture();
    let db = Db::connect(&cap.admin_database_url)?;
    Ok((cap, db))
}

/// How the run went wrong, if it did: the first failure, and how it ended
/// (run.json's `outcome`).
#[derive(Default)]
struct Ending {
    failure: Option<String>,
    ended: Option<Ended>,
}

impl Ending {
    fn ok(&self) -> bool {
        self.failure.is_none()
    }

    /// run.json's failure (a run that did not complete says how it ended)
    /// and outcome, for the status the evaluation was last seen in.
    fn for_run_json(&self, status: Option<&str>) -> (Option<String>, Option<Ended>) {
        let completed = status == Some(Status::Completed.as_str());
        let failure = self
            .failure
            .clone()
            .or_else(|| (!completed).then(|| format!("the evaluation ended {}", status.unwrap_or("without a status"))));
        let ended = self.ended.or_else(|| {
            let failed = matches!(status.and_then(Status::parse), Some(Status::Failed | Status::Aborted));
            (!completed).then_some(if failed { Ended::Failed } else { Ended::Stopped })
        });
        (failure, ended)
    }

    /// `step`, unless the run already went wrong; its error is the run's.
    fn unless_failed(&mut self, step: impl FnOnce() -> Result<(), evalbench_api::ApiError>) {
        if self.ok() {
            if let Err(e) = step() {
                self.api(e);
            }
        }
    }

    fn api(&mut self, e: evalbench_api::ApiError) {
        self.ended = Some(ended_by(&e));
        self.failure = Some(e.to_string());
    }
}

/// Before anything is stopped, when the run went wrong: which of the
/// target's processes died. A death is the failure, said first, with what
/// the runner saw after it.
fn autopsy(target: &mut dyn Target, ending: &mut Ending, last: &Value, status: Option<&str>) -> Vec<String> {
    if ending.ok() && status == Some(Status::Completed.as_str()) {
        return Vec::new();
    }
    let dead = target.autopsy(last["error"].as_str());
    if !dead.is_empty() {
        ending.ended = Some(Ended::Crashed);
        let then = ending
            .failure
            .take()
            .or_else(|| last["error"].as_str().map(|e| format!("the evaluation ended {}: {e}", status.unwrap_or("?"))));
        ending.failure = Some(format!(
            "{}{}",
            dead.join("\n"),
            then.map(|t| format!("\n  (what the runner saw: {t})")).unwrap_or_default()
        ));
    }
    dead
}

/// Every capture file the pass should have is there.
fn complete(dir: &std::path::Path, c: Captures, problems: &[String]) -> Result<(), String> {
    let missing = missing_files(dir, &c);
    if missing.is_empty() {
        return Ok(());
    }
    let why = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) };
    Err(format!("missing capture file(s) in {}: {}{why}", dir.display(), missing.join(", ")))
}

/// Following the evaluation the pass requested (none: nothing to follow).
struct Following<'a> {
    api: &'a Client,
    id: Option<&'a str>,
    t0: Instant,
    timeout: Duration,
}

impl Following<'_> {
    /// Polls until `until` holds of the status, noting each change; ends
    /// early, named, on an interrupt or a pipeline process's death.
    fn follow(
        &self,
        until: &dyn Fn(&str) -> bool,
        seen: &mut Vec<(String, i64)>,
        last: &mut Value,
        progress: &mut dyn FnMut(&str),
        target: &mut dyn Target,
    ) -> Result<(), evalbench_api::ApiError> {
        let Some(id) = self.id else { return Ok(()) };
        let mut polls = 0u64;
        let mut on_poll = |status: &str, _changed: bool| -> Result<(), evalbench_api::ApiError> {
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err(evalbench_api::ApiError::Stopped("interrupted".into()));
            }
            // About once a second: a pipeline process that died ends the
            // pass now, named, rather than a wait for a status that cannot come.
            polls += 1;
            if polls.is_multiple_of(10) {
                let dead = target.autopsy(None);
                if !dead.is_empty() {
                    return Err(evalbench_api::ApiError::Stopped(format!(
                        "stopped following the evaluation: {} of the pipeline's processes died",
                        dead.len()
                    )));
                }
            }
            progress(&format!("{status} {:.1} s", self.t0.elapsed().as_secs_f64()));
            Ok(())
        };
        // Exact change times come from the server's timeline: poll gently.
        let mut f = Follow {
            poll: Duration::from_millis(100),
            started: self.t0,
            timeout: self.timeout,
            timeout_hint: " (--timeout-s)",
            on_poll: &mut on_poll,
        };
        self.api.follow(id, until, seen, last, &mut f)
    }
}

fn ended_by(e: &evalbench_api::ApiError) -> Ended {
    match e {
        evalbench_api::ApiError::Timeout { .. } => Ended::TimedOut,
        evalbench_api::ApiError::Stopped(why) if why == "interrupted" => Ended::Interrupted,
        evalbench_api::ApiError::Stopped(_) => Ended::Crashed,
        _ => Ended::Stopped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_pass_error_keeps_its_cause_whole() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = PassError::new("cold-clean", HarnessError::Io { path: "/x/pg".into(), source: io });
        assert_eq!(e.to_string(), "pass cold-clean");
        let cause = e.source().unwrap();
        assert!(matches!(cause.downcast_ref::<HarnessError>(), Some(HarnessError::Io { .. })), "{cause:?}");
        let root = cause.source().and_then(|c| c.downcast_ref::<std::io::Error>()).unwrap();
        assert_eq!(root.kind(), std::io::ErrorKind::PermissionDenied, "the chain goes down to the io::Error");
    }
}
