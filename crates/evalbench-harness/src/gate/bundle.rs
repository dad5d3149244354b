//! The gate's bundle: one span per step with its wall, user and sys time,
//! peak memory, exit status and eval-cache use.

use crate::error::HarnessError;
use std::path::{Path, PathBuf};

use evalbench_bundle::layout;

use super::{safe, GateOpts, StepResult};

/// The gate as a bundle: pass `gate` (or `gate.N` when one exists), one span per step.
pub fn write_bundle(out: &Path, results: &[StepResult], opts: &GateOpts, wall_s: f64) -> Result<PathBuf, HarnessError> {
    let mut n = 1;
    let mut dir = out.join("gate");
    while dir.exists() {
        n += 1;
        dir = out.join(format!("gate.{n}"));
    }
    let trace = dir.join(layout::TRACE_DIR);
    std::fs::create_dir_all(&trace).map_err(|source| HarnessError::Io { path: trace.clone(), source })?;
    // nix's statistics per step, as nix wrote them, where the bundle keeps them.
    let eval = dir.join(layout::EVAL_DIR);
    let mut step_counters: Vec<Option<evalbench_bundle::nix_stats::Counters>> = Vec::new();
    for r in results {
        let Some(src) = &r.nix_stats_file else {
            step_counters.push(None);
            continue;
        };
        std::fs::create_dir_all(&eval).map_err(|source| HarnessError::Io { path: eval.clone(), source })?;
        let text = std::fs::read(src).map_err(|source| HarnessError::Io { path: src.clone(), source })?;
        let to = eval.join(format!("{}{}.json", layout::NIX_STATS_PREFIX, safe(&r.step.name)));
        evalbench_bundle::write_atomic(&to, &text)?;
        step_counters.push(evalbench_bundle::nix_stats::counters_of(&text));
    }
    let nix_stats = evalbench_bundle::nix_stats::read(&dir)?.map(|s| evalbench_bundle::nix_stats::to_json(&s.counters));
    for (k, r) in results.iter().enumerate() {
        let process = safe(&r.step.name);
        let pid = k as u32 + 1;
        let path = trace.join(evalbench_bundle::contract::span_file_name(&process, pid));
        let line = serde_json::json!({
            "name": r.step.kind,
            "target": "gradient_gate",
            "ts_us": r.start_us,
            "dur_us": (r.run.wall_s * 1e6) as i64,
            "pid": pid,
            "process": process,
            "id": 1,
            "fields": {
                "step": r.step.name,
                "wall_s": r.run.wall_s,
                "user_s": r.run.user_s,
                "sys_s": r.run.sys_s,
                "peak_bytes": r.run.peak_bytes,
                "exit": r.run.exit,
                "ok": r.ok,
                "error": r.error,
                "eval_cache": r.eval_cache,
                "nix_function_calls": step_counters[k].as_ref().and_then(|c| c.get("nrFunctionCalls")).map(|v| *v as
                    u64),
                "nix_thunks": step_counters[k].as_ref().and_then(|c| c.get("nrThunks")).map(|v| *v as u64),
                "nix_gc_total_bytes": step_counters[k].as_ref().and_then(|c| c.get("gc.totalBytes")).map(|v| *v as u64),
            }
        });
        evalbench_bundle::write_atomic(&path, format!("{line}\n").as_bytes())?;
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.ok).map(|r| r.step.name.as_str()).collect();
    let run = serde_json::json!({
        "pass": dir.file_name().map(|n| n.to_string_lossy().to_string()),
        "status": if failed.is_empty() { evalbench_bundle::contract::Status::Completed } else {
            evalbench_bundle::contract::Status::Failed }.as_str(),
        "evaluated_s": wall_s,
        "captures": ["spans"],
        "target": "gate",
        "nix_stats": nix_stats,
        "gate": {
            "flake": opts.flake,
            "jobs": opts.jobs,
            "mem_budget_bytes": opts.mem_budget,
            "eval_cache": opts.eval_cache,
            "failed": failed,
            "steps": results,
        }
    });
    evalbench_bundle::write_record(
        &dir.join(layout::RUN_JSON),
        serde_json::to_string_pretty(&run).expect("serializes").as_bytes(),
    )?;
    Ok(dir)
}
