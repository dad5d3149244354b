//! A deploy gate that names every failure and measures every step (seed 002):
//! each machine toplevel and each check is its own process, so one broken
//! machine hides nothing; up to K steps run at once, never more than the
//! memory budget holds by each step's peak on the previous run; the eval
//! cache is used unless turned off, and said so; every step's wall, user and
//! sys time, peak memory and exit status are written as spans in a bundle.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use evalbench_bundle::layout;
use evalbench_host::now_us;

use serde::{Deserialize, Serialize};

use crate::cmdbench::{run_once_with, Run};

pub const SYSTEM: &str = "x86_64-linux";
/// Assumed peak of a step never measured before: conservative.
pub const DEFAULT_STEP_PEAK: u64 = 1 << 30;

#[derive(Debug, Clone)]
pub struct GateOpts {
    pub flake: PathBuf,
    /// Attribute set of machines (each `<attr>.<m>.drvPath`), when the flake has no nixosConfigurations.
    pub machines: Option<String>,
    pub checks: Option<String>,
    pub jobs: usize,
    pub mem_budget: u64,
    pub eval_cache: bool,
    pub out: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub name: String,
    pub kind: &'static str,
    pub argv: Vec<String>,
    /// The attribute path whose `drvPath` nix's eval cache may hold.
    pub attr_path: Vec<String>,
}

/// Where nix keeps its eval caches for this user.
fn eval_cache_dbs() -> Vec<PathBuf> {
    evalbench_lab::eval::eval_cache_files(&evalbench_lab::eval::cache_home())
}

