//! One pass: reset or restart the target, arm the captures, request the
//! evaluation, stop the captures when it leaves EvaluatingDerivation, wait
//! for Completed, and write what was captured into the pass directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use evalbench_bundle::run_info::StatusChange;
use evalbench_bundle::{layout, write_atomic, CapturePorts, RunInfo, RunnerInfo};
use serde_json::Value;

use crate::capture::{perf, pgstat::Db, strace::Strace, tcpdump::Tcpdump, Captures};
use crate::target::Target;
use evalbench_api::{left_evaluation, left_evaluation_us, terminal, Client, Follow};

/// Set by SIGINT: stop captures and services, keep what was captured.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

use evalbench_host::now_us;

/// A pass that failed, with the file or step that made it fail.
#[derive(Debug)]
pub struct PassError {
    pub pass: String,
    pub message: String,
}

impl std::fmt::Display for PassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pass {}: {}", self.pass, self.message)
    }
}

pub struct PassPlan<'a> {
    pub name: &'a str,
    pub cold: bool,
    pub captures: Captures,
    pub dir: PathBuf,
    pub timeout: Duration,
}

fn write_json(path: &Path, v: &Value) -> Result<(), String> {
    write_atomic(path, serde_json::to_string_pretty(v).expect("serializes").as_bytes()).map_err(|e| e.to_string())
}

/// Files a pass must have, by what it captured (DESIGN.md "Bundle layout").
pub fn expected_files(c: &Captures) -> Vec<&'static str> {
    let mut v = vec![layout::RUN_JSON, layout::JOB_PHASES];
    if c.pcap {
        v.extend([layout::PROTO_PCAP, layout::PG_PCAP]);
    }
    if c.pg_stats {
        v.push(layout::PG_STAT_STATEMENTS);
    }
    if c.wait_samples {
        v.push(layout::WAIT_SAMPLES);
    }
    if c.perf {
        v.extend([layout::PERF_DATA, layout::FLAME_SVG, layout::WORKER_PERF_DATA, layout::WORKER_FLAME_SVG]);
    }
    if c.auto_explain {
        v.push(layout::AUTO_EXPLAIN);
    }
    v
}

fn missing_files(dir: &Path, c: &Captures) -> Vec<String> {
    let mut missing: Vec<String> =
        expected_files(c).into_iter().filter(|f| std::fs::metadata(dir.join(f)).map(|m| m.len() == 0).unwrap_or(true)).map(String::from).collect();
    let has_spans = std::fs::read_dir(dir.join(layout::TRACE_DIR))
        .map(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "jsonl") && e.metadata().is_ok_and(|m| m.len() > 0)))
        .unwrap_or(false);
    if !has_spans {
        missing.push("trace/*.jsonl".into());
    }
    if c.strace {
        let any = std::fs::read_dir(dir.join(layout::WORKER_STRACE_DIR))
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(layout::STRACE_FILE_PREFIX)))
            .unwrap_or(false);
        if !any {
            missing.push(format!("{}/{}<pid>", layout::WORKER_STRACE_DIR, layout::STRACE_FILE_PREFIX));
        }
    }
    missing
}

/// Running captures, stopped in reverse order.
#[derive(Default)]
struct Armed {
    tcpdumps: Vec<Tcpdump>,
    perfs: Vec<perf::Perf>,
    strace: Option<Strace>,
    sampler: Option<crate::capture::pgstat::WaitSampler>,
    log_start: Option<u64>,
}

fn file_size(host: &evalbench_host::HostExec, path: &str) -> Result<u64, String> {
    let out = host.run(host.sh(&format!("stat -c %s '{path}'")))?;
    out.trim().parse().map_err(|_| format!("stat {path}: {out:?}"))
}

