//! The driver: runs each pass (server, workers, their eval children) and
//! writes the pass's run.json next to the spans the processes wrote.

use crate::error::SampleError;
use evalbench_host::now_us;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evalbench_bundle::contract::Status;
use evalbench_bundle::run_info::StatusChange;
use evalbench_bundle::{layout, RunInfo};

use crate::Opts as Args;

/// Kills what is still running when a pass ends early.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Entry point of `evalbench sample`: a role when `--role` is given, else the driver.
pub fn run(args: Args) -> Result<(), SampleError> {
    match args.role.as_deref() {
        Some("server") => {
            let _g = crate::init_tracing();
            let id = args.job.clone().unwrap_or_else(|| "eval".into());
            crate::server::serve(args.jobs, args.drvs, args.workers, &id)
                .map_err(|source| SampleError::Role { role: "server", source })
        }
        Some("worker") => {
            let _g = crate::init_tracing();
            let addr = args.connect.as_deref().ok_or(SampleError::Missing { role: "worker", flag: "connect" })?;
            let cache = args.cache.as_deref().ok_or(SampleError::Missing { role: "worker", flag: "cache" })?;
            crate::worker::work(addr, cache).map_err(|source| SampleError::Role { role: "worker", source })
        }
        Some("eval") => {
            let _g = crate::init_tracing();
            let cache = args.cache.as_deref().ok_or(SampleError::Missing { role: "eval", flag: "cache" })?;
            crate::eval::eval(args.job.as_deref().unwrap_or("job"), args.shard, args.drvs, cache)
                .map_err(|source| SampleError::Role { role: "eval", source })
        }
        Some(other) => Err(SampleError::UnknownRole(other.to_string())),
        None => drive(&args),
    }
}

fn drive(args: &Args) -> Result<(), SampleError> {
    std::fs::create_dir_all(&args.out).map_err(SampleError::io(&args.out))?;
    let cache = args.out.join(".sample-eval-cache");
    for (k, pass) in args.passes.iter().enumerate() {
        if layout::is_cold(pass) {
            let _ = std::fs::remove_dir_all(&cache);
        }
        let t = Instant::now();
        let info = run_pass(args, pass, k, &cache)?;
        eprintln!(
            "evalbench sample: {pass}: {} in {:.2} s (evaluated {:.3} s)",
            info.status.as_deref().unwrap_or("?"),
            t.elapsed().as_secs_f64(),
            info.evaluated_s.unwrap_or(f64::NAN)
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
    Ok(())
}

fn run_pass(args: &Args, pass: &str, k: usize, cache: &Path) -> Result<RunInfo, SampleError> {
    let dir = args.out.join(pass);
    let trace = dir.join(layout::TRACE_DIR);
    if trace.exists() {
        std::fs::remove_dir_all(&trace).map_err(SampleError::io(&trace))?;
    }
    std::fs::create_dir_all(&trace).map_err(SampleError::io(&trace))?;
    let exe = std::env::current_exe().map_err(|source| SampleError::Io { path: "/proc/self/exe".into(), source })?;
    let eval_id = format!("{:08x}-{pass}", (now_us() as u64 ^ (k as u64) << 40) & 0xffff_ffff);
    let mut server = spawn_server(&exe, args, &eval_id, &trace)?;
    let mut stdin = server.stdin.take().expect("piped");
    let stdout = BufReader::new(server.stdout.take().expect("piped"));
    let mut procs = Procs(vec![server]);
    let (tx, rx) = mpsc::channel::<(i64, String)>();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send((now_us(), line)).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    let next = |what: &'static str| -> Result<(i64, String), SampleError> {
        let left = deadline.saturating_duration_since(Instant::now());
        rx.recv_timeout(left).map_err(|_| SampleError::Silent { pass: pass.to_string(), what })
    };
    let (_, port_line) = next("its port")?;
    let port = port_line
        .strip_prefix("PORT ")
        .ok_or_else(|| SampleError::Unexpected { pass: pass.to_string(), line: port_line.clone() })?
        .to_string();
    spawn_workers(&exe, args, &port, cache, &trace, &mut procs)?;
    let (_, ready) = next("the workers")?;
    if ready != "READY" {
        return Err(SampleError::Unexpected { pass: pass.to_string(), line: ready });
    }
    let requested_us = now_us();
    writeln!(stdin, "evaluate").map_err(|source| SampleError::Request { pass: pass.to_string(), source })?;
    let (statuses, metric) = statuses(&next)?;
    for c in &mut procs.0 {
        let _ = c.wait();
    }
    let left = statuses
        .iter()
        .position(|s| s.status == Status::EvaluatingDerivation.as_str())
        .and_then(|i| statuses.get(i + 1))
        .map(|s| (s.ts_us - requested_us) as f64 / 1e6);
    let status = statuses.last().map(|s| s.status.clone());
    let info = RunInfo {
        pass: Some(pass.to_string()),
        eval_id: Some(eval_id.clone()),
        evaluation_id: Some(eval_id),
        cold: Some(layout::is_cold(pass)),
        instrumented: Some(!layout::is_clean(pass)),
        read_warnings: Vec::new(),
        status: status.clone(),
        statuses,
        evaluated_s: left,
        requested_us: Some(requested_us),
        captures: vec!["spans".into()],
        evaluation_metric: metric,
        nix_stats: None,
        // A test pipeline of no flake: its provenance is unknown.
        provenance: None,
        runner: None,
        raw: serde_json::Value::Null,
    };
    info.write(&dir.join(layout::RUN_JSON))?;
    if status.as_deref() != Some(Status::Completed.as_str()) {
        return Err(SampleError::Ended { pass: pass.to_string(), status });
    }
    Ok(info)
}

/// The sample server, its spans into `trace`: it says its port, then
/// READY once the workers are in.
fn spawn_server(exe: &Path, args: &Args, eval_id: &str, trace: &Path) -> Result<std::process::Child, SampleError> {
    Command::new(exe)
        .args(["sample", "--role", "server", "--job", eval_id])
        .args([
            "--ci-jobs",
            &args.jobs.to_string(),
            "--drvs",
            &args.drvs.to_string(),
            "--workers",
            &args.workers.to_string(),
        ])
        .env(evalbench_trace::ENV_TRACE_DIR, trace)
        .env(evalbench_trace::ENV_PROCESS, "server")
        .env(crate::tune::ENV, crate::tune::encode(&args.delays, &args.work))
        .env(evalbench_trace::ENV_HOST, "server")
        .env_remove(evalbench_trace::ENV_CLOCK_SKEW_US)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|source| SampleError::Start { what: "the sample server", source })
}

