//! The gate's bundle: one span per step with its wall, user and sys time,
//! peak memory, exit status and eval-cache use.

use crate::error::HarnessError;
use std::io::Write;
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
    for (k, r) in results.iter().enumerate() {
        let process = safe(&r.step.name);
        let pid = k as u32 + 1;
        let path = trace.join(format!("{process}.{pid}.jsonl"));
        let mut f = std::fs::File::create(&path).map_err(|source| HarnessError::Io { path: path.clone(), source })?;
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
            }
        });
        writeln!(f, "{line}").map_err(|source| HarnessError::Io { path: path.clone(), source })?;
    }
    let failed: Vec<&str> = results.iter().filter(|r| !r.ok).map(|r| r.step.name.as_str()).collect();
    let run = serde_json::json!({
        "pass": dir.file_name().map(|n| n.to_string_lossy().to_string()),
        "status": if failed.is_empty() { "Completed" } else { "Failed" },
        "evaluated_s": wall_s,
        "captures": ["spans"],
        "target": "gate",
        "gate": {
            "flake": opts.flake,
            "jobs": opts.jobs,
            "mem_budget_bytes": opts.mem_budget,
            "eval_cache": opts.eval_cache,
            "failed": failed,
            "steps": results,
        }
    });
    evalbench_bundle::write_atomic(&dir.join(layout::RUN_JSON), serde_json::to_string_pretty(&run).expect("serializes").as_bytes())?;
    Ok(dir)
}
