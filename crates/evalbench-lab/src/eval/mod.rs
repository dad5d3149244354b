//! The eval subprocess: a child of the worker that evaluates the flake with
//! the real `nix` and prints one JSON line per derivation on stdout.
//!
//! Like Gradient's eval worker it locks the flake once, discovers the
//! attributes, deals them over `shards` evaluators and evaluates each shard
//! in one Nix evaluation ([`evaluator`]). A warm pass is answered from the
//! lab's own eval cache ([`cache`]). Every nix evaluation writes its own
//! statistics (`NIX_SHOW_STATS`): the bundle keeps them as exact counts of
//! the work done, next to the spans' times.

use std::path::{Path, PathBuf};

use evalbench_bundle::inputs::Inputs;
use evalbench_decode::nix_profile::NixProfile;
use tracing::{debug_span, field::Empty};

mod cache;
mod counted;
mod error;
mod evaluator;
mod line;
mod markers;
mod nix;
mod sampled;

pub use error::{Ended, EvalError, Failure};
pub use line::{Done, EvalLine};

pub use nix::{cache_home, eval_cache_files};

use evaluator::{Evaluator, Resolved, Shared};

/// Eval workers: how many evaluators the eval subprocess runs at once, each
/// on its shard of the attributes; the worker sets it from `lab up
/// --eval-workers` (one name for one idea: option, field and variable).
pub const ENV_EVAL_WORKERS: &str = "EVALBENCH_LAB_EVAL_WORKERS";
/// The nix the lab runs (a path, or a name on PATH; default `nix`): `lab up
/// --nix` and `run --nix` set it for the worker and its eval subprocess, and
/// a run's provenance records that nix's version.
pub const ENV_NIX: &str = "EVALBENCH_NIX";

/// The nix to run: `EVALBENCH_NIX`, else `nix` on PATH.
pub fn nix_program() -> std::ffi::OsString {
    std::env::var_os(ENV_NIX).filter(|v| !v.is_empty()).unwrap_or_else(|| "nix".into())
}

/// Where nix's statistics go, one `nix-stats.<shard>.json` per evaluator and
/// `nix-stats.discover.json` (set by the runner to `<pass>/eval`).
pub const ENV_NIX_STATS_DIR: &str = "EVALBENCH_LAB_NIX_STATS_DIR";
/// Set in instrumented passes: nix also counts calls (`NIX_COUNT_CALLS`).
/// Tracing them (`--trace-function-calls`, folded into `nix-profile.*`) is
/// [`ENV_NIX_TRACE`]'s, switched off apart with `run --no-nix-trace`.
pub const ENV_COUNT_CALLS: &str = "EVALBENCH_LAB_NIX_COUNT_CALLS";
/// An evaluator whose RSS is past this many bytes after an attribute is
/// ended, and a new one continues with the next attribute (recycling, as
/// Gradient's GRADIENT_MAX_EVAL_RSS and nix-eval-jobs' --max-memory-size).
pub const ENV_EVAL_MAX_RSS: &str = "EVALBENCH_LAB_EVAL_MAX_RSS";
/// Set in instrumented passes unless switched off (`run --no-nix-trace`):
/// nix traces its calls (`--trace-function-calls`), folded into `nix-profile.*`.
pub const ENV_NIX_TRACE: &str = "EVALBENCH_LAB_NIX_TRACE";
/// Set in counted passes (`run --counted`): every nix process runs under
/// Valgrind's cachegrind, which counts the instructions it executes
/// ([`counted`]); the files go beside nix's statistics.
pub const ENV_COUNT_INSTRUCTIONS: &str = "EVALBENCH_LAB_COUNT_INSTRUCTIONS";

const E: &str = "gradient_eval";
const SYSTEM: &str = "x86_64-linux";

