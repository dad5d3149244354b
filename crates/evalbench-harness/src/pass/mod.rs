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
use crate::target::Target;
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
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| err_from(HarnessError::Io { path: dir.clone(), source: e }))?;
    }
    let trace_dir = dir.join(layout::TRACE_DIR);
    std::fs::create_dir_all(dir.join("pg"))
        .map_err(|e| err_from(HarnessError::Io { path: dir.join("pg"), source: e }))?;
    progress(if plan.cold { "cold reset" } else { "warm restart" });
    let eval_dir = dir.join(layout::EVAL_DIR);
    let kind = layout::PassKind::of(plan.name);
    let instrumented = kind == layout::PassKind::Instrumented;
    let nix_trace = instrumented && plan.nix_trace;
    let counted = kind == layout::PassKind::Counted;
    let place =
        crate::target::PassPlace { trace_dir: &trace_dir, eval_dir: &eval_dir, instrumented, nix_trace, counted };
    target.prepare(plan.cold, &place).map_err(err_from)?;
    let cap = target.capture();
    let db = Db::connect(&cap.admin_database_url).map_err(err_from)?;
    let api = Client::new(target.endpoint(), Duration::from_secs(30));
    let c = plan.captures;

    // Arm the captures.
    progress("arming captures");
    let mut armed = Armed::default();
    let armed_result = armed.arm(c, target, &cap, &db, dir);

    // Request and follow the evaluation until it leaves EvaluatingDerivation.
    let own = target.own_pids();
    let machine_before = crate::capture::machine::take(&own);
    let capture_started_us = now_us();
    let mut eval_id = None;
    let mut failure: Option<String> = armed_result.err().map(|e| e.to_string());
    // How the run ended, when it did not complete (run.json's `outcome`).
    let mut ended: Option<Ended> = failure.as_ref().map(|_| Ended::Stopped);
    let mut last = Value::Null;
    let requested_us = now_us();
    if failure.is_none() {
        match api.evaluate() {
            Ok(id) => eval_id = Some(id),
            Err(e) => {
                ended = Some(ended_by(&e));
                failure = Some(e.to_string());
            }
        }
    }
    let t0 = Instant::now();
    let mut seen: Vec<(String, i64)> = Vec::new();
    let follow = |until: &dyn Fn(&str) -> bool,
                  seen: &mut Vec<(String, i64)>,
                  last: &mut Value,
                  progress: &mut dyn FnMut(&str),
                  target: &mut dyn Target| {
        let Some(id) = &eval_id else { return Ok(()) };
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
            progress(&format!("{status} {:.1} s", t0.elapsed().as_secs_f64()));
            Ok(())
        };
        // Exact change times come from the server's timeline: poll gently.
        let mut f = Follow {
            poll: Duration::from_millis(100),
            started: t0,
            timeout: plan.timeout,
            timeout_hint: " (--timeout-s)",
            on_poll: &mut on_poll,
        };
        api.follow(id, until, seen, last, &mut f)
    };
    if failure.is_none() {
        if let Err(e) = follow(&left_evaluation, &mut seen, &mut last, progress, &mut *target) {
            ended = Some(ended_by(&e));
            failure = Some(e.to_string());
        }
    }
    let capture_stopped_us = now_us();
    let machine = crate::capture::machine::between(&machine_before, &crate::capture::machine::take(&own));

    // Disarm, newest first, and write what each captured.
    progress("stopping captures");
    let mut problems: Vec<String> = Vec::new();
    let outside = armed.disarm(c, &cap, &db, dir, (capture_started_us, capture_stopped_us), &mut problems);

    // The pass ends at Completed.
    if failure.is_none() {
        progress("waiting for Completed");
        if let Err(e) = follow(&terminal, &mut seen, &mut last, progress, &mut *target) {
            ended = Some(ended_by(&e));
            failure = Some(e.to_string());
        }
    }
    let statuses: Vec<StatusChange> = seen.into_iter().map(|(status, ts_us)| StatusChange { status, ts_us }).collect();
    let status = last["status"].as_str().map(String::from);
    // Before anything is stopped: which of the target's processes died.
    let dead = if failure.is_some() || status.as_deref() != Some(Status::Completed.as_str()) {
        target.autopsy(last["error"].as_str())
    } else {
        Vec::new()
    };
    if !dead.is_empty() {
        ended = Some(Ended::Crashed);
        let then = failure.take().or_else(|| {
            last["error"].as_str().map(|e| format!("the evaluation ended {}: {e}", status.as_deref().unwrap_or("?")))
        });
        failure = Some(format!(
            "{}{}",
            dead.join("\n"),
            then.map(|t| format!("\n  (what the runner saw: {t})")).unwrap_or_default()
        ));
    }
    collect(target, &db, eval_id.as_deref(), plan, &mut problems);

    // run.json: what happened, as the runner saw it, and the server's own timeline.
    let failure_text = failure.clone().or_else(|| {
        (status.as_deref() != Some(Status::Completed.as_str()))
            .then(|| format!("the evaluation ended {}", status.as_deref().unwrap_or("without a status")))
    });
    if ended.is_none() && status.as_deref() != Some(Status::Completed.as_str()) {
        let failed = matches!(status.as_deref().and_then(Status::parse), Some(Status::Failed | Status::Aborted));
        ended = Some(if failed { Ended::Failed } else { Ended::Stopped });
    }
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
    let doc = serde_json::to_value(&info).expect("serializes");
    write_json(&plan.dir.join(layout::RUN_JSON), &doc).map_err(err_from)?;
    let last = seen.last;

    if let Some(f) = failure {
        return Err(PassError { dead, ..err(f) });
    }
    if status.as_deref() != Some(Status::Completed.as_str()) {
        return Err(err(format!(
            "evaluation {} ended {}: {}",
            eval_id.unwrap_or_default(),
            status.unwrap_or_else(|| "without a status".into()),
            last["error"].as_str().unwrap_or("no error message")
        )));
    }
    let missing = missing_files(dir, &c);
    if !missing.is_empty() {
        let why = if problems.is_empty() { String::new() } else { format!(" ({})", problems.join("; ")) };
        return Err(err(format!("missing capture file(s) in {}: {}{why}", dir.display(), missing.join(", "))));
    }
    Ok(info)
}

/// How a request or a wait that failed ended the run.
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
