//! File names of the bundle, in one place (docs/decisions.md, "The bundle").

pub const RUN_JSON: &str = "run.json";
/// Gradient's `evaluation_metric` rows of the pass's evaluation, beside run.json.
pub const EVALUATION_METRIC: &str = "evaluation_metric.json";
/// Where Gradient's benchmark leaves the worker's spans on the worker VM
/// (`<run>/worker/trace/`); it moves them into `trace/` when it copies them
/// out, so spans still there were not moved.
pub const WORKER_TRACE_DIR: &str = "worker/trace";
pub const TRACE_JSON: &str = "trace.json";
pub const TRACE_DIR: &str = "trace";
/// Warm-up runs (`run --warmup`): made before a clean pass's runs, kept
/// here as whole pass directories, and out of every statistic, since the
/// bundle's passes are the directories at its top only.
pub const WARMUP_DIR: &str = "warmup";
pub const SUMMARY_TXT: &str = "summary.txt";
pub const SUMMARY_JSON: &str = "summary.json";
pub const ARCHIVE: &str = "evalbench.tar.gz";
/// The HTML report (`report/index.html`), and what Hydra and Gradient read.
pub const REPORT_DIR: &str = "report";
pub const REPORT_PAGE: &str = "report/index.html";
pub const NIX_SUPPORT_DIR: &str = "nix-support";
pub const HYDRA_BUILD_PRODUCTS: &str = "nix-support/hydra-build-products";
pub const HYDRA_METRICS: &str = "nix-support/hydra-metrics";
pub const PROTO_PCAP: &str = "proto.pcap";
pub const PG_PCAP: &str = "pg.pcap";
pub const PG_STAT_STATEMENTS: &str = "pg/pg_stat_statements.json";
pub const WAIT_SAMPLES: &str = "pg/wait_samples.json";
pub const JOB_PHASES: &str = "pg/job_phases.json";
pub const AUTO_EXPLAIN: &str = "pg/auto_explain.log";
/// The server host's profile (instrumented passes), its flame graph and the
/// folded stacks the graph was drawn from.
pub const PERF_DATA: &str = "perf.data";
pub const FLAME_SVG: &str = "flame.svg";
pub const FLAME_FOLDED: &str = "flame.folded";
/// The same for the worker host, eval subprocesses included.
pub const WORKER_PERF_DATA: &str = "worker/perf.data";
pub const WORKER_FLAME_SVG: &str = "worker/flame.svg";
pub const WORKER_FLAME_FOLDED: &str = "worker/flame.folded";
/// `strace -ff` of the worker: one `worker.<pid>` file per thread.
pub const WORKER_STRACE_DIR: &str = "worker/strace";
pub const STRACE_FILE_PREFIX: &str = "worker.";
/// nix's own statistics (`NIX_SHOW_STATS`), one file per nix evaluation of
/// the lab's eval subprocess, as nix wrote them: `nix-stats.<shard>.json`
/// per evaluator (`nix-stats.<shard>.<n>.json` for the n-th successor of a
/// recycled one) and `nix-stats.discover.json` for the attribute listing.
pub const EVAL_DIR: &str = "eval";
pub const NIX_STATS_PREFIX: &str = "nix-stats.";
/// A recycled evaluator's statistics, when nix finished and wrote them before
/// the kill landed: kept, under this prefix, and never counted, because its
/// successor evaluates the same attributes again.
pub const RECYCLED_STATS_PREFIX: &str = "recycled.nix-stats.";
/// Instrumented passes: nix's function trace folded as it streamed, self
/// time per stack of call sites under the attribute (inferno's format, µs),
/// its summary (calls and self time per call site and per attribute), and
/// the flame graph drawn from it.
/// Instrumented passes: the flake's inputs by store path (`bundle::inputs`),
/// which name the positions of the profile and of the call counts.
pub const NIX_INPUTS_JSON: &str = "eval/nix-inputs.json";
pub const NIX_PROFILE_FOLDED: &str = "eval/nix-profile.folded";
pub const NIX_PROFILE_JSON: &str = "eval/nix-profile.json";
pub const NIX_FLAME_SVG: &str = "eval/nix-flame.svg";
/// Instrumented passes with Nix >= 2.30: nix's own sampled profile
/// (`--eval-profiler flamegraph`), its processes' files joined.
pub const NIX_EVAL_PROFILER_FOLDED: &str = "eval/nix-eval-profiler.folded";
/// A bundle path's last component: the name a file has inside its
/// directory (`eval/nix-profile.json` -> `nix-profile.json`), for the
/// writers that are handed that directory.
pub fn file_name(path: &'static str) -> &'static str {
    path.rsplit('/').next().unwrap_or(path)
}
/// The folded stacks beside a flame graph (`flame.svg` -> `flame.folded`).
pub fn folded_beside(svg: &std::path::Path) -> std::path::PathBuf {
    svg.with_extension("folded")
}

/// The four passes, in the order they run and are reported.
pub const PASSES: [&str; 4] = ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented"];
/// The counted passes (`run --counted`): a clean pass whose nix runs under
/// Valgrind, which counts the instructions it executes. Off by default.
pub const COUNTED_PASSES: [&str; 2] = ["cold-counted", "warm-counted"];
/// Every pass `run` knows, in the order they are reported.
pub const KNOWN_PASSES: [&str; 6] =
    ["cold-clean", "warm-clean", "cold-instrumented", "warm-instrumented", "cold-counted", "warm-counted"];

/// Passes to run, checked (`run`'s options and the harness say the same):
/// the first that is not a pass `run` knows, named with those it knows.
pub fn check_passes(passes: &[String]) -> Result<(), UnknownPass> {
    match passes.iter().find(|p| !KNOWN_PASSES.contains(&p.as_str())) {
        Some(p) => Err(UnknownPass { pass: p.clone() }),
        None => Ok(()),
    }
}

/// A pass `run` does not know.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown pass {pass:?}; passes are {}", KNOWN_PASSES.join(", "))]
pub struct UnknownPass {
    pub pass: String,
}

/// A counted pass's files in `eval/`: Valgrind's cachegrind output of each
/// nix process, `cachegrind.<who>.out`, where `who` is `lock` (the flake's
/// metadata), `discover` (the attribute names), or an evaluator's shard
/// (`0`, and `0.1` for the first successor of a recycled one). The
/// other processes Valgrind followed (a loader's wrapper script's helpers)
/// are kept beside it as `cachegrind.<who>.child-<pid>.out`, never added to
/// its count.
pub const CACHEGRIND_PREFIX: &str = "cachegrind.";
pub const CACHEGRIND_SUFFIX: &str = ".out";
pub const CACHEGRIND_CHILD: &str = ".child-";

/// What a pass measures, read from its name once: clean passes are the only
/// ones whose timings are summarized, since perf, strace and auto_explain
/// distort the instrumented ones (which log plans instead).
///
/// A counted pass's times are distorted too (Valgrind runs nix some 15 to
/// 30 times slower), and nothing reads them as times: what it measures is
/// the instructions nix executed, an exact count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassKind {
    Clean,
    Instrumented,
    Counted,
}