/// How the eval subprocess runs.
#[derive(Debug, Clone, Default)]
pub struct EvalOpts {
    /// Evaluators at once (`--eval-workers`), one shard each.
    pub eval_workers: usize,
    /// Where nix's statistics files go; without it they are read and dropped.
    pub stats_dir: Option<PathBuf>,
    /// Instrumented: NIX_COUNT_CALLS.
    pub count_calls: bool,
    /// Instrumented: --trace-function-calls, folded into nix-profile.*.
    pub trace: bool,
    /// Recycle an evaluator past this RSS (bytes) after an attribute.
    pub max_rss: Option<u64>,
    /// Counted: nix under Valgrind, its instructions counted (needs `stats_dir`).
    pub count_instructions: bool,
}

fn rusage_kb(who: i32) -> i64 {
    // SAFETY: getrusage writes into the struct we give it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u.ru_maxrss
    }
}

/// Attributes dealt round-robin over `shards` evaluators, each shard keeping
/// the discovery order (the evaluator's `--apply` picks the same ones).
pub fn plan(attrs: &[String], shards: usize) -> Vec<Vec<String>> {
    let shards = shards.clamp(1, attrs.len().max(1));
    let mut plan = vec![Vec::new(); shards];
    for (i, a) in attrs.iter().enumerate() {
        plan[i % shards].push(a.clone());
    }
    plan
}

/// The statistics directory for this run: the configured one, or a private
/// temporary one removed when the run ends. The temporary one is made
/// afresh under a random name, the process's own (0700): a name of the pid
/// alone could be made beforehand by any local user, as a directory of
/// theirs or a link to one, and nix's statistics written through it.
struct StatsDir {
    path: PathBuf,
    /// Removed when dropped.
    temporary: Option<tempfile::TempDir>,
}

impl StatsDir {
    fn new(o: &EvalOpts) -> Result<StatsDir, EvalError> {
        match &o.stats_dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|source| EvalError::Io { path: d.clone(), source })?;
                Ok(StatsDir { path: d.clone(), temporary: None })
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("evalbench-nix-stats.")
                    .tempdir()
                    .map_err(|source| EvalError::Io { path: std::env::temp_dir(), source })?;
                Ok(StatsDir { path: t.path().to_path_buf(), temporary: Some(t) })
            }
        }
    }
    fn file(&self, who: &str) -> PathBuf {
        self.path.join(format!("nix-stats.{who}.json"))
    }
    fn temporary(&self) -> bool {
        self.temporary.is_some()
    }
}

/// The locked source: its store path (with the flake's directory inside
/// it, for a flake below a repository's root) and the cache key, its narHash.
fn lock(flake: &str) -> Result<(String, String, Option<String>), EvalError> {
    const WHAT: &str = "nix flake metadata";
    let mut c = nix::command_as("lock");
    c.args(["flake", "metadata", "--json", "--no-write-lock-file", flake]);
    let m: serde_json::Value =
        serde_json::from_str(&nix::output_as(c, "lock")?).map_err(|source| EvalError::Output { what: WHAT, source })?;
    let path = m["path"]
        .as_str()
        .ok_or(EvalError::Unexpected { what: WHAT, detail: "no store path (\"path\") in its JSON".into() })?
        .to_string();
    let hash = m["locked"]["narHash"].as_str();
    match m["locked"]["dir"].as_str().filter(|d| !d.is_empty()) {
        Some(dir) => Ok((path.clone(), format!("path:{path}/{dir}"), hash.map(|h| format!("{h}?dir={dir}")))),
        None => Ok((path.clone(), format!("path:{path}"), hash.map(String::from))),
    }
}

/// The flake's inputs by store path (`nix flake archive --json`) and
/// locked narHash (`nix flake metadata --json`), kept as
/// `nix-inputs.json` beside the statistics. Asked in instrumented passes
/// only: one more nix process is time a clean pass would count. None when
/// nix cannot tell (the profile then names files by their path in the input).
fn inputs(flake: &str, stats: &StatsDir) -> Option<Inputs> {
    let i = flake_inputs(flake).ok()?;
    let path = stats.path.join(evalbench_bundle::layout::file_name(evalbench_bundle::layout::NIX_INPUTS_JSON));
    if let Err(e) = evalbench_bundle::write_atomic(&path, i.to_json().as_bytes()) {
        tracing::warn!(target: E, "{e}");
    }
    Some(i)
}

