//! The eval subprocess: a child of the worker that evaluates the flake with
//! the real `nix` and prints one JSON line per derivation on stdout.
//!
//! Like Gradient's eval worker, it keeps one long-lived evaluator per shard
//! for the whole job, so nix's start-up is paid once per shard, not once per
//! attribute. nix 2.8 has no C API, so the evaluator is one
//! `nix path-info --derivation --debug FLAKE#a FLAKE#b ...` process: it
//! evaluates its installables one after the other, each through nix's eval
//! cache (a warm pass is answered from it; a cold reset empties it), and its
//! `--debug` lines on stderr say where each attribute ends. See
//! [`Evaluator`] for how the `resolve` spans follow those lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tracing::{debug_span, field::Empty, Span};

/// How many evaluators (shards) the eval subprocess runs; the worker sets it
/// from `lab up --eval-workers`.
pub const ENV_EVAL_SHARDS: &str = "EVALBENCH_LAB_EVAL_SHARDS";

const E: &str = "gradient_eval";
const SYSTEM: &str = "x86_64-linux";
/// At most this many lines of nix's error are kept.
const ERROR_LINES: usize = 40;

fn die_with_parent(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe. nix dies with the eval subprocess.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn nix(args: &[&str]) -> Result<String, String> {
    let mut c = Command::new("nix");
    die_with_parent(&mut c);
    let out = c
        .args(args)
        .env("NIX_CONFIG", crate::state::NIX_CONFIG)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("nix: {e} (install the Debian package nix-bin)"))?;
    if !out.status.success() {
        return Err(nix_message(String::from_utf8_lossy(&out.stderr).lines()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// nix's own message, without warnings and blank lines.
fn nix_message<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let msg: Vec<&str> = lines.filter(|l| !l.trim().is_empty() && !l.starts_with("warning:")).collect();
    msg.join("\n")
}

/// Where nix keeps its caches for this process: `$XDG_CACHE_HOME`, else `~/.cache`.
pub fn cache_home() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_default()
}

/// nix's eval cache databases under a cache home: `nix/eval-cache-v*/*.sqlite`.
pub fn eval_cache_files(home: &Path) -> Vec<PathBuf> {
    let entries = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten();
    entries(&home.join("nix"))
        .filter(|d| d.file_name().to_string_lossy().starts_with("eval-cache-v"))
        .flat_map(|d| entries(&d.path()))
        .filter(|f| f.file_name().to_string_lossy().ends_with(".sqlite"))
        .map(|f| f.path())
        .collect()
}

/// Where evaluator `shard` of `shards` keeps nix's caches. nix 2.8 opens its
/// eval cache (one SQLite file per flake) with a transaction held for the
/// whole process and drops its writes when another process holds the write
/// lock, so two evaluators sharing one file lose each other's entries (seen:
/// 44 of 101 attributes cached). Each shard therefore has a cache of its own;
/// the plan is stable, so a warm pass finds every attribute where it left it.
fn shard_cache_home(shard: usize, shards: usize) -> Option<PathBuf> {
    (shards > 1).then(|| cache_home().join(format!("evaluator-{shard}-of-{shards}")))
}

/// Eval cache files before we start: evidence of a warm evaluation.
fn eval_cache_entries() -> usize {
    let base = cache_home();
    let shard_homes = std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("evaluator-"))
        .map(|e| e.path());
    std::iter::once(base.clone()).chain(shard_homes).map(|h| eval_cache_files(&h).len()).sum()
}

fn emit(v: serde_json::Value) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{v}");
    let _ = o.flush();
}

fn rusage_kb(who: i32) -> i64 {
    // SAFETY: getrusage writes into the struct we give it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut u);
        u.ru_maxrss
    }
}

