//! A worker's load while something ran, from `worker_sample` (taken every
//! few seconds): its CPU's mean and peak, the least memory it had free and
//! the most jobs it held. Where no sample falls inside a short phase, the
//! nearest within a minute stands for it, and says so.

use evalbench_diagnostic::WorkerSample;
use serde::Serialize;

/// A worker whose CPU averaged this much or more was busy.
pub const BUSY_CPU_PCT: f64 = 90.0;
/// A worker with less than this share of its memory free was short of memory (and likely swapping).
pub const SHORT_OF_MEMORY_PCT: f64 = 5.0;
/// How far from a window the nearest sample may be to stand for it, µs.
const NEAREST_US: i64 = 60_000_000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Load {
    pub samples: usize,
    /// No sample fell inside the window: the nearest (within a minute) stands for it.
    pub nearest: bool,
    pub cpu_mean_pct: Option<f64>,
    pub cpu_max_pct: Option<f64>,
    pub ram_free_min_mb: Option<i64>,
    pub ram_total_mb: Option<i64>,
    pub assigned_jobs_max: Option<i64>,
    pub busy: bool,
    pub short_of_memory: bool,
}

/// The load of `worker` from `from` to `to` (µs); None without a worker,
/// a window, or a sample near it. `samples` are in time order (as the
/// reader gives them): the window is found by bisection, not by a scan.
pub fn while_running(
    samples: &[WorkerSample],
    worker: Option<&str>,
    from: Option<i64>,
    to: Option<i64>,
) -> Option<Load> {
    let (worker, from) = (worker?, from?);
    let to = to.unwrap_or(from).max(from);
    let between = |a: i64, b: i64| {
        let (lo, hi) = (samples.partition_point(|s| s.at < a), samples.partition_point(|s| s.at <= b));
        samples[lo..hi.max(lo)].iter().filter(|s| s.worker_id.as_deref() == Some(worker))
    };
    let inside: Vec<&WorkerSample> = between(from, to).collect();
    let (chosen, nearest) = if inside.is_empty() {
        let distance =
            |s: &&WorkerSample| if s.at < from { from.saturating_sub(s.at) } else { s.at.saturating_sub(to) };
        let near = between(from.saturating_sub(NEAREST_US), to.saturating_add(NEAREST_US)).min_by_key(distance);
        (near.into_iter().collect::<Vec<_>>(), true)
    } else {
        (inside, false)
    };
    if chosen.is_empty() {
        return None;
    }
    let cpus: Vec<f64> = chosen.iter().filter_map(|s| s.cpu_usage_pct).collect();
    let cpu_mean = (!cpus.is_empty()).then(|| cpus.iter().sum::<f64>() / cpus.len() as f64);
    let ram_free_min = chosen.iter().filter_map(|s| s.ram_free_mb).min();
    let ram_total = chosen.iter().filter_map(|s| s.ram_total_mb).max();
    let short = matches!((ram_free_min, ram_total), (Some(f), Some(t)) if t > 0 &&
        (f as f64) < t as f64 * SHORT_OF_MEMORY_PCT / 100.0);
    Some(Load {
        samples: chosen.len(),
        nearest,
        cpu_mean_pct: cpu_mean,
        cpu_max_pct: cpus.iter().copied().reduce(f64::max),
        ram_free_min_mb: ram_free_min,
        ram_total_mb: ram_total,
        assigned_jobs_max: chosen.iter().filter_map(|s| s.assigned_jobs).max(),
        busy: cpu_mean.is_some_and(|c| c >= BUSY_CPU_PCT),
        short_of_memory: short,
    })
}