/// A flake's inputs by store path, as the lab's nix (`EVALBENCH_NIX`, else
/// nix on PATH) archives them; `decode nix-trace --flake` asks the same.
pub fn flake_inputs(flake: &str) -> Result<Inputs, EvalError> {
    let mut c = nix::command();
    c.args(["flake", "archive", "--json", "--no-write-lock-file", flake]);
    let v: serde_json::Value = serde_json::from_str(&nix::output(c)?)
        .map_err(|source| EvalError::Output { what: "nix flake archive --json", source })?;
    // The locks' narHashes name positions that Nix 2.34 shows by locked
    // reference; without them, such positions keep nix's own text.
    let mut m = nix::command();
    m.args(["flake", "metadata", "--json", "--no-write-lock-file", flake]);
    let metadata = nix::output(m).ok().and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    Ok(match metadata {
        Some(md) => Inputs::from_archive(&v).with_locks(&md),
        None => Inputs::from_archive(&v),
    })
}

fn discover(source: &str, stats: &StatsDir, o: &EvalOpts) -> Result<Vec<String>, EvalError> {
    let mut c = nix::command_as("discover");
    c.args([
        "eval",
        "--json",
        "--option",
        "eval-cache",
        "false",
        &format!("{source}#packages.{SYSTEM}"),
        "--apply",
        "builtins.attrNames",
    ]);
    nix::Stats { path: &stats.file("discover"), count_calls: o.count_calls }.apply(&mut c);
    serde_json::from_str::<Vec<String>>(&nix::output_as(c, "discover")?)
        .map_err(|source| EvalError::Output { what: "nix eval (the attribute names)", source })
}

/// The evaluators' folds as one profile: `nix-profile.folded` (inferno's
/// format, self µs) and `nix-profile.json` ([`NixProfile`]: calls and self
/// time per call site, per attribute, and the traced time), each written whole.
fn write_profile(dir: &Path, resolved: &[Resolved]) -> Result<(), EvalError> {
    use evalbench_bundle::layout;
    let folds: Vec<&evalbench_decode::nix_trace::Fold> = resolved.iter().filter_map(|r| r.fold.as_ref()).collect();
    if folds.is_empty() {
        return Ok(());
    }
    let mut stacks: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for s in folds.iter().flat_map(|f| f.stacks()) {
        *stacks.entry(s.stack.join(";")).or_default() += s.self_us;
    }
    let folded: String = stacks.iter().filter(|(_, &us)| us > 0).map(|(k, us)| format!("{k} {us}\n")).collect();
    let put = |name: &'static str, bytes: &[u8]| {
        evalbench_bundle::write_atomic(&dir.join(layout::file_name(name)), bytes).map_err(EvalError::from)
    };
    put(layout::NIX_PROFILE_FOLDED, folded.as_bytes())?;
    put(layout::NIX_PROFILE_JSON, NixProfile::of(&folds).to_json().as_bytes())
}

impl StatsDir {
    /// As [`StatsDir::new`]; counting instructions, only a kept directory
    /// will do: the counts are what the pass is for.
    fn for_counts(o: &EvalOpts) -> Result<StatsDir, EvalError> {
        let stats = StatsDir::new(o)?;
        if o.count_instructions {
            if stats.temporary() {
                return Err(EvalError::Unexpected {
                    what: "counting instructions",
                    detail: "no statistics directory to write the counts to".into(),
                });
            }
            counted::count_into(&stats.path);
        }
        Ok(stats)
    }
}

