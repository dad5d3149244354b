//! `evalbench bench`: what it found, and the text a terminal shows.

use std::fmt::Write;

use evalbench_analyze::counters::CounterVerdict;
use evalbench_analyze::verdict::{Family, Kind, Spread, Verdict};
use serde::Serialize;

/// One command's runs and their spreads; `R` is a run as the runner measured it.
#[derive(Serialize)]
pub struct CommandResult<R> {
    pub command: String,
    pub runs: Vec<R>,
    pub wall_s: Spread,
    pub user_s: Spread,
    pub sys_s: Spread,
    pub peak_mib: Option<Spread>,
    pub failed_runs: usize,
    pub parallel: usize,
    /// Runs per second over the whole batch (with --jobs, all at once).
    pub throughput_per_s: f64,
    /// Each run's own wall time: median.
    pub latency_s: f64,
    pub cold: bool,
}

/// What `bench` found; `M` says where peak memory came from.
#[derive(Serialize)]
pub struct Report<R, M> {
    pub memory_source: M,
    pub commands: Vec<CommandResult<R>>,
    /// Each command against the first.
    pub comparisons: Vec<Comparison>,
    /// The families the verdicts were corrected in (Holm): wall times, peak memories.
    #[serde(serialize_with = "super::worded::families_field")]
    pub families: Vec<Family>,
    /// With --nix-stats: nix's counters of each command against the first's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CommandCounters>,
}

#[derive(Serialize)]
pub struct Comparison {
    /// The first command, the baseline.
    pub a: String,
    pub b: String,
    #[serde(serialize_with = "super::worded::verdict_field")]
    pub wall: Verdict,
    /// None when either side has no peak memory (--no-memory).
    #[serde(serialize_with = "super::worded::verdict_option")]
    pub peak_memory: Option<Verdict>,
}

#[derive(Serialize)]
pub struct CommandCounters {
    pub a: String,
    pub b: String,
    #[serde(serialize_with = "super::worded::counters_field")]
    pub counters: Vec<CounterVerdict>,
}

/// The text for a terminal; `cgroup_v1` adds the page-cache caveat to peak memory.
pub fn text<R, M: std::fmt::Debug>(r: &Report<R, M>, cgroup_v1: bool) -> String {
    let mut t = String::new();
    let w = &mut t;
    for c in &r.commands {
        let _ = writeln!(w, "{}{}", c.command, if c.cold { "  (cold: --prepare before every run)" } else { "" });
        let _ = writeln!(
            w,
            "  wall     median {:.4} s  min {:.4}  max {:.4}  MAD {:.4}  ({} runs)",
            c.wall_s.median, c.wall_s.min, c.wall_s.max, c.wall_s.mad, c.wall_s.n
        );
        let _ = writeln!(w, "  user     median {:.4} s   sys median {:.4} s", c.user_s.median, c.sys_s.median);
        if let Some(p) = &c.peak_mib {
            let caveat = if cgroup_v1 { ", cgroup v1: includes the page cache the tree caused" } else { "" };
            let _ = writeln!(
                w,
                "  memory   peak of the process tree: median {:.1} MiB, max {:.1} MiB ({:?}{caveat})",
                p.median, p.max, r.memory_source
            );
        }
        if c.parallel > 1 {
            let _ = writeln!(
                w,
                "  parallel {} at once: throughput {:.2} runs/s, latency {:.4} s per run (median)",
                c.parallel, c.throughput_per_s, c.latency_s
            );
        }
        if c.failed_runs > 0 {
            let _ = writeln!(w, "  FAILED   {} of {} runs exited non-zero", c.failed_runs, c.runs.len());
        }
    }
    for Comparison { a, b, wall, peak_memory } in &r.comparisons {
        let _ = writeln!(w, "{b}\n  against {a}: wall time {}", crate::words::verdict(wall));
        if let Some(m) = peak_memory {
            let _ = writeln!(w, "  peak memory {}", crate::words::verdict(m));
        }
    }
    for c in &r.counters {
        let _ = writeln!(w, "{}\n  against {}: nix's counters (exact counts unless said)", c.b, c.a);
        for v in c.counters.iter().filter(|v| v.kind != Kind::Same).take(10) {
            let _ = writeln!(w, "    {}", crate::words::counter(v));
        }
        let same = c.counters.iter().filter(|v| v.kind == Kind::Same).count();
        if same > 0 {
            let _ = writeln!(w, "    {same} counters the same");
        }
    }
    for f in &r.families {
        if let Some(p) = crate::words::power(f) {
            let _ = writeln!(w, "note: {p}");
        }
    }
    t
}