/// Whether an eval cache already holds `path`'s drvPath: the step will be answered from it.
pub fn cache_holds(path: &[String]) -> bool {
    eval_cache_dbs().iter().any(|db| {
        let Ok(c) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else { return false };
        let ids = |parents: &[i64], name: &str| -> Vec<i64> {
            let q = if parents.is_empty() {
                "SELECT rowid FROM Attributes WHERE name = ?1".to_string()
            } else {
                format!(
                    "SELECT rowid FROM Attributes WHERE name = ?1 AND parent IN ({})",
                    parents.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",")
                )
            };
            c.prepare(&q).and_then(|mut st| st.query_map([name], |r| r.get::<_, i64>(0)).map(|rows| rows.flatten().collect())).unwrap_or_default()
        };
        let Some((first, rest)) = path.split_first() else { return false };
        let mut frontier = ids(&[], first);
        for name in rest {
            if frontier.is_empty() {
                return false;
            }
            frontier = ids(&frontier, name);
        }
        !frontier.is_empty() && !ids(&frontier, "drvPath").is_empty()
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub step: Step,
    pub run: Run,
    pub ok: bool,
    /// The last lines of the step's stderr when it failed.
    pub error: Option<String>,
    pub expected_peak: u64,
    pub start_us: i64,
    /// "hit" (the eval cache held the step's drvPath when it started), "miss", or "off".
    pub eval_cache: &'static str,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// Step name to its peak memory on the last run, bytes.
    peaks: HashMap<String, u64>,
}

fn nix_config(eval_cache: bool) -> String {
    format!(
        "experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\nsandbox = false\neval-cache = {}\n",
        if eval_cache { "true" } else { "false" }
    )
}

fn nix_json(flake: &str, attr: &str, eval_cache: bool) -> Result<Option<Vec<String>>, String> {
    let out = Command::new("nix")
        .args(["eval", "--json", &format!("{flake}#{attr}"), "--apply", "builtins.attrNames"])
        .env("NIX_CONFIG", nix_config(eval_cache))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("nix: {e} (apt-get install nix-bin)"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("does not provide attribute") {
            return Ok(None);
        }
        return Err(format!("listing {attr}: {}", err.trim()));
    }
    serde_json::from_slice(&out.stdout).map(Some).map_err(|e| format!("listing {attr}: {e}"))
}

/// Machines and checks of the flake, each a step.
pub fn discover(o: &GateOpts) -> Result<Vec<Step>, String> {
    let flake = o.flake.to_string_lossy().to_string();
    let mut steps = Vec::new();
    // `nix path-info --derivation` forces the toplevel's drvPath through nix's
    // eval cache; Debian's nix 2.8 answers `nix eval ....drvPath` without it.
    let (set, suffix) = match &o.machines {
        Some(attr) => (attr.clone(), String::new()),
        None => ("nixosConfigurations".to_string(), ".config.system.build.toplevel".to_string()),
    };
    match nix_json(&flake, &set, o.eval_cache)? {
        Some(names) => {
            for m in names {
                let mut attr_path: Vec<String> = set.split('.').map(String::from).collect();
                attr_path.push(m.clone());
                attr_path.extend(suffix.split('.').filter(|x| !x.is_empty()).map(String::from));
                steps.push(Step {
                    attr_path,
                    name: format!("machine {m}"),
                    kind: "machine",
                    argv: vec!["nix".into(), "path-info".into(), "--derivation".into(), format!("{flake}#{set}.\"{m}\"{suffix}")],
                });
            }
        }
        None if o.machines.is_some() => return Err(format!("{flake} has no attribute {set}")),
        None => {}
    }
    let checks = o.checks.clone().unwrap_or_else(|| format!("checks.{SYSTEM}"));
    if let Some(names) = nix_json(&flake, &checks, o.eval_cache)? {
        for c in names {
            let mut attr_path: Vec<String> = checks.split('.').map(String::from).collect();
            attr_path.push(c.clone());
            steps.push(Step {
                attr_path,
                name: format!("check {c}"),
                kind: "check",
                argv: vec!["nix".into(), "build".into(), "--no-link".into(), format!("{flake}#{checks}.\"{c}\"")],
            });
        }
    }
    if steps.is_empty() {
        return Err(format!("{flake}: no machines (nixosConfigurations, or --machines ATTR) and no checks found"));
    }
    Ok(steps)
}

fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

/// Runs every step; never stops at the first failure.
pub fn run(o: &GateOpts, steps: &[Step], progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<StepResult>, String> {
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let state_path = o.out.join("gate-state.json");
    let state: State = std::fs::read_to_string(&state_path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let logs = o.out.join("gate-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
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
                    let fits = q.iter().position(|&k| g.0 == 0 || g.1 + expected(&steps[k]).min(o.mem_budget) <= o.mem_budget);
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
                let cache = if !o.eval_cache {
                    "off"
                } else if cache_holds(&step.attr_path) {
                    "hit"
                } else {
                    "miss"
                };
                progress(&format!("{} started (eval cache {cache})", step.name));
                let errf = logs.join(format!("{}.stderr", safe(&step.name)));
                let start_us = now_us();
                let res = match run_once_with(&step.argv, t0, true, true, Some(&errf)) {
                    Ok(run) => {
                        let ok = run.exit == Some(0);
                        let error = (!ok).then(|| {
                            let text = std::fs::read_to_string(&errf).unwrap_or_default();
                            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("warning:")).collect();
                            lines[lines.len().saturating_sub(6)..].join("\n")
                        });
                        StepResult { step: step.clone(), run, ok, error, expected_peak: expected(step), start_us, eval_cache: cache }
                    }
                    Err(e) => StepResult {
                        step: step.clone(),
                        run: Run { wall_s: 0.0, user_s: 0.0, sys_s: 0.0, peak_bytes: None, exit: None, started_s: 0.0 },
                        ok: false,
                        error: Some(e),
                        expected_peak: expected(step),
                        start_us,
                        eval_cache: cache,
                    },
                };
                progress(&format!("{} {} in {:.2} s", step.name, if res.ok { "passed" } else { "FAILED" }, res.run.wall_s));
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
    let _ = std::fs::write(&state_path, serde_json::to_vec_pretty(&next).unwrap_or_default());
    Ok(results)
}

/// The gate as a bundle: pass `gate` (or `gate.N` when one exists), one span per step.
pub fn write_bundle(out: &Path, results: &[StepResult], opts: &GateOpts, wall_s: f64) -> Result<PathBuf, String> {
    let mut n = 1;
    let mut dir = out.join("gate");
    while dir.exists() {
        n += 1;
        dir = out.join(format!("gate.{n}"));
    }
    let trace = dir.join(layout::TRACE_DIR);
    std::fs::create_dir_all(&trace).map_err(|e| format!("{}: {e}", trace.display()))?;
    for (k, r) in results.iter().enumerate() {
        let process = safe(&r.step.name);
        let pid = k as u32 + 1;
        let mut f = std::fs::File::create(trace.join(format!("{process}.{pid}.jsonl"))).map_err(|e| e.to_string())?;
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
        writeln!(f, "{line}").map_err(|e| e.to_string())?;
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
    evalbench_bundle::write_atomic(&dir.join(layout::RUN_JSON), serde_json::to_string_pretty(&run).expect("serializes").as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(dir)
}