impl PassKind {
    /// `cold-clean`, `warm-clean.3`: clean; `cold-counted`: counted; any
    /// other pass is instrumented.
    pub fn of(pass: &str) -> PassKind {
        let base = base_name(pass);
        if base.ends_with("-clean") {
            PassKind::Clean
        } else if base.ends_with("-counted") {
            PassKind::Counted
        } else {
            PassKind::Instrumented
        }
    }
}

pub fn is_counted(pass: &str) -> bool {
    PassKind::of(pass) == PassKind::Counted
}

/// The clean pass a counted pass is counted for: `cold-counted.2` to
/// `cold-clean`, the pass of the same temperature.
pub fn clean_of_counted(pass: &str) -> String {
    base_name(pass).replace("-counted", "-clean")
}

pub fn is_clean(pass: &str) -> bool {
    PassKind::of(pass) == PassKind::Clean
}

pub fn is_cold(pass: &str) -> bool {
    base_name(pass).starts_with("cold-")
}

/// The clean pass of an instrumented pass's temperature: `cold-instrumented`
/// to `cold-clean`, where its statements were timed undistorted.
pub fn clean_of(pass: &str) -> String {
    base_name(pass).replace("-instrumented", "-clean")
}

/// `cold-clean.3` (a repeat) is a `cold-clean` pass.
pub fn base_name(pass: &str) -> &str {
    match pass.rsplit_once('.') {
        Some((base, n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => base,
        _ => pass,
    }
}

/// A run's number in its pass: `cold-clean.3` is 3, `cold-clean` (the
/// pass's directory) is run 1.
pub fn run_number(pass: &str) -> usize {
    let base = base_name(pass);
    pass.strip_prefix(base).and_then(|r| r.strip_prefix('.')).and_then(|r| r.parse().ok()).unwrap_or(1)
}

/// Runs grouped into their passes, the one grouping every command uses
/// (summary, page, whatif, compare, history): `cold-clean`, `cold-clean.2`,
/// ... are one pass. Passes in the order their first run comes, runs in
/// theirs; `name` gives an item's run name.
pub fn pass_groups<T>(items: impl IntoIterator<Item = T>, name: impl Fn(&T) -> &str) -> Vec<(String, Vec<T>)> {
    let mut groups: Vec<(String, Vec<T>)> = Vec::new();
    for item in items {
        let base = base_name(name(&item));
        match groups.iter_mut().find(|(b, _)| b == base) {
            Some((_, v)) => v.push(item),
            None => groups.push((base.to_string(), vec![item])),
        }
    }
    groups
}

/// The passes of `runs` (pass directory names) in the order first met,
/// each with its number of runs: `cold-clean`, `cold-clean.2`, ... is one.
pub fn runs_per_pass<'a>(runs: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, usize)> {
    pass_groups(runs, |r| r).into_iter().map(|(_, v)| (base_name(v[0]), v.len())).collect()
}

/// Sort key: the known passes in run order, then the rest by name.
pub fn order_key(pass: &str) -> (usize, String, usize, String) {
    let base = base_name(pass);
    let i = KNOWN_PASSES.iter().position(|p| *p == base).unwrap_or(KNOWN_PASSES.len());
    // Repeats in the order they ran: cold-clean.2 before cold-clean.10
    // (the drift check splits a pass's runs into earlier and later halves).
    (i, base.to_string(), run_number(pass), pass.to_string())
}

/// The process name of the server's span stream: the clock every other
/// stream is aligned on, and where the evaluation's status changes.
pub const SERVER: &str = "server";

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of a pass are one group wherever they come, passes in the order
    /// their first run comes; `cold-clean` is run 1, and a name whose tail
    /// is not a number is a pass of its own.
    #[test]
    fn runs_group_into_their_passes() {
        let runs =
            ["cold-clean", "cold-clean.2", "warm-clean", "cold-clean.10", "warm-clean.2", "my.pass", "cold-clean.x"];
        let g = pass_groups(runs, |r| r);
        let shape: Vec<(&str, Vec<&str>)> = g.iter().map(|(b, v)| (b.as_str(), v.clone())).collect();
        assert_eq!(
            shape,
            [
                ("cold-clean", vec!["cold-clean", "cold-clean.2", "cold-clean.10"]),
                ("warm-clean", vec!["warm-clean", "warm-clean.2"]),
                ("my.pass", vec!["my.pass"]),
                ("cold-clean.x", vec!["cold-clean.x"]),
            ]
        );
        assert_eq!(runs.map(run_number), [1, 2, 1, 10, 2, 1, 1]);
        assert_eq!(runs_per_pass(runs), [("cold-clean", 3), ("warm-clean", 2), ("my.pass", 1), ("cold-clean.x", 1)]);
    }
}
