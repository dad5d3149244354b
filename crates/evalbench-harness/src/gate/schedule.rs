//! Up to K steps at once, never more than the memory budget holds by each
//! step's peak on the previous run.

use crate::error::HarnessError;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use evalbench_host::now_us;

use super::{cache_holds, nix_config, safe, GateOpts, State, Step, StepResult, DEFAULT_STEP_PEAK};
use crate::cmdbench::{run_once_env, Run};

/// One step run, its stderr and nix's statistics kept in `logs`.
fn run_step(
    step: &Step,
    o: &GateOpts,
    logs: &std::path::Path,
    t0: Instant,
    expected_peak: u64,
    progress: &(dyn Fn(&str) + Sync),
) -> StepResult {
    let cache = if !o.eval_cache {
        "off"
    } else if cache_holds(&step.attr_path) {
        "hit"
    } else {
        "miss"
    };
    progress(&format!("{} started (eval cache {cache})", step.name));
    let errf = logs.join(format!("{}.stderr", safe(&step.name)));
    // nix counts the step's work exactly: its statistics beside its stderr.
    let statsf = logs.join(format!("{}.nix-stats.json", safe(&step.name)));
    let _ = std::fs::remove_file(&statsf);
    let env = [("NIX_SHOW_STATS", std::ffi::OsStr::new("1")), ("NIX_SHOW_STATS_PATH", statsf.as_os_str())];
    let start_us = now_us();
    match run_once_env(&step.argv, t0, true, true, Some(&errf), &env) {
        Ok(run) => {
            let ok = run.exit == Some(0);
            let error = (!ok).then(|| {
                let text = std::fs::read_to_string(&errf).unwrap_or_default();
                let lines: Vec<&str> =
                    text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("warning:")).collect();
                lines[lines.len().saturating_sub(6)..].join("\n")
            });
            let nix_stats_file = statsf.is_file().then(|| statsf.clone());
            StepResult {
                step: step.clone(),
                run,
                ok,
                error,
                expected_peak,
                start_us,
                eval_cache: cache,
                nix_stats_file,
            }
        }
        Err(e) => StepResult {
            step: step.clone(),
            run: Run {
                wall_s: 0.0,
                user_s: 0.0,
                sys_s: 0.0,
                peak_bytes: None,
                exit: None,
                started_s: 0.0,
                nix_stats: None,
            },
            ok: false,
            error: Some(e.to_string()),
            expected_peak,
            start_us,
            eval_cache: cache,
            nix_stats_file: None,
        },
    }
}

/// Runs every step; never stops at the first failure.
pub fn run(o: &GateOpts, steps: &[Step], progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<StepResult>, HarnessError> {
    std::fs::create_dir_all(&o.out).map_err(HarnessError::io(&o.out))?;
    let state_path = o.out.join("gate-state.json");
    let state: State =
        std::fs::read_to_string(&state_path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let logs = o.out.join("gate-logs");
    std::fs::create_dir_all(&logs).map_err(HarnessError::io(&logs))?;
    // Biggest expected peaks first, so the budget is used while it is large.
    let mut order: Vec<usize> = (0..steps.len()).collect();
    let expected = |s: &Step| state.peaks.get(&s.name).copied().unwrap_or(DEFAULT_STEP_PEAK);
    order.sort_by_key(|&i| std::cmp::Reverse(expected(&steps[i])));
    let queue = Mutex::new(order);
    // (running count, memory reserved)
    let room = Arc::new((Mutex::new((0usize, 0u64)), Condvar::new()));
    let results: Mutex<Vec<StepResult>> = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::env::set_var("NIX_CONFIG", nix_config(o.eval_cache));
    std::thread::scope(|s| {
        for _ in 0..o.jobs.max(1) {
            s.spawn(|| loop {
                // Take the next step whose expected peak fits the budget, or wait for room.
                let (lock, cv) = &*room;
                let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                let pick = loop {
                    let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                    if q.is_empty() {
                        break None;
                    }
                    let fits =
                        q.iter().position(|&k| g.0 == 0 || g.1 + expected(&steps[k]).min(o.mem_budget) <= o.mem_budget);
                    if let Some(pos) = fits {
                        let k = q.remove(pos);
                        g.0 += 1;
                        g.1 += expected(&steps[k]).min(o.mem_budget);
                        break Some(k);
                    }
                    drop(q);
                    g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
                };
                drop(g);
                let Some(k) = pick else { break };
                let step = &steps[k];
                let res = run_step(step, o, &logs, t0, expected(step), progress);
                progress(&format!(
                    "{} {} in {:.2} s",
                    step.name,
                    if res.ok { "passed" } else { "FAILED" },
                    res.run.wall_s
                ));
                results.lock().unwrap_or_else(|e| e.into_inner()).push(res);
                let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                g.0 -= 1;
                g.1 -= expected(step).min(o.mem_budget);
                cv.notify_all();
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.start_us);
    // Remember each step's peak for the next run's budget.
    let mut next = State::default();
    for r in &results {
        if let Some(p) = r.run.peak_bytes {
            next.peaks.insert(r.step.name.clone(), p);
        }
    }
    // The next run's budget depends on it: a state that cannot be written is an error, said.
    evalbench_bundle::write_record(&state_path, &serde_json::to_vec_pretty(&next).expect("serializes"))?;
    Ok(results)
}