/// The flake locked (the `lock_flake` span): the evaluators read the locked
/// source from the store as a `path:` flake: given the git checkout, nix 2.8
/// re-locks it with git processes; Gradient locks once. Same content, same
/// source, same cache key. The source, and its narHash.
fn locked(flake: &str, cached: usize) -> Result<(String, Option<String>), EvalError> {
    let _l = debug_span!(target: E, "lock_flake", eval_cache_entries = cached, source = Empty).entered();
    let (p, source, key) = lock(flake)?;
    _l.record("source", p.as_str());
    Ok((source, key))
}

/// The attributes to evaluate (the `discover` span): the cache entry's,
/// or nix's list.
fn discovered(
    entry: Option<&cache::Entry>,
    source: &str,
    stats: &StatsDir,
    o: &EvalOpts,
) -> Result<Vec<String>, EvalError> {
    let d =
        debug_span!(target: E, "discover", attrs = Empty, eval_cache = if entry.is_some() { "hit" } else { "miss" })
            .entered();
    let listed = match entry {
        Some(e) => Ok(e.attrs.clone()),
        None => discover(source, stats, o),
    };
    if let Ok(a) = &listed {
        d.record("attrs", a.len());
    }
    listed
}

/// The attributes cut into the evaluators' shards (the `plan_shards` span).
fn planned(attrs: &[String], eval_workers: usize) -> Vec<Vec<String>> {
    let p = plan(attrs, eval_workers);
    let sizes: Vec<String> = p.iter().map(|s| s.len().to_string()).collect();
    let _p = debug_span!(target: E, "plan_shards", attrs = attrs.len(), shards = p.len(), sizes =
        sizes.join(",").as_str())
    .entered();
    p
}

/// What an evaluation keeps once it succeeded: its cache entry, nix's profiles.
struct Kept<'a> {
    home: &'a Path,
    nar_hash: Option<&'a str>,
    attrs: &'a [String],
    stats: &'a Path,
}

impl Kept<'_> {
    /// The cache entry (when `store`), the traced and the sampled profile;
    /// each that cannot be written is warned of, and leaves this evaluation right.
    fn keep(&self, resolved: &[Resolved], store: bool, traced: bool, sampled: bool) {
        if let (Some(h), true) = (self.nar_hash, store) {
            let e = cache::Entry {
                nar_hash: h.to_string(),
                attrs: self.attrs.to_vec(),
                drvs: resolved.iter().flat_map(|r| r.drvs.iter().cloned()).collect(),
            };
            // A cache that cannot be written makes the next pass cold, not this one wrong.
            if let Err(err) = cache::store(self.home, &e) {
                tracing::warn!(target: E, "eval cache not written: {err}");
            }
        }
        if traced {
            if let Err(e) = write_profile(self.stats, resolved) {
                tracing::warn!(target: E, "nix's profile not written: {e}");
            }
        }
        if sampled {
            if let Err(e) = sampled::join(self.stats) {
                tracing::warn!(target: E, "nix's own sampled profile not written: {e}");
            }
        }
    }
}

/// Every shard's result, or the failure that came first: it names the
/// attribute; the others were stopped by it.
fn all_resolved(results: Vec<Result<Resolved, Failure>>) -> Result<Vec<Resolved>, Failure> {
    let (resolved, mut failures): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    let resolved: Vec<Resolved> = resolved.into_iter().flatten().collect();
    failures.sort_by_key(|f| f.as_ref().err().map(|f| (f.attr.is_none(), matches!(f.error, EvalError::Stopped))));
    if let Some(Err(mut f)) = failures.into_iter().next() {
        f.attr.get_or_insert_with(|| format!("packages.{SYSTEM}"));
        return Err(f);
    }
    Ok(resolved)
}

