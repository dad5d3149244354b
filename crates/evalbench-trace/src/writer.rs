//! The writer thread and the queue in front of it.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::json::{self, LineHead};
use crate::layer::Closed;

enum Msg {
    Span(Closed),
    Flush(SyncSender<()>),
    Shutdown,
}

/// The service's end of the queue.
pub(crate) struct Sink {
    tx: SyncSender<Msg>,
    dropped: Arc<AtomicU64>,
}

impl Sink {
    /// Never blocks: a full queue drops the span and counts it.
    pub(crate) fn send(&self, span: Closed) {
        match self.tx.try_send(Msg::Span(span)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Owns the writer thread. Dropping it writes what is queued, the dropped
/// count if any, and stops the thread.
pub struct TraceGuard {
    inner: Option<(SyncSender<Msg>, JoinHandle<()>, Arc<AtomicU64>)>,
    path: Option<std::path::PathBuf>,
}

impl TraceGuard {
    pub(crate) fn disabled() -> Self {
        TraceGuard { inner: None, path: None }
    }

    /// Waits until every span closed before this call is on disk.
    pub fn flush(&self) {
        if let Some((tx, _, _)) = &self.inner {
            let (ack_tx, ack_rx) = mpsc::sync_channel(1);
            if tx.send(Msg::Flush(ack_tx)).is_ok() {
                let _ = ack_rx.recv();
            }
        }
    }

    /// Spans dropped so far because the queue was full or the disk failed.
    pub fn dropped(&self) -> u64 {
        self.inner.as_ref().map_or(0, |(_, _, d)| d.load(Ordering::Relaxed))
    }

    /// The file this process writes, when it writes one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if let Some((tx, handle, _)) = self.inner.take() {
            let _ = tx.send(Msg::Shutdown);
            if handle.join().is_err() {
                // Its spans are lost: say so where someone will see it.
                eprintln!(
                    "evalbench-trace: the writer thread panicked; spans of this process may be missing from {:?}",
                    self.path
                );
            }
        }
    }
}

pub(crate) fn start(dir: &Path, process: &str, host: Option<&str>, capacity: usize) -> io::Result<(Sink, TraceGuard)> {
    std::fs::create_dir_all(dir)?;
    let pid = std::process::id();
    // Gradient's name for a span file (`server-11.jsonl`), so its own checks read ours.
    let path = dir.join(format!("{}-{pid}.jsonl", file_safe(process)));
    let file = OpenOptions::new().create(true).append(true).open(&path)?;
    let (tx, rx) = mpsc::sync_channel(capacity);
    let dropped = Arc::new(AtomicU64::new(0));
    let head = LineHead::new(pid, process, host);
    let thread_dropped = dropped.clone();
    let thread_path = path.clone();
    let handle = std::thread::Builder::new()
        .name("evalbench-trace".into())
        .spawn(move || run(rx, file, head, thread_dropped, &thread_path))?;
    let sink = Sink { tx: tx.clone(), dropped: dropped.clone() };
    Ok((sink, TraceGuard { inner: Some((tx, handle, dropped)), path: Some(path) }))
}

/// Process names become file names: keep them to a safe alphabet.
fn file_safe(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() {
        "process".into()
    } else {
        s
    }
}

struct Out {
    file: File,
    buf: Vec<u8>,
    failed: bool,
    written_dropped: u64,
}

impl Out {
    fn flush(&mut self, path: &Path, dropped: &AtomicU64) {
        if self.failed || self.buf.is_empty() {
            self.buf.clear();
            return;
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            // One warning; from here on every span counts as dropped.
            eprintln!("evalbench-trace: writing {} failed: {e}; further spans are dropped", path.display());
            self.failed = true;
            let lines = self.buf.iter().filter(|&&b| b == b'\n').count() as u64;
            dropped.fetch_add(lines, Ordering::Relaxed);
        }
        self.buf.clear();
    }

    fn note_dropped(&mut self, head: &LineHead, dropped: &AtomicU64) {
        let n = dropped.load(Ordering::Relaxed);
        if n > self.written_dropped && !self.failed {
            json::write_dropped(&mut self.buf, head, n);
            self.written_dropped = n;
        }
    }
}

const FLUSH_AT: usize = 256 * 1024;
/// The writer's nap when idle grows from IDLE_MIN to IDLE_MAX: a flush or the
/// shutdown waits at most IDLE_MAX.
const IDLE_MIN: std::time::Duration = std::time::Duration::from_micros(500);
const IDLE_MAX: std::time::Duration = std::time::Duration::from_millis(8);

fn run(rx: Receiver<Msg>, file: File, head: LineHead, dropped: Arc<AtomicU64>, path: &Path) {
    let mut out = Out { file, buf: Vec::with_capacity(FLUSH_AT * 2), failed: false, written_dropped: 0 };
    let mut nap = IDLE_MIN;
    loop {
        let msg = match rx.try_recv() {
            Ok(m) => {
                nap = IDLE_MIN;
                m
            }
            Err(mpsc::TryRecvError::Empty) => {
                // Idle: put what we have on disk, then nap instead of blocking
                // in recv(). A sender wakes a blocked receiver with a futex
                // call, and on a busy machine the woken writer takes the
                // sender's core: 50-70 us inside the instrumented code after
                // a span closes (seen between the lab's back-to-back resolve
                // spans). Polling never wakes anyone; the queue holds 64k
                // spans, far more than a nap's worth.
                out.flush(path, &dropped);
                std::thread::sleep(nap);
                nap = (nap * 2).min(IDLE_MAX);
                continue;
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        match msg {
            Msg::Span(s) => {
                if out.failed {
                    dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                json::write_span(&mut out.buf, &head, &s);
                if out.buf.len() >= FLUSH_AT {
                    out.flush(path, &dropped);
                }
            }
            Msg::Flush(ack) => {
                out.note_dropped(&head, &dropped);
                out.flush(path, &dropped);
                let _ = ack.send(());
            }
            Msg::Shutdown => break,
        }
    }
    // Whatever is still queued was closed before shutdown: write it too.
    while let Ok(msg) = rx.try_recv() {
        match msg {
            Msg::Span(s) => json::write_span(&mut out.buf, &head, &s),
            Msg::Flush(ack) => {
                let _ = ack.send(());
            }
            Msg::Shutdown => {}
        }
    }
    out.note_dropped(&head, &dropped);
    out.flush(path, &dropped);
}
