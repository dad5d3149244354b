//! Configuration, once, from code or from the environment.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing_subscriber::filter::Filtered;

use crate::clock::Clock;
use crate::layer::{SpanFilter, SpanLayer};
use crate::writer::{self, TraceGuard};

/// Directory the span files go to; unset means the layer records nothing.
pub const ENV_TRACE_DIR: &str = "EVALBENCH_TRACE_DIR";
/// The `process` written on every line (server, worker, eval, ...).
pub const ENV_PROCESS: &str = "EVALBENCH_PROCESS";
/// Target prefix of the spans to keep (default `gradient`).
pub const ENV_PREFIX: &str = "EVALBENCH_TRACE_PREFIX";
/// Capacity of the queue between the service and the writer thread.
pub const ENV_QUEUE: &str = "EVALBENCH_TRACE_QUEUE";
/// Optional host name written on every line; alignment groups processes by it.
pub const ENV_HOST: &str = "EVALBENCH_HOST";
/// Microseconds added to every timestamp: a test's injected clock skew.
pub const ENV_CLOCK_SKEW_US: &str = "EVALBENCH_CLOCK_SKEW_US";

const DEFAULT_QUEUE: usize = 64 * 1024;

/// Builds the span layer. Options left unset take their defaults.
#[derive(Debug, Clone)]
pub struct Builder {
    trace_dir: Option<PathBuf>,
    process: String,
    prefix: String,
    queue_capacity: usize,
    host: Option<String>,
    clock_skew_us: i64,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            trace_dir: None,
            process: default_process(),
            prefix: "gradient".to_string(),
            queue_capacity: DEFAULT_QUEUE,
            host: None,
            clock_skew_us: 0,
        }
    }
}

fn default_process() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "process".to_string())
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Defaults overridden by the `EVALBENCH_*` variables that are set.
    /// An unparsable number is reported once on stderr and ignored.
    pub fn from_env() -> Self {
        let mut b = Self::default();
        if let Some(dir) = std::env::var_os(ENV_TRACE_DIR).filter(|d| !d.is_empty()) {
            b.trace_dir = Some(PathBuf::from(dir));
        }
        if let Ok(p) = std::env::var(ENV_PROCESS) {
            if !p.is_empty() {
                b.process = p;
            }
        }
        if let Ok(p) = std::env::var(ENV_PREFIX) {
            b.prefix = p;
        }
        if let Ok(h) = std::env::var(ENV_HOST) {
            if !h.is_empty() {
                b.host = Some(h);
            }
        }
        if let Some(n) = env_number::<usize>(ENV_QUEUE) {
            b.queue_capacity = n.max(1);
        }
        if let Some(n) = env_number::<i64>(ENV_CLOCK_SKEW_US) {
            b.clock_skew_us = n;
        }
        b
    }

    pub fn trace_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.trace_dir = Some(dir.into());
        self
    }
    pub fn process(mut self, name: impl Into<String>) -> Self {
        self.process = name.into();
        self
    }
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
    pub fn queue_capacity(mut self, n: usize) -> Self {
        self.queue_capacity = n.max(1);
        self
    }
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }
    pub fn clock_skew_us(mut self, skew: i64) -> Self {
        self.clock_skew_us = skew;
        self
    }

    /// The layer, already wrapped in its own filter, and the guard that owns
    /// the writer thread. Without a trace directory, or when it cannot be
    /// written, the layer records nothing and the service goes on.
    pub fn build<S>(self) -> (Filtered<SpanLayer, SpanFilter, S>, TraceGuard)
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let filter = SpanFilter::new(self.prefix.clone());
        let clock = Clock::now(self.clock_skew_us);
        let (sink, guard) = match &self.trace_dir {
            None => (None, TraceGuard::disabled()),
            Some(dir) => match writer::start(dir, &self.process, self.host.as_deref(), self.queue_capacity) {
                Ok((sink, guard)) => (Some(sink), guard),
                Err(e) => {
                    eprintln!(
                        "evalbench-trace: cannot write spans to {}: {e}; this process records no spans",
                        dir.display()
                    );
                    (None, TraceGuard::disabled())
                }
            },
        };
        let layer = SpanLayer::new(sink.map(Arc::new), clock);
        (tracing_subscriber::Layer::with_filter(layer, filter), guard)
    }
}

fn env_number<T: std::str::FromStr>(var: &str) -> Option<T> {
    let v = std::env::var(var).ok()?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            eprintln!("evalbench-trace: {var}={v:?} is not a number; ignored");
            None
        }
    }
}

/// Unix microseconds now, from the system clock.
pub(crate) fn unix_us(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_micros() as i64,
        Err(e) => -(e.duration().as_micros() as i64),
    }
}