/// The evaluation's last line: its attributes, peaks, cache, evaluators,
/// the derivations it wrote and nix's counts.
fn done(resolved: &[Resolved], evaluator_peaks: Vec<i64>, attrs: usize, cached: usize, stats: &Path) {
    let peak = rusage_kb(libc::RUSAGE_SELF).max(evaluator_peaks.iter().copied().max().unwrap_or(0));
    let eval_workers = evaluator_peaks.len();
    EvalLine::Done(Done {
        attrs,
        eval_peak_rss_kb: peak,
        evaluator_peak_rss_kb: evaluator_peaks,
        eval_cache_entries: cached,
        eval_workers,
        // Distinct: an alias (`default`) names a drv another attribute has.
        drvs_written: resolved
            .iter()
            .flat_map(|r| r.written.iter().map(|&i| r.drvs[i as usize].1.as_str()))
            .collect::<std::collections::HashSet<_>>()
            .len(),
        counts: counts(stats),
    })
    .emit();
}

/// Evaluates the flake, telling the worker each derivation and how it
/// ended (`EvalLine`); a failure is also returned, with its cause.
pub fn eval(flake: &Path, job: &str, o: &EvalOpts) -> Result<(), Failure> {
    let flake_s = flake.to_string_lossy().to_string();
    let open = debug_span!(target: E, "open", job_id = job, flake = flake_s.as_str());
    let _open = open.enter();
    let fail = |f: Failure| {
        EvalLine::Error { message: f.error.to_string(), attr: f.attr.clone() }.emit();
        Err(f)
    };
    if !flake.join("flake.nix").is_file() {
        return fail(EvalError::NoFlake(flake.to_path_buf()).into());
    }
    let home = cache_home();
    let cached = cache::entries(&home);
    let stats = match StatsDir::for_counts(o) {
        Ok(s) => s,
        Err(e) => return fail(e.into()),
    };
    // The evaluators read the locked source from the store as a `path:` flake:
    // given the git checkout, nix 2.8 re-locks it with git processes; Gradient
    // locks once. Same content, same source, same cache key.
    let (source, nar_hash) = match locked(&flake_s, cached) {
        Ok(l) => l,
        Err(e) => return fail(e.into()),
    };
    let entry = nar_hash.as_deref().and_then(|h| cache::load(&home, h));
    let inputs = (o.trace || o.count_calls).then(|| inputs(&flake_s, &stats)).flatten().unwrap_or_default();
    // Only where it is kept: a temporary statistics directory is dropped.
    let sampled = o.trace && !stats.temporary() && sampled::supported();
    let attrs = match discovered(entry.as_ref(), &source, &stats, o) {
        Ok(a) => a,
        Err(error) => return fail(Failure { attr: Some(format!("packages.{SYSTEM}")), error }),
    };
    let plan = planned(&attrs, o.eval_workers);
    let shared = Shared::default();
    let files: Vec<PathBuf> = (0..plan.len()).map(|k| stats.file(&k.to_string())).collect();
    let results: Vec<Result<Resolved, Failure>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .iter()
            .enumerate()
            .filter(|(_, attrs)| !attrs.is_empty())
            .map(|(shard, shard_attrs)| {
                let ev = Evaluator {
                    shard,
                    shards: plan.len(),
                    attrs: shard_attrs,
                    total: attrs.len(),
                    source: &source,
                    parent: &open,
                    shared: &shared,
                    stats_file: &files[shard],
                    count_calls: o.count_calls,
                    profile: o.trace,
                    sampled,
                    inputs: &inputs,
                    max_rss_kb: o.max_rss.map(|b| (b / 1024) as i64),
                };
                let entry = entry.as_ref();
                s.spawn(move || match entry.and_then(|e| ev.answer_from_cache(e)) {
                    Some(r) => Ok(r),
                    None => ev.run(),
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(EvalError::EvaluatorPanicked.into()))).collect()
    });
    let resolved = match all_resolved(results) {
        Ok(r) => r,
        Err(f) => return fail(f),
    };
    let evaluator_peaks: Vec<i64> = resolved.iter().map(|r| r.peak_kb).collect();
    let kept = Kept { home: &home, nar_hash: nar_hash.as_deref(), attrs: &attrs, stats: &stats.path };
    kept.keep(&resolved, evaluator_peaks.iter().any(|&p| p > 0) || entry.is_none(), o.trace, sampled);
    for r in &resolved {
        for (_, d) in &r.drvs {
            EvalLine::Drv(d.clone()).emit();
        }
    }
    done(&resolved, evaluator_peaks, attrs.len(), cached, &stats.path);
    Ok(())
}

