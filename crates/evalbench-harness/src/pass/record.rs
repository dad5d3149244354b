//! After the evaluation: what the target and the database still hold of
//! the pass (job phases, spans, flame graphs), and run.json.

use evalbench_api::left_evaluation;
use evalbench_api::left_evaluation_us;
use evalbench_bundle::run_info::StatusChange;
use evalbench_bundle::{layout, CapturePorts, RunInfo, RunnerInfo};
use serde_json::Value;

use super::files::{off_list, write_json};
use super::PassPlan;
use crate::capture::{perf, pgstat::Db};
use crate::target::{CaptureInfo, Target};

/// What the runner saw of the evaluation.
pub(super) struct Observed {
    pub eval_id: Option<String>,
    pub requested_us: i64,
    pub capture_started_us: i64,
    pub capture_stopped_us: i64,
    /// Status changes as polled, runner clock.
    pub statuses: Vec<StatusChange>,
    /// The last status object the API gave.
    pub last: Value,
    /// Packets cut from each capture for lying outside the window.
    pub outside: std::collections::BTreeMap<String, evalbench_bundle::OutsideWindow>,
    /// Why the pass did not finish, and which of the target's processes died.
    pub failure: Option<String>,
    /// How the run ended, when it did not complete.
    pub ended: Option<evalbench_bundle::Ended>,
    pub dead: Vec<String>,
    /// What the machine did during the window besides the pipeline.
    pub machine: Option<evalbench_bundle::MachineState>,
}

/// Job phases from the database, spans from the target, flame graphs from perf.data.
pub(super) fn collect(
    target: &mut dyn Target,
    db: &Db,
    eval_id: Option<&str>,
    plan: &PassPlan<'_>,
    problems: &mut Vec<String>,
) {
    let dir = &plan.dir;
    if let Some(id) = eval_id {
        match db.job_phases(id) {
            Ok(v) => write_json(&dir.join(layout::JOB_PHASES), &v).unwrap_or_else(|e| problems.push(e.to_string())),
            Err(e) => problems.push(e.to_string()),
        }
    }
    target.collect_spans(&dir.join(layout::TRACE_DIR)).unwrap_or_else(|e| problems.push(e.to_string()));
    if dir.join(layout::NIX_PROFILE_FOLDED).is_file() {
        perf::flamegraph_of_folded(
            &dir.join(layout::NIX_PROFILE_FOLDED),
            &dir.join(layout::NIX_FLAME_SVG),
            &format!("{} nix evaluator", plan.name),
            "µs",
        )
        .unwrap_or_else(|e| problems.push(e.to_string()));
    }
    if plan.captures.perf {
        for (data, svg, title) in [
            (layout::PERF_DATA, layout::FLAME_SVG, "server host"),
            (layout::WORKER_PERF_DATA, layout::WORKER_FLAME_SVG, "worker host (eval subprocess included)"),
        ] {
            if dir.join(data).exists() {
                perf::flamegraph(&dir.join(data), &dir.join(svg), &format!("{} {title}", plan.name))
                    .unwrap_or_else(|e| problems.push(e.to_string()));
            }
        }
    }
}

pub(super) fn run_info(
    target: &str,
    cap: &CaptureInfo,
    db: &Db,
    plan: &PassPlan<'_>,
    o: &Observed,
    problems: &mut Vec<String>,
) -> RunInfo {
    let c = plan.captures;
    let timeline = o.last["statuses"].as_array().cloned().unwrap_or_default();
    let left_us = left_evaluation_us(&timeline)
        .or_else(|| o.statuses.iter().find(|s| left_evaluation(&s.status)).map(|s| s.ts_us));
    let nix_stats = match evalbench_bundle::nix_stats::read(&plan.dir) {
        Ok(s) => s.map(|s| evalbench_bundle::nix_stats::to_json(&s.counters)),
        Err(e) => {
            problems.push(e.to_string());
            None
        }
    };
    // Gradient's columns with Gradient's meaning, the CI's own beside them,
    // also as Gradient's benchmark keeps them: evaluation_metric.json.
    let metric =
        o.eval_id.as_deref().map(|id| db.evaluation_metric(id).unwrap_or(Value::Null)).filter(|v| !v.is_null()).map(
            |row| evalbench_bundle::contract::evaluation_metric_row(&row, o.eval_id.as_deref(), nix_stats.as_ref()),
        );
    if let Some(m) = &metric {
        write_json(&plan.dir.join(layout::EVALUATION_METRIC), &Value::Array(vec![m.clone()]))
            .unwrap_or_else(|e| problems.push(e.to_string()));
    }
    RunInfo {
        pass: Some(plan.name.to_string()),
        evaluation_id: o.eval_id.clone(),
        eval_id: o.eval_id.clone(),
        cold: Some(evalbench_bundle::layout::is_cold(plan.name)),
        instrumented: Some(
            evalbench_bundle::layout::PassKind::of(plan.name) == evalbench_bundle::layout::PassKind::Instrumented,
        ),
        read_warnings: Vec::new(),
        status: o.last["status"].as_str().map(String::from),
        statuses: o.statuses.clone(),
        evaluated_s: left_us.map(|t| evalbench_bundle::num::s((t - o.requested_us) as f64 / 1e6)),
        requested_us: Some(o.requested_us),
        captures: c.names().into_iter().map(String::from).collect(),
        evaluation_metric: metric,
        nix_stats,
        provenance: Some(plan.provenance.clone()),
        runner: Some(RunnerInfo {
            target: target.to_string(),
            server_statuses: timeline
                .iter()
                .filter_map(|s| {
                    Some(StatusChange { status: s["status"].as_str()?.to_string(), ts_us: s["ts_us"].as_i64()? })
                })
                .collect(),
            capture_started_us: o.capture_started_us,
            capture_stopped_us: o.capture_stopped_us,
            error: o.last["error"].as_str().map(String::from),
            problems: problems.clone(),
            captures_off: off_list(&c, plan.name).into_iter().map(String::from).collect(),
            capture_ports: Some(CapturePorts { pg: cap.pg_port, proto: cap.proto_port }),
            pg_settings: cap.pg_settings.iter().cloned().collect(),
            outside_window: o.outside.clone(),
            failure: o.failure.clone(),
            outcome: Some(o.ended.map_or("completed", |e| e.key()).to_string()),
            dead: o.dead.clone(),
            machine: o.machine,
            instance: plan.instance,
        }),
        raw: Value::Null,
    }
}