/// The sample workers, each with its cache and (skewed) clock, connected to the server at `port`.
fn spawn_workers(
    exe: &Path,
    args: &Args,
    port: &str,
    cache: &Path,
    trace: &Path,
    procs: &mut Procs,
) -> Result<(), SampleError> {
    for w in 0..args.workers {
        let skew_ms =
            if args.skew_per_worker { args.worker_clock_skew_ms * (w as i64 + 1) } else { args.worker_clock_skew_ms };
        let child = Command::new(exe)
            .args(["sample", "--role", "worker", "--connect", &format!("127.0.0.1:{port}")])
            .arg("--cache")
            .arg(cache.join(format!("worker-{w}")))
            .env(evalbench_trace::ENV_TRACE_DIR, trace)
            .env(evalbench_trace::ENV_PROCESS, "worker")
            .env(crate::tune::ENV, crate::tune::encode(&args.delays, &args.work))
            .env(evalbench_trace::ENV_HOST, format!("worker-{w}"))
            .env(evalbench_trace::ENV_CLOCK_SKEW_US, (skew_ms * 1000).to_string())
            .spawn()
            .map_err(|source| SampleError::Start { what: "a sample worker", source })?;
        procs.0.push(child);
    }
    Ok(())
}

/// The server's lines until the evaluation ended: its status changes (at
/// the time each was read) and its metric. Silence after the end is an end.
fn statuses(
    next: &dyn Fn(&'static str) -> Result<(i64, String), SampleError>,
) -> Result<(Vec<StatusChange>, Option<serde_json::Value>), SampleError> {
    let mut statuses = Vec::new();
    let mut metric = None;
    loop {
        let (ts, line) = match next("the evaluation to complete") {
            Ok(l) => l,
            Err(e)
                if statuses.iter().any(|s: &StatusChange| {
                    s.status == Status::Completed.as_str() || s.status == Status::Failed.as_str()
                }) =>
            {
                let _ = e;
                break;
            }
            Err(e) => return Err(e),
        };
        if let Some(s) = line.strip_prefix("STATUS ") {
            statuses.push(StatusChange { status: s.to_string(), ts_us: ts });
            if s == Status::Completed.as_str() || s == Status::Failed.as_str() {
                break;
            }
        } else if let Some(m) = line.strip_prefix("METRIC ") {
            metric = serde_json::from_str(m).ok();
        }
    }
    Ok((statuses, metric))
}