/// nix's counts of this evaluation under Gradient's column names: every
/// `nix-stats.*.json` nix wrote here (one per evaluator, and discovery's),
/// summed as the bundle's reader sums them. A file nix did not finish is
/// left out, and said.
fn counts(dir: &Path) -> std::collections::BTreeMap<String, i64> {
    let mut sum = evalbench_bundle::nix_stats::Counters::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("nix-stats.") && name.ends_with(".json")) {
            continue;
        }
        match std::fs::read(e.path()).ok().as_deref().and_then(evalbench_bundle::nix_stats::counters_of) {
            Some(c) => c.into_iter().for_each(|(k, v)| *sum.entry(k).or_default() += v),
            None => {
                tracing::warn!(target: E, "{}: not nix's statistics; its counts are left out of the evaluation's \
                    metric", e.path().display())
            }
        }
    }
    evalbench_bundle::contract::EVALUATION_METRIC_COUNTS
        .iter()
        .filter_map(|(column, counter)| sum.get(*counter).map(|v| (column.to_string(), v.round() as i64)))
        .collect()
}

/// The flake as nix would take it from a user: `git+file:` for a directory
/// in a git checkout (`?dir=` for one below the top), `path:` otherwise. A
/// `path:` hash covers `.git` and untracked files, so two clones of one
/// commit hashed differently; `git+file:` hashes the tracked content only
/// (with a dirty tree, its tracked files as they are).
pub fn flake_ref(flake: &Path) -> String {
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git").arg("-C").arg(flake).args(args).output().ok()?;
        o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // A flake.nix git does not track is no git flake to nix (it refuses it): a
    // directory that merely lies inside some checkout stays a `path:`.
    let tracked = git(&["ls-files", "--error-unmatch", "--", "flake.nix"]).is_some();
    let Some(top) = git(&["rev-parse", "--show-toplevel"]).filter(|t| !t.is_empty() && tracked) else {
        return format!("path:{}", flake.display());
    };
    let rel = git(&["rev-parse", "--show-prefix"]).unwrap_or_default();
    let rel = rel.trim_end_matches('/');
    if rel.is_empty() {
        format!("git+file://{top}")
    } else {
        format!("git+file://{top}?dir={rel}")
    }
}

/// What the lab evaluates, for a bundle's provenance: the flake's narHash as
/// `nix flake metadata` gives it for the flake as given ([`flake_ref`]: the
/// same for every clone of one commit) and `nix --version`. Either is None
/// when nix cannot tell it.
pub fn describe(flake: &Path, nix_path: Option<&Path>) -> (Option<String>, Option<String>) {
    let command = || {
        let mut c = nix::command();
        if let Some(p) = nix_path {
            c = nix::command_of(p.as_os_str());
        }
        c
    };
    let mut c = command();
    c.args(["flake", "metadata", "--json", "--no-write-lock-file", &flake_ref(flake)]);
    let nar_hash = nix::output(c)
        .ok()
        .and_then(|o| serde_json::from_str::<serde_json::Value>(&o).ok())
        .and_then(|m| m["locked"]["narHash"].as_str().map(String::from));
    let mut c = command();
    c.arg("--version");
    (nar_hash, nix::output(c).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_deals_round_robin_and_keeps_order() {
        let attrs: Vec<String> = (0..7).map(|i| format!("a{i}")).collect();
        let p = plan(&attrs, 3);
        assert_eq!(p, vec![vec!["a0", "a3", "a6"], vec!["a1", "a4"], vec!["a2", "a5"]]);
        assert_eq!(plan(&attrs, 0).len(), 1);
        assert_eq!(plan(&attrs[..2], 5).len(), 2);
    }
}
