//! The server: scheduler, job events, a graph writer behind a mailbox.

use std::io::{BufRead, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Instant;

use evalbench_bundle::contract::{BatchStep, Status};
use serde_json::{json, Value};
use tracing::debug_span;

use crate::proto::{self, Conn};

const SCHED: &str = "gradient_server::scheduler";
const JOBS: &str = "gradient_server::jobs";
const GRAPH: &str = "gradient_graph::writer";

/// The evaluation's new status, as a line the driver reads (`STATUS Completed`).
fn status(s: Status) {
    println!("STATUS {}", s.as_str());
    let _ = std::io::stdout().flush();
}

struct Batch {
    job: String,
    drvs: Vec<String>,
    done: mpsc::Sender<usize>,
}

/// The graph writer: batches from the mailbox, committed in one transaction.
fn graph_writer(rx: mpsc::Receiver<Batch>) {
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        let rows: usize = batches.iter().map(|b| b.drvs.len()).sum();
        let _flush = debug_span!(target: GRAPH, "flush", batches = batches.len(), rows).entered();
        {
            let _t = debug_span!(target: GRAPH, "transact_once", attempt = 1u32).entered();
            let _a = debug_span!(target: GRAPH, "apply_batch", rows).entered();
            let mut acc = 0u64;
            for b in &batches {
                for d in &b.drvs {
                    let _r = debug_span!(target: GRAPH, "record_one", drv = d.as_str()).entered();
                    acc = acc.wrapping_add(crate::tune::work("record_one", d.as_bytes(), 2));
                }
                let _adv = debug_span!(target: GRAPH, "advance_can_start", rows = b.drvs.len()).entered();
                // The steps and their spans as the contract has them: the lab's server opens the same.
                for step in BatchStep::ALL {
                    let _s = step.span().entered();
                    acc = acc.wrapping_add(crate::eval::work(step.name().as_bytes(), 1));
                }
            }
            for d in batches.iter().flat_map(|b| b.drvs.iter()) {
                let _c = debug_span!(target: GRAPH, "commit_one", drv = d.as_str()).entered();
                acc = acc.wrapping_add(d.len() as u64);
            }
            std::hint::black_box(acc);
        }
        let _after = debug_span!(target: GRAPH, "after_commit", batches = batches.len()).entered();
        for b in batches {
            let _ = b.done.send(b.drvs.len());
            let _ = &b.job;
        }
    }
}

enum Inbox {
    Msg { worker: usize, msg: Value, received: Instant },
    Gone,
}

pub fn serve(jobs: u32, drvs: u32, workers: u32, eval_id: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    println!("PORT {}", listener.local_addr()?.port());
    let _ = std::io::stdout().flush();
    let (in_tx, in_rx) = mpsc::channel::<Inbox>();
    let writers = accept_workers(&listener, workers, &in_tx)?;
    println!("READY");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;

    let (mb_tx, mb_rx) = mpsc::channel::<Batch>();
    let writer = std::thread::spawn(move || graph_writer(mb_rx));
    status(Status::Queued);
    let queue: Vec<(String, u32)> = {
        let _s = debug_span!(target: SCHED, "assign_queued_evals", evaluation = eval_id, jobs).entered();
        (0..jobs).rev().map(|k| (format!("{eval_id}-job{k}"), k)).collect()
    };
    let mut sv = Serving::new(writers, queue, drvs, mb_tx);
    {
        let _s = debug_span!(target: SCHED, "offer_jobs", jobs = sv.queue.len(), workers).entered();
        let offer: Vec<&String> = sv.queue.iter().map(|(j, _)| j).collect();
        for w in sv.writers.iter_mut() {
            proto::send(w, &json!({"offer": offer}))?;
        }
    }
    let mut live = workers;
    let started = Instant::now();
    while sv.done_jobs < jobs {
        let Ok(item) = in_rx.recv() else { break };
        let (worker, msg, received) = match item {
            Inbox::Msg { worker, msg, received } => (worker, msg, received),
            Inbox::Gone => {
                live -= 1;
                if live == 0 {
                    status(Status::Failed);
                    return Err(std::io::Error::other("every worker disconnected before the evaluation finished"));
                }
                continue;
            }
        };
        let kind = msg.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "scores" => {
                let _s = debug_span!(target: SCHED, "on_request_job_chunk", worker).entered();
                let _r = debug_span!(target: SCHED, "record_scores", count = msg["scores"].as_array().map_or(0, |a|
                    a.len()))
                .entered();
            }
            "request_job" => sv.request_job(worker)?,
            "known" => sv.known(worker, &msg)?,
            "eval_result" => sv.eval_result(&msg, received),
            "hello" => {}
            other => eprintln!("sample server: unknown message type {other:?}"),
        }
    }
    status(Status::Building);
    for w in sv.writers.iter_mut() {
        let _ = proto::send(w, &json!({"type": "bye"}));
    }
    // The connections stay open until the evaluation is Completed.
    let Serving { writers: _open, graph, derivations, .. } = sv;
    drop(graph);
    let _ = writer.join();
    let metric = json!({
        "jobs": jobs,
        "derivations": derivations,
        "workers": workers,
        "server_wall_ms": started.elapsed().as_millis() as u64,
    });
    println!("METRIC {metric}");
    status(Status::Completed);
    Ok(())
}

