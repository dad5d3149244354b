//! The lab's worker: takes jobs over `/proto`, fetches the project's git
//! repository into a sources store that survives resets, runs an eval
//! subprocess that evaluates the flake with the real `nix`, reads the `.drv`
//! files it produced in waves, asks the server which it knows, and reports.

mod drv;
mod job_error;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_tungstenite::tungstenite::Message;
use tracing::{debug_span, Instrument};

use crate::msg::{encode, Drv, ToServer, ToWorker};
use job_error::JobError;

const W: &str = "gradient_worker";
const WAVE: usize = 32;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Vec<String>>>>>;

struct Ctx {
    name: String,
    out: mpsc::UnboundedSender<ToServer>,
    pending: Pending,
    next: std::sync::atomic::AtomicU64,
    sources: PathBuf,
}

/// Where the worker finds the token it shows on `/proto` (the lab's, from
/// lab.json): its environment, never its command line.
pub const ENV_PROTO_TOKEN: &str = "EVALBENCH_LAB_PROTO_TOKEN";

pub fn work(server: &str, name: &str, sources: &Path) -> Result<(), crate::LabError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(crate::LabError::Runtime)?;
    let r = rt.block_on(run(server.to_string(), name.to_string(), sources.to_path_buf()));
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    r
}

/// The worker's end of `/proto`.
type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The WebSocket to the server's `/proto`, with the lab's token (as the
/// API's key is shown: a Bearer header) where one is set.
async fn connect(server: &str) -> Result<Socket, crate::LabError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = format!("ws://{server}/proto");
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| crate::LabError::Connect { url: url.clone(), source: e.into() })?;
    if let Ok(token) = std::env::var(ENV_PROTO_TOKEN) {
        let value = format!("Bearer {token}").parse().map_err(
            |e: tokio_tungstenite::tungstenite::http::header::InvalidHeaderValue| crate::LabError::Connect {
                url: url.clone(),
                source: e.into(),
            },
        )?;
        request.headers_mut().insert("authorization", value);
    }
    let (ws, _) = tokio_tungstenite::connect_async_with_config(request, None, true)
        .await
        .map_err(|e| crate::LabError::Connect { url: url.clone(), source: e.into() })?;
    Ok(ws)
}

async fn run(server: String, name: String, sources: PathBuf) -> Result<(), crate::LabError> {
    let ws = connect(&server).await?;
    let (mut sink, mut stream) = ws.split();
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<ToServer>();
    tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            if sink.send(Message::Binary(encode(&m).into())).await.is_err() {
                break;
            }
        }
    });
    let ctx = Arc::new(Ctx { name: name.clone(), out: out_tx, pending: Arc::default(), next: 1.into(), sources });
    let _ = ctx.out.send(ToServer::Hello { worker: name });
    let (job_tx, mut job_rx) = mpsc::unbounded_channel::<ToWorker>();
    // Jobs run one at a time here, while the reader below keeps answering.
    let runner_ctx = ctx.clone();
    let runner = tokio::spawn(async move {
        let mut busy_with_offer = false;
        while let Some(m) = job_rx.recv().await {
            match m {
                ToWorker::Offer { jobs } => {
                    if busy_with_offer {
                        continue;
                    }
                    busy_with_offer = true;
                    on_offer(&runner_ctx, jobs.iter().map(|j| j.job.clone()).collect()).await;
                }
                ToWorker::Assign { job, repository, .. } => {
                    run_job(&runner_ctx, &job, &repository).await;
                    busy_with_offer = false;
                }
                ToWorker::NoJob => busy_with_offer = false,
                _ => {}
            }
        }
    });
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(crate::LabError::Serve)?;
    loop {
        let frame = tokio::select! {
            f = stream.next() => f,
            _ = term.recv() => break,
        };
        let Some(Ok(frame)) = frame else { break };
        let data = match frame {
            Message::Binary(b) => b.to_vec(),
            Message::Text(t) => t.as_bytes().to_vec(),
            Message::Close(_) => break,
            _ => continue,
        };
        let Ok(msg) = serde_json::from_slice::<ToWorker>(&data) else {
            eprintln!("lab worker: bad message from the server");
            continue;
        };
        match msg {
            ToWorker::KnownReply { id, known } => {
                if let Some(tx) = ctx.pending.lock().await.remove(&id) {
                    let _ = tx.send(known);
                }
            }
            ToWorker::Credentials { .. } => {}
            other => {
                let _ = job_tx.send(other);
            }
        }
    }
    runner.abort();
    Ok(())
}