/// An attribute name as nix's installable syntax wants it after `#`.
fn installable_attr(attr: &str) -> String {
    if !attr.is_empty() && attr.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '\'') {
        attr.to_string()
    } else {
        format!("\"{}\"", attr.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// Attributes dealt round-robin over `shards` evaluators, each shard keeping
/// the discovery order.
pub fn plan(attrs: &[String], shards: usize) -> Vec<Vec<String>> {
    let shards = shards.clamp(1, attrs.len().max(1));
    let mut plan = vec![Vec::new(); shards];
    for (i, a) in attrs.iter().enumerate() {
        plan[i % shards].push(a.clone());
    }
    plan
}

/// Why an evaluator failed: the attribute it was on (if any) and nix's message.
struct Failure {
    attr: Option<String>,
    message: String,
}

/// What every evaluator shares: the kill switch for the others once one fails.
struct Shared {
    failed: AtomicBool,
    pids: Mutex<Vec<i32>>,
}

impl Shared {
    fn fail(&self) {
        if !self.failed.swap(true, Ordering::SeqCst) {
            for &pid in self.pids.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                // SAFETY: kill(2) on a child we spawned and have not reaped:
                // an evaluator leaves this list before its thread reaps it.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// One long-lived `nix path-info --derivation --debug` over one shard.
///
/// How close the `resolve` spans are to nix's work: nix 2.8 evaluates the
/// installables in the order given and, for each, ends by reading its
/// `outputName` (`evaluating uncached attribute P.outputName` or `using cached
/// string attribute 'P.outputName'`). nix writes each log line with one
/// `write(2)` to unbuffered stderr, and we read the pipe on a thread of our
/// own, so a line reaches us microseconds after nix printed it (more only if
/// this thread is descheduled). The `resolve` span of attribute i opens on the
/// line that ends attribute i-1 and closes on the line that ends attribute i:
/// the spans are back to back, and what nix does between two attributes
/// (re-locking the flake for the next installable, a few milliseconds in 2.8)
/// is counted in the attribute it does it for. nix's start and the copy of
/// the flake into the store, before its first line, are `start_evaluator`;
/// after the last attribute nix queries and prints the paths, which only the
/// `evaluator` span holds.
struct Evaluator<'a> {
    shard: usize,
    shards: usize,
    attrs: &'a [String],
    flake: &'a str,
    parent: &'a Span,
    shared: &'a Shared,
}

impl Evaluator<'_> {
    fn run(&self) -> Result<(Vec<String>, i64), Failure> {
        let span =
            debug_span!(target: E, parent: self.parent, "evaluator", shard = self.shard, attrs = self.attrs.len(), pid = Empty, peak_rss_kb = Empty);
        let _in = span.enter();
        let starting = debug_span!(target: E, "start_evaluator", shard = self.shard);
        let mut c = Command::new("nix");
        die_with_parent(&mut c);
        c.args(["path-info", "--derivation", "--debug"])
            .args(self.attrs.iter().map(|a| format!("{}#{}", self.flake, installable_attr(a))))
            .env("NIX_CONFIG", crate::state::NIX_CONFIG)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(home) = shard_cache_home(self.shard, self.shards) {
            c.env("XDG_CACHE_HOME", home);
        }
        let fail = |attr: Option<String>, message: String| {
            self.shared.fail();
            Failure { attr, message }
        };
        if self.shared.failed.load(Ordering::SeqCst) {
            return Err(Failure { attr: None, message: "another evaluator failed first".into() });
        }
        let mut child = c.spawn().map_err(|e| fail(None, format!("nix: {e} (install the Debian package nix-bin)")))?;
        let pid = child.id() as i32;
        span.record("pid", pid);
        self.shared.pids.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
        if self.shared.failed.load(Ordering::SeqCst) {
            // Failed between our check and our registration: nobody else will kill it.
            // SAFETY: our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        // nix prints the paths only at the end; read them on their own thread
        // so a full stdout pipe never stalls nix while we read stderr.
        let mut stdout = child.stdout.take().expect("piped");
        let paths = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stdout.read_to_string(&mut s);
            s
        });
        let stderr = BufReader::new(child.stderr.take().expect("piped"));

        let mut starting = Some(starting);
        let mut i = 0usize;
        let mut marks = self.marks(0);
        let mut resolve: Option<Span> = None;
        let mut error: Vec<String> = Vec::new();
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if let Some(s) = starting.take() {
                drop(s);
                resolve = marks.as_ref().map(|m| self.resolve_span(&m.path));
            }
            if !error.is_empty() || line.starts_with("error:") {
                if error.len() < ERROR_LINES {
                    error.push(line);
                }
                continue;
            }
            let (Some(r), Some(m)) = (&resolve, &marks) else { continue };
            // nix quotes the path in its "using cached" lines.
            let end = line.strip_suffix('\'').unwrap_or(&line);
            if end.ends_with(&m.drv_path) {
                if line.starts_with("using cached string attribute") {
                    r.record("eval_cache", "hit");
                } else if line.starts_with("evaluating uncached attribute") {
                    r.record("eval_cache", "miss");
                }
            }
            if end.ends_with(&m.output_name) {
                i += 1;
                marks = self.marks(i);
                drop(resolve.take()); // closes attribute i-1 ...
                resolve = marks.as_ref().map(|m| self.resolve_span(&m.path)); // ... and opens i at once
            }
        }
        let on = marks.map(|m| m.path);
        drop(resolve);
        // Off the kill list before it is reaped: a reaped pid may be reused.
        self.shared.pids.lock().unwrap_or_else(|p| p.into_inner()).retain(|&p| p != pid);
        let (status, peak_kb) = wait4(pid);
        span.record("peak_rss_kb", peak_kb);
        let out = paths.join().unwrap_or_default();
        if self.shared.failed.load(Ordering::SeqCst) && error.is_empty() {
            return Err(Failure { attr: None, message: "stopped: another evaluator failed".into() });
        }
        if status != Some(0) || !error.is_empty() {
            let message = if error.is_empty() {
                format!("nix path-info ended with {}", describe(status))
            } else {
                nix_message(error.iter().map(String::as_str))
            };
            return Err(fail(on, message));
        }
        if i < self.attrs.len() {
            return Err(fail(on, "nix ended without evaluating this attribute (unexpected --debug output; is this nix 2.8?)".into()));
        }
        Ok((out.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect(), peak_kb))
    }

    fn resolve_span(&self, path: &str) -> Span {
        debug_span!(target: E, "resolve", attr = path, shard = self.shard, eval_cache = Empty)
    }

    /// Attribute i's path and the ends of nix's lines about it; None past the last.
    fn marks(&self, i: usize) -> Option<Marks> {
        let path = format!("packages.{SYSTEM}.{}", self.attrs.get(i)?);
        Some(Marks { drv_path: format!("{path}.drvPath"), output_name: format!("{path}.outputName"), path })
    }
}

/// What nix's `--debug` lines say of one attribute: reading its `drvPath`
/// (cached or not), and reading its `outputName`, which ends it.
struct Marks {
    path: String,
    drv_path: String,
    output_name: String,
}

fn describe(status: Option<i32>) -> String {
    match status {
        Some(code) => format!("exit status {code}"),
        None => "a signal".into(),
    }
}

/// Reaps `pid`: its exit code (None if a signal ended it) and its peak RSS in KiB.
fn wait4(pid: i32) -> (Option<i32>, i64) {
    // SAFETY: wait4 writes the status and the rusage we give it; pid is our child.
    unsafe {
        let mut st = 0;
        let mut u: libc::rusage = std::mem::zeroed();
        loop {
            let r = libc::wait4(pid, &mut st, 0, &mut u);
            if r == pid {
                break;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return (None, 0);
            }
        }
        let code = if libc::WIFEXITED(st) { Some(libc::WEXITSTATUS(st)) } else { None };
        (code, u.ru_maxrss)
    }
}

pub fn eval(flake: &Path, job: &str, shards: usize) -> Result<(), String> {
    let flake_s = flake.to_string_lossy().to_string();
    let open = debug_span!(target: E, "open", job, flake = flake_s.as_str());
    let _open = open.enter();
    if !flake.join("flake.nix").is_file() {
        let msg = format!("{}: no flake.nix", flake.display());
        emit(serde_json::json!({"error": msg}));
        return Err(msg);
    }
    let cached = eval_cache_entries();
    // The evaluators read the locked source from the store as a `path:` flake.
    // Given the git checkout instead, nix 2.8 re-locks it for every
    // installable with seven `git` processes each (0.03 s an attribute here),
    // so git starts would drown evaluation as nix starts did; Gradient locks
    // once. Same source, same eval cache key for the same content.
    let source = {
        let _l = debug_span!(target: E, "lock_flake", eval_cache_entries = cached, source = Empty).entered();
        let meta = nix(&["flake", "metadata", "--json", "--no-write-lock-file", &flake_s])
            .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).map_err(|e| format!("nix flake metadata: {e}")));
        match meta {
            Ok(m) => match m["path"].as_str() {
                Some(p) => {
                    _l.record("source", p);
                    format!("path:{p}")
                }
                None => flake_s.clone(),
            },
            Err(e) => {
                emit(serde_json::json!({"error": e}));
                return Err(e);
            }
        }
    };
    let attrs: Vec<String> = {
        let _d = debug_span!(target: E, "discover", attrs = Empty).entered();
        // Without the eval cache: nix 2.8's `eval` stores `packages.<system>` in
        // it anew, which orphans every attribute cached under it, so a warm
        // pass would evaluate everything again.
        let listed =
            nix(&["eval", "--option", "eval-cache", "false", "--json", &format!("{source}#packages.{SYSTEM}"), "--apply", "builtins.attrNames"]);
        match listed.and_then(|j| serde_json::from_str::<Vec<String>>(&j).map_err(|e| e.to_string())) {
            Ok(a) => {
                _d.record("attrs", a.len());
                a
            }
            Err(e) => {
                emit(serde_json::json!({"error": e, "attr": format!("packages.{SYSTEM}")}));
                return Err(e);
            }
        }
    };
    let plan: Vec<Vec<String>> = {
        let p = plan(&attrs, shards);
        let sizes: Vec<String> = p.iter().map(|s| s.len().to_string()).collect();
        let _p = debug_span!(target: E, "plan_shards", attrs = attrs.len(), shards = p.len(), sizes = sizes.join(",").as_str()).entered();
        p
    };
    let shared = Shared { failed: AtomicBool::new(false), pids: Mutex::new(Vec::new()) };
    let results: Vec<Result<(Vec<String>, i64), Failure>> = std::thread::scope(|s| {
        let handles: Vec<_> = plan
            .iter()
            .enumerate()
            .filter(|(_, attrs)| !attrs.is_empty())
            .map(|(shard, attrs)| {
                let ev = Evaluator { shard, shards: plan.len(), attrs, flake: &source, parent: &open, shared: &shared };
                s.spawn(move || ev.run())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure { attr: None, message: "an evaluator thread panicked".into() })))
            .collect()
    });
    // The failure that came first names the attribute; the others were stopped by it.
    if let Some(f) =
        results.iter().filter_map(|r| r.as_ref().err()).find(|f| f.attr.is_some()).or_else(|| results.iter().find_map(|r| r.as_ref().err()))
    {
        let attr = f.attr.clone().unwrap_or_else(|| format!("packages.{SYSTEM}"));
        emit(serde_json::json!({"attr": attr, "error": f.message}));
        return Err(format!("{attr}: {}", f.message));
    }
    let mut evaluator_peaks = Vec::new();
    for (paths, peak) in results.into_iter().flatten() {
        evaluator_peaks.push(peak);
        for p in paths {
            emit(serde_json::json!({"drv": p}));
        }
    }
    let peak = rusage_kb(libc::RUSAGE_SELF).max(evaluator_peaks.iter().copied().max().unwrap_or(0));
    emit(serde_json::json!({"done": {"attrs": attrs.len(), "eval_peak_rss_kb": peak, "evaluator_peak_rss_kb": evaluator_peaks,
                            "eval_cache_entries": cached, "shards": evaluator_peaks.len()}}));
    Ok(())
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

    #[test]
    fn odd_attribute_names_are_quoted() {
        assert_eq!(installable_attr("pkg-1_a'"), "pkg-1_a'");
        assert_eq!(installable_attr("a.b"), "\"a.b\"");
        assert_eq!(installable_attr("q\"x"), "\"q\\\"x\"");
    }
}