/// Each worker's connection, its messages read on a thread of its own into `inbox`.
fn accept_workers(
    listener: &TcpListener,
    workers: u32,
    inbox: &mpsc::Sender<Inbox>,
) -> std::io::Result<Vec<TcpStream>> {
    let mut writers: Vec<TcpStream> = Vec::new();
    for worker in 0..workers as usize {
        let (s, _) = listener.accept()?;
        let (mut r, w) = Conn::new(s)?.split();
        writers.push(w);
        let tx = inbox.clone();
        std::thread::spawn(move || loop {
            match proto::recv(&mut r) {
                Ok(Some(msg)) => {
                    if tx.send(Inbox::Msg { worker, msg, received: Instant::now() }).is_err() {
                        break;
                    }
                }
                _ => {
                    let _ = tx.send(Inbox::Gone);
                    break;
                }
            }
        });
    }
    Ok(writers)
}

/// The server's state while it serves an evaluation.
struct Serving {
    writers: Vec<TcpStream>,
    /// Jobs not yet claimed: (job, shard), the next one last.
    queue: Vec<(String, u32)>,
    drvs: u32,
    assigned: bool,
    seen_result: bool,
    known: std::collections::HashSet<String>,
    derivations: usize,
    done_jobs: u32,
    /// The graph writer's batches.
    graph: mpsc::Sender<Batch>,
}

impl Serving {
    fn new(writers: Vec<TcpStream>, queue: Vec<(String, u32)>, drvs: u32, graph: mpsc::Sender<Batch>) -> Serving {
        let known = std::collections::HashSet::new();
        Serving {
            writers,
            queue,
            drvs,
            assigned: false,
            seen_result: false,
            known,
            derivations: 0,
            done_jobs: 0,
            graph,
        }
    }

    /// A worker asks for a job: the next one assigned, or none.
    fn request_job(&mut self, worker: usize) -> std::io::Result<()> {
        let _s = debug_span!(target: SCHED, "on_request_job", worker).entered();
        let _r = debug_span!(target: SCHED, "request_job", worker).entered();
        let claimed = {
            let _c = debug_span!(target: SCHED, "claim_dispatch", queued = self.queue.len()).entered();
            self.queue.pop()
        };
        match claimed {
            Some((job, shard)) => {
                {
                    let _c = debug_span!(target: SCHED, "send_credentials", job_id = job.as_str()).entered();
                }
                if !self.assigned {
                    status(Status::EvaluatingFlake);
                    self.assigned = true;
                }
                // The send is the last thing inside assign_job: its end is the send time.
                let _a = debug_span!(target: SCHED, "assign_job", job_id = job.as_str(), worker).entered();
                let drvs = self.drvs;
                proto::send(
                    &mut self.writers[worker],
                    &json!({"type": "assign", "job": job, "shard": shard, "drvs": drvs}),
                )
            }
            None => proto::send(&mut self.writers[worker], &json!({"type": "no_job"})),
        }
    }

    /// A worker asks which of its derivations the server knows.
    fn known(&mut self, worker: usize, msg: &Value) -> std::io::Result<()> {
        let asked: Vec<String> = serde_json::from_value(msg["drvs"].clone()).unwrap_or_default();
        let _s = debug_span!(target: JOBS, "known_derivations", asked = asked.len(), known = tracing::field::Empty)
            .entered();
        let hits: Vec<&String> = asked.iter().filter(|d| self.known.contains(*d)).collect();
        _s.record("known", hits.len());
        proto::send(&mut self.writers[worker], &json!({"type": "known_reply", "drvs": hits}))
    }

    /// A batch of a job's derivations: the new ones recorded in the graph.
    fn eval_result(&mut self, msg: &Value, received: Instant) {
        let job = msg["job"].as_str().unwrap_or("").to_string();
        let wait = received.elapsed().as_micros() as u64;
        let _e =
            debug_span!(target: JOBS, "job_event", job_id = job.as_str(), kind = "eval_result", queue_wait_us = wait)
                .entered();
        if !self.seen_result {
            status(Status::EvaluatingDerivation);
            self.seen_result = true;
        }
        let batch: Vec<String> = serde_json::from_value(msg["drvs"].clone()).unwrap_or_default();
        let _h = debug_span!(target: JOBS, "handle_eval_result", job_id = job.as_str(), drvs = batch.len()).entered();
        let fresh: Vec<String> = {
            let _a = debug_span!(target: JOBS, "assess_cached", drvs = batch.len()).entered();
            batch.into_iter().filter(|d| self.known.insert(d.clone())).collect()
        };
        self.derivations += fresh.len();
        {
            let _r = debug_span!(target: GRAPH, "record", job_id = job.as_str(), rows = fresh.len()).entered();
            let (tx, rx) = mpsc::channel();
            let _ = self.graph.send(Batch { job: job.clone(), drvs: fresh, done: tx });
            let _ = rx.recv();
        }
        if msg["last"].as_bool().unwrap_or(false) {
            let _c = debug_span!(target: JOBS, "eval_stream_completed", job_id = job.as_str()).entered();
            self.done_jobs += 1;
        }
    }
}