pub fn run_pass(target: &mut dyn Target, plan: &PassPlan<'_>, progress: &mut dyn FnMut(&str)) -> Result<RunInfo, PassError> {
    let err = |m: String| PassError { pass: plan.name.to_string(), message: m };
    let dir = &plan.dir;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    }
    let trace_dir = dir.join(layout::TRACE_DIR);
    std::fs::create_dir_all(dir.join("pg")).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    progress(if plan.cold { "cold reset" } else { "warm restart" });
    target.prepare(plan.cold, &trace_dir).map_err(err)?;
    let cap = target.capture();
    let db = Db::connect(&cap.admin_database_url).map_err(err)?;
    let api = Client::new(target.endpoint(), Duration::from_secs(30));
    let c = plan.captures;

    // Arm the captures.
    progress("arming captures");
    let mut armed = Armed::default();
    let arm = |armed: &mut Armed| -> Result<(), String> {
        if c.pg_stats {
            db.reset_statements()?;
        }
        if c.auto_explain {
            if let Some(log) = &cap.pg_log {
                armed.log_start = Some(file_size(&cap.server, log)?);
            }
            db.auto_explain(true)?;
        }
        if c.pcap {
            armed.tcpdumps.push(Tcpdump::start(&cap.server, &cap.proto_iface, cap.proto_port, &dir.join(layout::PROTO_PCAP))?);
            armed.tcpdumps.push(Tcpdump::start(&cap.server, &cap.pg_iface, cap.pg_port, &dir.join(layout::PG_PCAP))?);
        }
        if c.wait_samples {
            armed.sampler = Some(db.start_wait_samples(&cap.ci_role)?);
        }
        if c.perf {
            armed.perfs.push(perf::Perf::start(&cap.server, target.server_pid()?, &dir.join(layout::PERF_DATA))?);
            let w = *target.worker_pids()?.first().ok_or("no worker to profile")?;
            armed.perfs.push(perf::Perf::start(&cap.worker, w, &dir.join(layout::WORKER_PERF_DATA))?);
        }
        if c.strace {
            let w = *target.worker_pids()?.first().ok_or("no worker to trace")?;
            armed.strace = Some(Strace::start(&cap.worker, w, &dir.join(layout::WORKER_STRACE_DIR))?);
        }
        Ok(())
    };
    let armed_result = arm(&mut armed);

    // Request and follow the evaluation until it leaves EvaluatingDerivation.
    let capture_started_us = now_us();
    let mut eval_id = None;
    let mut failure: Option<String> = armed_result.err();
    let mut last = Value::Null;
    let requested_us = now_us();
    if failure.is_none() {
        match api.evaluate() {
            Ok(id) => eval_id = Some(id),
            Err(e) => failure = Some(e),
        }
    }
    let t0 = Instant::now();
    let mut seen: Vec<(String, i64)> = Vec::new();
    let follow = |until: &dyn Fn(&str) -> bool, seen: &mut Vec<(String, i64)>, last: &mut Value, progress: &mut dyn FnMut(&str)| {
        let Some(id) = &eval_id else { return Ok(()) };
        let mut on_poll = |status: &str, _changed: bool| -> Result<(), String> {
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            progress(&format!("{status} {:.1} s", t0.elapsed().as_secs_f64()));
            Ok(())
        };
        // Exact change times come from the server's timeline: poll gently.
        let mut f =
            Follow { poll: Duration::from_millis(100), started: t0, timeout: plan.timeout, timeout_hint: " (--timeout-s)", on_poll: &mut on_poll };
        api.follow(id, until, seen, last, &mut f)
    };
    if failure.is_none() {
        if let Err(e) = follow(&left_evaluation, &mut seen, &mut last, progress) {
            failure = Some(e);
        }
    }
    let capture_stopped_us = now_us();

    // Disarm, newest first, and write what each captured.
    progress("stopping captures");
    let mut problems: Vec<String> = Vec::new();
    if let Some(s) = armed.strace.take() {
        s.stop().unwrap_or_else(|e| problems.push(e));
    }
    for p in armed.perfs.drain(..) {
        p.stop().unwrap_or_else(|e| problems.push(e));
    }
    if let Some(s) = armed.sampler.take() {
        match s.stop() {
            Ok(v) => write_json(&dir.join(layout::WAIT_SAMPLES), &v).unwrap_or_else(|e| problems.push(e)),
            Err(e) => problems.push(format!("wait samples: {e}")),
        }
    }
    for t in armed.tcpdumps.drain(..) {
        t.stop().unwrap_or_else(|e| problems.push(e));
    }
    if c.auto_explain {
        db.auto_explain(false).unwrap_or_else(|e| problems.push(e));
        if let (Some(log), Some(start)) = (&cap.pg_log, armed.log_start) {
            let cut = cap.server.run(cap.server.sh(&format!("tail -c +{} '{log}'", start + 1)));
            match cut {
                Ok(text) => write_atomic(&dir.join(layout::AUTO_EXPLAIN), text.as_bytes()).unwrap_or_else(|e| problems.push(e.to_string())),
                Err(e) => problems.push(e),
            }
        }
    }
    if c.pg_stats {
        match db.statements(&cap.ci_role) {
            Ok(v) => write_json(&dir.join(layout::PG_STAT_STATEMENTS), &v).unwrap_or_else(|e| problems.push(e)),
            Err(e) => problems.push(e),
        }
    }

    // The pass ends at Completed.
    if failure.is_none() {
        progress("waiting for Completed");
        if let Err(e) = follow(&terminal, &mut seen, &mut last, progress) {
            failure = Some(e);
        }
    }
    let statuses: Vec<StatusChange> = seen.into_iter().map(|(status, ts_us)| StatusChange { status, ts_us }).collect();
    let status = last["status"].as_str().map(String::from);
    if let Some(id) = &eval_id {
        match db.job_phases(id) {
            Ok(v) => write_json(&dir.join(layout::JOB_PHASES), &v).unwrap_or_else(|e| problems.push(e)),
            Err(e) => problems.push(e),
        }
    }
    target.collect_spans(&trace_dir).unwrap_or_else(|e| problems.push(e));
    if c.perf {
        for (data, svg, title) in [
            (layout::PERF_DATA, layout::FLAME_SVG, "server host"),
            (layout::WORKER_PERF_DATA, layout::WORKER_FLAME_SVG, "worker host (eval subprocess included)"),
        ] {
            if dir.join(data).exists() {
                perf::flamegraph(&dir.join(data), &dir.join(svg), &format!("{} {title}", plan.name)).unwrap_or_else(|e| problems.push(e));
            }
        }
    }

    // run.json: what happened, as the runner saw it, and the server's own timeline.
    let timeline = last["statuses"].as_array().cloned().unwrap_or_default();
    let left_us = left_evaluation_us(&timeline).or_else(|| statuses.iter().find(|s| left_evaluation(&s.status)).map(|s| s.ts_us));
    let metric = eval_id.as_deref().map(|id| db.evaluation_metric(id).unwrap_or(Value::Null)).filter(|v| !v.is_null());
    let info = RunInfo {
        pass: Some(plan.name.to_string()),
        evaluation_id: eval_id.clone(),
        status: status.clone(),
        statuses,
        evaluated_s: left_us.map(|t| evalbench_bundle::num::s((t - requested_us) as f64 / 1e6)),
        requested_us: Some(requested_us),
        captures: c.names().into_iter().map(String::from).collect(),
        evaluation_metric: metric,
        runner: Some(RunnerInfo {
            target: target.name().to_string(),
            server_statuses: timeline
                .iter()
                .filter_map(|s| Some(StatusChange { status: s["status"].as_str()?.to_string(), ts_us: s["ts_us"].as_i64()? }))
                .collect(),
            capture_started_us,
            capture_stopped_us,
            error: last["error"].as_str().map(String::from),
            problems: problems.clone(),
            captures_off: off_list(&c, plan.name).into_iter().map(String::from).collect(),
            capture_ports: Some(CapturePorts { pg: cap.pg_port, proto: cap.proto_port }),
        }),
        raw: Value::Null,
    };
    // Through a Value, so the keys come out sorted as they always have.
    let doc = serde_json::to_value(&info).expect("serializes");
    write_json(&dir.join(layout::RUN_JSON), &doc).map_err(err)?;

    if let Some(f) = failure {
        return Err(err(f));
    }
    if status.as_deref() != Some("Completed") {
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

/// Captures a pass of this kind would have had but that were switched off.
fn off_list(c: &Captures, pass: &str) -> Vec<&'static str> {
    let mut v = Vec::new();
    if layout::is_clean(pass) {
        if !c.pcap {
            v.push("pcap");
        }
        if !c.pg_stats {
            v.push("pg_stat_statements");
        }
        if !c.wait_samples {
            v.push("wait_samples");
        }
    } else {
        if !c.perf {
            v.push("perf");
        }
        if !c.strace {
            v.push("strace");
        }
        if !c.auto_explain {
            v.push("auto_explain");
        }
    }
    v
}