async fn on_offer(ctx: &Ctx, jobs: Vec<String>) {
    async {
        let scores: Vec<(String, i32)> = {
            let _s = debug_span!(target: W, "score_candidates", candidates = jobs.len()).entered();
            // Free, with an empty queue: every job scores the same.
            jobs.iter().map(|j| (j.clone(), 100)).collect()
        };
        {
            let _s = debug_span!(target: W, "send_scores", count = scores.len()).entered();
            let _ = ctx.out.send(ToServer::Scores { scores });
        }
        let _r = debug_span!(target: W, "request_job", worker = ctx.name.as_str()).entered();
        let _ = ctx.out.send(ToServer::RequestJob);
    }
    .instrument(debug_span!(target: W, "on_job_offer", jobs = jobs.len()))
    .await
}

fn phase(ctx: &Ctx, job: &str, p: &str) {
    let _ = ctx.out.send(ToServer::Phase { job: job.to_string(), phase: p.to_string() });
}

async fn cmd(program: &std::ffi::OsStr, args: &[&str], dir: Option<&Path>) -> Result<String, JobError> {
    let mut c = tokio::process::Command::new(program);
    c.args(args).env("NIX_CONFIG", crate::state::NIX_CONFIG).stdin(std::process::Stdio::null());
    if let Some(d) = dir {
        c.current_dir(d);
    }
    let program = program.to_string_lossy();
    let out = c.output().await.map_err(|source| JobError::Spawn { program: program.to_string(), source })?;
    if !out.status.success() {
        return Err(JobError::Command {
            command: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

async fn run_job(ctx: &Ctx, job: &str, repository: &str) {
    let t0 = Instant::now();
    let result = async {
        phase(ctx, job, "fetching");
        let checkout = fetch_repository(ctx, repository)
            .instrument(debug_span!(target: W, "fetch_repository", repository))
            .await?;
        let fetch_ms = t0.elapsed().as_millis() as u64;
        phase(ctx, job, "evaluating_flake");
        let t1 = Instant::now();
        let (paths, eval_metric) = evaluate_flake(ctx, job, &checkout)
            .instrument(debug_span!(target: W, "evaluate_flake", job_id = job))
            .await?;
        let flake_ms = t1.elapsed().as_millis() as u64;
        phase(ctx, job, "evaluating_derivations");
        let t2 = Instant::now();
        let roots = paths.clone();
        let count = evaluate_derivations(ctx, job, paths)
            .instrument(debug_span!(target: W, "evaluate_derivations", job_id = job))
            .await?;
        let mut metric = eval_metric;
        metric["fetch_ms"] = fetch_ms.into();
        metric["flake_ms"] = flake_ms.into();
        metric["derivations_ms"] = (t2.elapsed().as_millis() as u64).into();
        metric["total_ms"] = (t0.elapsed().as_millis() as u64).into();
        metric["derivations"] = count.into();
        Ok::<(serde_json::Value, Vec<String>), JobError>((metric, roots))
    }
    .instrument(debug_span!(target: W, "job", job_id = job))
    .await;
    let msg = match result {
        Ok((metric, roots)) => ToServer::EvalDone { job: job.to_string(), metric, roots },
        Err(e) => ToServer::EvalFailed { job: job.to_string(), attr: e.attr(), message: e.to_string() },
    };
    let _ = ctx.out.send(msg);
    let _ = ctx.out.send(ToServer::RequestJob);
}

async fn fetch_repository(ctx: &Ctx, repository: &str) -> Result<PathBuf, JobError> {
    let name: String = repository
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("repo")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    let dir = ctx.sources.join(if name.is_empty() { "repo".into() } else { name });
    async {
        if dir.join(".git").is_dir() {
            cmd("git".as_ref(), &["fetch", "--quiet", repository, "HEAD"], Some(&dir)).await?;
            cmd("git".as_ref(), &["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"], Some(&dir)).await?;
        } else {
            std::fs::create_dir_all(&ctx.sources)
                .map_err(|source| JobError::Io { path: ctx.sources.clone(), source })?;
            cmd("git".as_ref(), &["clone", "--quiet", repository, &dir.to_string_lossy()], None).await?;
        }
        Ok::<(), JobError>(())
    }
    .instrument(debug_span!(target: W, "clone_and_checkout"))
    .await?;
    let d = dir.to_string_lossy().to_string();
    let nix = crate::eval::nix_program();
    cmd(&nix, &["flake", "metadata", "--json", "--no-write-lock-file", &d], None)
        .instrument(debug_span!(target: W, "run_input_update"))
        .await?;
    let archived = cmd(&nix, &["flake", "archive", "--json", "--no-write-lock-file", &d], None)
        .instrument(debug_span!(target: W, "fetch_inputs"))
        .await?;
    let store_path =
        serde_json::from_str::<serde_json::Value>(&archived).ok().and_then(|v| v["path"].as_str().map(String::from));
    if let Some(p) = store_path {
        cmd(&nix, &["path-info", &p], None).instrument(debug_span!(target: W, "missing_paths", paths = 1u32)).await?;
    }
    Ok(dir)
}

/// Runs the eval subprocess; returns the derivation paths it resolved.
async fn evaluate_flake(_ctx: &Ctx, job: &str, checkout: &Path) -> Result<(Vec<String>, serde_json::Value), JobError> {
    let exe = std::env::current_exe().map_err(JobError::Process)?;
    let mut command = tokio::process::Command::new(exe);
    // SAFETY: prctl is async-signal-safe. The eval subprocess dies with its worker.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = command
        .args(["lab", "eval", "--job", job, "--flake"])
        .arg(checkout)
        .env(evalbench_trace::ENV_PROCESS, "eval")
        .env("NIX_CONFIG", crate::state::NIX_CONFIG)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(JobError::StartEval)?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut paths = Vec::new();
    let mut failure: Option<JobError> = None;
    let mut metric = serde_json::json!({});
    while let Ok(Some(line)) = lines.next_line().await {
        match crate::eval::EvalLine::parse(&line) {
            Ok(crate::eval::EvalLine::Drv(d)) => paths.push(d),
            Ok(crate::eval::EvalLine::Error { message, attr }) => {
                failure = Some(JobError::Evaluation { attr, message })
            }
            Ok(crate::eval::EvalLine::Done(done)) => metric = serde_json::to_value(done).expect("serializes"),
            // Not one of ours: said, not taken for a derivation.
            Err(e) => {
                tracing::warn!(target: W, "the eval subprocess printed a line that is not an eval line ({e}): {line}")
            }
        }
    }
    let status = child.wait().await.map_err(JobError::Process)?;
    if let Some(f) = failure {
        return Err(f);
    }
    if !status.success() {
        return Err(JobError::EvalEnded(evalbench_host::describe_status(status)));
    }
    Ok((paths, metric))
}

/// Reads derivations and their input derivations, in waves.
async fn evaluate_derivations(ctx: &Ctx, job: &str, roots: Vec<String>) -> Result<usize, JobError> {
    // Two attributes may name one derivation (`default` is one of the packages).
    let mut seen: HashSet<String> = HashSet::new();
    let mut queue: VecDeque<String> = roots.into_iter().filter(|r| seen.insert(r.clone())).collect();
    let mut n = 0u32;
    let mut total = 0usize;
    while !queue.is_empty() {
        let wave: Vec<String> = (0..WAVE).map_while(|_| queue.pop_front()).collect();
        total += wave.len();
        let span = debug_span!(target: W, "wave", n, drvs = wave.len());
        let drvs: Vec<Drv> = async {
            let drvs: Vec<Drv> = {
                let _p = debug_span!(target: W, "parse_drv_wave", drvs = wave.len()).entered();
                let mut out = Vec::new();
                for path in &wave {
                    let text = std::fs::read(path).map_err(|source| JobError::Io { path: path.into(), source })?;
                    let d = drv::parse(path, &text).map_err(|source| JobError::Drv { path: path.clone(), source })?;
                    for input in &d.input_drvs {
                        if seen.insert(input.clone()) {
                            queue.push_back(input.clone());
                        }
                    }
                    out.push(d);
                }
                out
            };
            let id = ctx.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            ctx.pending.lock().await.insert(id, tx);
            let known: HashSet<String> = async {
                let _ = ctx.out.send(ToServer::Known { id, drvs: drvs.iter().map(|d| d.path.clone()).collect() });
                rx.await.unwrap_or_default().into_iter().collect()
            }
            .instrument(debug_span!(target: W, "query_known_derivations", drvs = drvs.len()))
            .await;
            Ok::<Vec<Drv>, JobError>(drvs.into_iter().filter(|d| !known.contains(&d.path)).collect())
        }
        .instrument(span.clone())
        .await?;
        let _w = span.enter();
        let _r = debug_span!(target: W, "report_eval_result", job_id = job, drvs = drvs.len()).entered();
        let _ = ctx.out.send(ToServer::EvalResult { job: job.to_string(), drvs });
        n += 1;
    }
    Ok(total)
}
