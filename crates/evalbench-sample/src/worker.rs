//! The worker: takes jobs, runs an eval child per job, reports in waves.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use tracing::debug_span;

use crate::proto::Conn;

const W: &str = "gradient_worker";
const WAVE: usize = 64;

pub fn work(addr: &str, cache: &Path) -> std::io::Result<()> {
    let mut conn = Conn::new(TcpStream::connect(addr)?)?;
    // Log uploads run beside the next job; nothing waits for them but the worker's exit.
    let mut uploads = Vec::new();
    conn.send(&json!({"type": "hello"}))?;
    while let Some(msg) = conn.recv()? {
        match msg["type"].as_str().unwrap_or("offer") {
            "bye" => break,
            "no_job" => {}
            "assign" => {
                run_job(&mut conn, &msg, cache)?;
                let job = msg["job"].as_str().unwrap_or("").to_string();
                uploads.push(std::thread::spawn(move || {
                    let _u = debug_span!(target: W, "upload_logs", job_id = job.as_str()).entered();
                    std::hint::black_box(crate::tune::work("upload_logs", job.as_bytes(), 1000));
                }));
                let _r = debug_span!(target: W, "request_job", after = "job").entered();
                conn.send(&json!({"type": "request_job"}))?;
            }
            _ if msg.get("offer").is_some() => {
                let offered = msg["offer"].as_array().map_or(0, |a| a.len());
                let _o = debug_span!(target: W, "on_job_offer", jobs = offered).entered();
                let scores: Vec<u64> = {
                    let _s = debug_span!(target: W, "score_candidates", candidates = offered).entered();
                    (0..offered as u64).map(|i| 100 - i.min(99)).collect()
                };
                {
                    let _s = debug_span!(target: W, "send_scores", count = scores.len()).entered();
                    conn.send(&json!({"type": "scores", "scores": scores}))?;
                }
                let _r = debug_span!(target: W, "request_job", after = "offer").entered();
                conn.send(&json!({"type": "request_job"}))?;
            }
            other => eprintln!("sample worker: unexpected message {other:?}"),
        }
    }
    for u in uploads {
        let _ = u.join();
    }
    Ok(())
}

fn step(name: &'static str, rounds: u32) {
    // Real work, not sleeps: the spans measure something the CPU did.
    let _s = match name {
        "clone_and_checkout" => debug_span!(target: W, "clone_and_checkout"),
        "run_input_update" => debug_span!(target: W, "run_input_update"),
        "fetch_inputs" => debug_span!(target: W, "fetch_inputs"),
        _ => debug_span!(target: W, "missing_paths"),
    }
    .entered();
    std::hint::black_box(crate::tune::work(name, name.as_bytes(), rounds));
}

fn run_job(conn: &mut Conn, msg: &Value, cache: &Path) -> std::io::Result<()> {
    let job = msg["job"].as_str().unwrap_or("").to_string();
    let shard = msg["shard"].as_u64().unwrap_or(0);
    let drvs = msg["drvs"].as_u64().unwrap_or(0);
    let _j = debug_span!(target: W, "job", job_id = job.as_str(), shard).entered();
    {
        let _f = debug_span!(target: W, "fetch_repository", repo = "sample").entered();
        for s in ["clone_and_checkout", "run_input_update", "fetch_inputs", "missing_paths"] {
            step(s, 2000);
        }
    }
    let produced: Vec<String> = {
        let _e = debug_span!(target: W, "evaluate_flake", job_id = job.as_str()).entered();
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .args([
                "sample",
                "--role",
                "eval",
                "--job",
                &job,
                "--drvs",
                &drvs.to_string(),
                "--shard",
                &shard.to_string(),
            ])
            .arg("--cache")
            .arg(cache)
            .env(evalbench_trace::ENV_PROCESS, "eval")
            .stdout(Stdio::piped())
            .spawn()?;
        let out = BufReader::new(child.stdout.take().expect("piped"));
        let lines: Vec<String> = out.lines().collect::<Result<_, _>>()?;
        let st = child.wait()?;
        if !st.success() {
            return Err(std::io::Error::other(format!("eval child for {job} failed: {st}")));
        }
        lines
    };
    let _d = debug_span!(target: W, "evaluate_derivations", drvs = produced.len()).entered();
    let waves: Vec<&[String]> = produced.chunks(WAVE).collect();
    let n = waves.len();
    for (i, wave) in waves.into_iter().enumerate() {
        let _w = debug_span!(target: W, "wave", n = i, drvs = wave.len()).entered();
        {
            let _p = debug_span!(target: W, "parse_drv_wave", drvs = wave.len()).entered();
            for d in wave {
                std::hint::black_box(crate::eval::work(d.as_bytes(), 3));
            }
        }
        {
            let _q = debug_span!(target: W, "query_known_derivations", drvs = wave.len()).entered();
            conn.send(&json!({"type": "known", "drvs": wave}))?;
            let reply = conn.recv()?.ok_or_else(|| std::io::Error::other("server closed"))?;
            std::hint::black_box(reply);
        }
        let _r = debug_span!(target: W, "report_eval_result", job_id = job.as_str(), drvs = wave.len()).entered();
        conn.send(&json!({"type": "eval_result", "job": job, "drvs": wave, "last": i + 1 == n}))?;
    }
    if n == 0 {
        let _r = debug_span!(target: W, "report_eval_result", job_id = job.as_str(), drvs = 0u32).entered();
        conn.send(&json!({"type": "eval_result", "job": job, "drvs": [], "last": true}))?;
    }
    Ok(())
}
