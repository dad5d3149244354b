//! One evaluator: a single `nix eval` that evaluates every attribute of its
//! shard in one Nix evaluation, the flake's outputs opened once.
//!
//! nix 2.8 has no C API to keep an EvalState as Gradient does, and giving it
//! one installable per attribute (`nix path-info FLAKE#a FLAKE#b ...`) made
//! it open the flake and evaluate its outputs again for every installable:
//! 37-94 ms an attribute against well under 1 ms for the attribute itself.
//! So the evaluator is one `nix eval --json path:SOURCE#packages.<system>
//! --apply F`, where F picks this shard's attributes (every `shards`-th name
//! of `builtins.attrNames`, as [`super::plan`] deals them) and forces each
//! drvPath between two `builtins.trace` markers:
//!
//! ```text
//! trace: evalbench:opened:<attributes in packages.<system>>
//! trace: evalbench:begin:<j>          before attribute j of the shard is touched
//! trace: evalbench:end:<j>:<drvPath>  after its drvPath is forced (its .drv written)
//! ```
//!
//! How close the `resolve` spans are to nix's work: nix writes each trace
//! with one `write(2)` to unbuffered stderr, and we read the pipe on a
//! thread of our own, so a marker reaches us microseconds after nix printed
//! it (more only if this thread is descheduled). The first attribute's span
//! opens on `begin:0`; each span closes on its `end:j` and the next opens in
//! the statement after, so the spans are back to back and nix's step from
//! one list element to the next (forcing a thunk and printing `begin:j+1`,
//! microseconds) is counted in the next attribute. A span holds the
//! attribute's own evaluation: work it shares with attributes evaluated
//! before it (a dependency already forced) was counted where it was first
//! forced. nix's start, reading the flake and evaluating its outputs up to
//! the attribute names are `start_evaluator` (up to `opened`); after the last
//! attribute nix prints the JSON list and its statistics, which only the
//! `evaluator` span holds.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tracing::{debug_span, field::Empty, Span};

use evalbench_decode::nix_trace::Fold;

use super::cache::Entry;
use super::error::{EvalError, Failure};
use super::{markers, nix};
use super::{E, SYSTEM};

/// At most this many lines of nix's error are kept.
const ERROR_LINES: usize = 40;

/// How far behind nix the reader may be for an RSS it reads to be the
/// attribute's: 2 ms, a few attributes of the hello flake. Further behind,
/// nix is on a later attribute (or gone) and the RSS is left out.
const RSS_LAG_US: i64 = 2_000;

/// When a marker happened: nix's own time (the trace's last timestamp
/// before it, in profiled passes), else the moment the reader reached it.
#[derive(Clone, Copy)]
struct Stamp(Option<i64>);

impl Stamp {
    fn of(fold: Option<&Fold>) -> Stamp {
        Stamp(fold.filter(|f| f.first_ns.is_some()).map(|f| (f.last_ns / 1000) as i64))
    }
    /// Spans opened and closed in `f` carry this time.
    fn stamp<R>(self, f: impl FnOnce() -> R) -> R {
        match self.0 {
            Some(us) => evalbench_trace::at_wall_us(us, f),
            None => evalbench_trace::at_one_instant(f),
        }
    }
    /// The RSS now, when it is the marker's: the reader is within
    /// RSS_LAG_US of nix (always, without a trace, where the markers are
    /// all nix writes) and nix still runs.
    fn rss(self, rss_now: Option<nix::Rss>) -> Option<nix::Rss> {
        rss_now.filter(|_| self.0.is_none_or(|us| evalbench_host::now_us() - us <= RSS_LAG_US))
    }
}

/// What reading one nix process's stderr found.
#[derive(Default)]
struct Reading {
    /// nix's error, from its `error:` line on (at most ERROR_LINES).
    error: Vec<String>,
    /// `packages.<system>`'s attribute count when it is not discovery's.
    changed: Option<String>,
    /// Recycled past the RSS cap: the attribute the next evaluator starts at.
    recycled: Option<usize>,
    /// The attribute open when nix stopped.
    at: Option<String>,
}

impl Reading {
    /// A line that is no marker: a trace line, into the profile; nix's
    /// error, from its `error:` line on, kept. Whether it was one.
    fn took(&mut self, line: &markers::Line<'_>, text: &str, out: &mut Resolved) -> bool {
        if let (Some(f), markers::Line::Trace(t)) = (out.fold.as_mut(), line) {
            f.line(t);
            return true;
        }
        if !self.error.is_empty() || *line == markers::Line::Error {
            if self.error.len() < ERROR_LINES {
                self.error.push(text.to_string());
            }
            return true;
        }
        false
    }
}

/// What one shard resolved: (attribute, drvPath) in plan order, and the
/// evaluator's peak RSS in KiB (0 when answered from the cache).
pub(super) struct Resolved {
    pub drvs: Vec<(String, String)>,
    pub peak_kb: i64,
    /// nix's function trace folded, when profiled (instrumented passes).
    pub fold: Option<Fold>,
    /// Which of `drvs` this evaluation wrote to the store (indices): a
    /// flake's first evaluation writes every `.drv`, later ones find them
    /// there, and writing them was most of nix's time (5x at 5,000 packages).
    pub written: Vec<u32>,
}

/// What every evaluator shares: the kill switch for the others once one fails.
#[derive(Default)]
pub(super) struct Shared {
    pub failed: AtomicBool,
    pids: Mutex<Vec<i32>>,
}

impl Shared {
    /// On the kill list while it runs. One that started as another failed is
    /// killed at once: nobody else will.
    fn register(&self, pid: i32) {
        self.pids.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
        if self.failed.load(Ordering::SeqCst) {
            // SAFETY: our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    fn unregister(&self, pid: i32) {
        self.pids.lock().unwrap_or_else(|p| p.into_inner()).retain(|&p| p != pid);
    }

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

pub(super) struct Evaluator<'a> {
    pub shard: usize,
    pub shards: usize,
    /// This shard's attributes, in plan order.
    pub attrs: &'a [String],
    /// How many attributes `packages.<system>` has (the evaluator checks it).
    pub total: usize,
    /// The locked source, `path:/nix/store/...-source`.
    pub source: &'a str,
    pub parent: &'a Span,
    pub shared: &'a Shared,
    pub stats_file: &'a Path,
    /// Instrumented: nix counts calls (NIX_COUNT_CALLS) ...
    pub count_calls: bool,
    /// ... and traces them (--trace-function-calls), folded as they come.
    pub profile: bool,
    /// ... and, with Nix >= 2.30, asks nix for its own sampled profile.
    pub sampled: bool,
    /// The flake's inputs, which name the profile's positions.
    pub inputs: &'a evalbench_bundle::inputs::Inputs,
    /// Recycle an evaluator whose RSS is past this after an attribute.
    pub max_rss_kb: Option<i64>,
}

/// The `--apply` function: attribute j of shard k of n is name k + j*n,
/// from attribute `from` of the shard on.
/// An attribute as the profile and the spans name it.
fn attr_path(attr: &str) -> String {
    format!("packages.{SYSTEM}.{attr}")
}

/// A recycled evaluator is killed once an attribute's marker shows it over
/// the cap, but nix runs ahead of its reader: it may have finished, written
/// its statistics and exited before the kill landed. Its successor evaluates
/// the same attributes again, so the file is kept under a name the counters
/// do not read (`layout::RECYCLED_STATS_PREFIX`), and the span says so.
fn set_aside(span: &Span, stats_file: &Path) {
    use evalbench_bundle::layout::{NIX_STATS_PREFIX, RECYCLED_STATS_PREFIX};
    let Some(rest) = stats_file.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(NIX_STATS_PREFIX))
    else {
        return;
    };
    let aside = stats_file.with_file_name(format!("{RECYCLED_STATS_PREFIX}{rest}"));
    if std::fs::rename(stats_file, &aside).is_ok() {
        span.record("stats", "set aside: nix finished before the kill");
    }
}

fn apply(shard: usize, shards: usize, from: usize) -> String {
    format!(
        concat!(
            r#"ps: let
  names = builtins.attrNames ps;
  total = builtins.length names;
  count = (total - {shard} + {shards} - 1) / {shards};
  one = j: let name = builtins.elemAt names ({shard} + j * {shards}); in
    builtins.trace "evalbench:begin:${{toString j}}"
      (let d = ps.${{name}}.drvPath; in builtins.seq d (builtins.trace "evalbench:end:${{toString j}}:${{d}}" d));
in builtins.seq (builtins.trace "evalbench:opened:${{toString total}}" total) (builtins.genList (j: one "#,
            r#"({from} + j)) (count - {from}))"#
        ),
        from = from,
        shard = shard,
        shards = shards
    )
}

impl Evaluator<'_> {
    fn span(&self) -> Span {
        // A track of its own in trace.json, named for it (`evalbench_analyze::tracks`).
        let track = format!("evaluator {}", self.shard);
        debug_span!(target: E, parent: self.parent, "evaluator", shard = self.shard, track = track.as_str(), attrs =
            self.attrs.len(), pid = Empty,
            from = Empty, peak_rss_kb = Empty, end = Empty, nix_function_calls = Empty, nix_thunks = Empty,
                nix_gc_total_bytes = Empty, stats = Empty)
    }

    fn resolve_span(&self, attr: &str, cache: &str) -> Span {
        debug_span!(target: E, "resolve", attr = attr_path(attr).as_str(), shard = self.shard, eval_cache = cache,
            drv = Empty, rss_kb = Empty, rss_delta_kb = Empty)
    }

    /// The whole shard from the lab's cache, or None if any attribute misses
    /// (then the whole shard is evaluated: one evaluation either way).
    pub fn answer_from_cache(&self, entry: &Entry) -> Option<Resolved> {
        let drvs: Vec<(String, String)> =
            self.attrs.iter().map(|a| entry.hit(a).map(|d| (a.clone(), d.to_string()))).collect::<Option<_>>()?;
        let span = self.span();
        span.record("end", "cached");
        let _in = span.enter();
        for (a, d) in &drvs {
            self.resolve_span(a, "hit").record("drv", d.as_str());
        }
        Some(Resolved { drvs, peak_kb: 0, fold: None, written: Vec::new() })
    }

    /// The shard, in one nix evaluation, or in several when `max_rss_kb`
    /// recycles an evaluator: one that has grown past it after an attribute
    /// is ended, and a new one continues with the next attribute.
    pub fn run(&self) -> Result<Resolved, Failure> {
        let mut out = Resolved {
            drvs: Vec::with_capacity(self.attrs.len()),
            peak_kb: 0,
            fold: self.profile.then(|| {
                Fold::with_max_depth(evalbench_decode::nix_trace::PROFILE_DEPTH).with_inputs(self.inputs.clone())
            }),
            written: Vec::new(),
        };
        // From the shard's start: a recycled evaluator's successor finds the
        // files its predecessor wrote, and they count as written here.
        let since = nix::StoreTime::now();
        let mut from = 0;
        let mut segment = 0;
        loop {
            match self.segment(from, segment, since, &mut out)? {
                Some(next) => {
                    from = next;
                    segment += 1;
                }
                None => return Ok(out),
            }
        }
    }

    /// The nix command for one process from attribute `from`, and the file
    /// its statistics go to.
    fn command(&self, from: usize, segment: usize) -> (std::process::Command, std::path::PathBuf) {
        let mut c = nix::command_as(&Self::who(self.shard, segment));
        c.args(["eval", "--json", "--option", "eval-cache", "false"]);
        if self.profile {
            c.arg("--trace-function-calls");
        }
        // A recycled evaluator is killed and writes no statistics: each process has a file of its own.
        let stats_file = if segment == 0 {
            self.stats_file.to_path_buf()
        } else {
            self.stats_file.with_extension(format!("{segment}.json"))
        };
        if self.sampled {
            c.args(super::sampled::args(&super::sampled::part(&stats_file))).args([
                "--option",
                "eval-profiler-frequency",
                super::sampled::FREQUENCY,
            ]);
        }
        c.arg(format!("{}#packages.{SYSTEM}", self.source)).args(["--apply", &apply(self.shard, self.shards, from)]);
        nix::Stats { path: &stats_file, count_calls: self.count_calls }.apply(&mut c);
        (c, stats_file)
    }

    /// The process's name for its counts: its shard, and the segment after a recycling (`0`, `0.1`).
    fn who(shard: usize, segment: usize) -> String {
        if segment == 0 {
            shard.to_string()
        } else {
            format!("{shard}.{segment}")
        }
    }

    /// nix's stderr, read as the evaluator's settings need it.
    fn stderr_reader(&self, stderr: std::fs::File) -> BufReader<std::fs::File> {
        if self.profile {
            // Profiled, nix writes a million trace lines a second: a wide pipe and
            // large reads keep the reader (straced in those passes, every read a
            // stop) from making nix wait on a full pipe, which its clock would count.
            nix::widen_pipe(&stderr);
            return BufReader::with_capacity(1 << 20, stderr);
        }
        // Under a memory cap, nix may run only a few markers ahead of the
        // reader that decides to recycle it (`narrow_pipe`).
        if self.max_rss_kb.is_some() {
            nix::narrow_pipe(&stderr);
        }
        BufReader::new(stderr)
    }

    /// One nix process, from attribute `from` of the shard: Some(next) when
    /// it was recycled before the end, None when it evaluated the rest.
    fn segment(
        &self,
        from: usize,
        segment: usize,
        since: nix::StoreTime,
        out: &mut Resolved,
    ) -> Result<Option<usize>, Failure> {
        let span = self.span();
        span.record("from", from);
        let _in = span.enter();
        let starting = debug_span!(target: E, "start_evaluator", shard = self.shard);
        let (mut c, stats_file) = self.command(from, segment);
        let fail = |attr: Option<String>, error: EvalError| {
            self.shared.fail();
            span.record("end", "failed");
            Failure { attr, error }
        };
        if self.shared.failed.load(Ordering::SeqCst) {
            return Err(fail(None, EvalError::Stopped));
        }
        // Profiled, nix is started untraced: see `nix::spawn`.
        let child = nix::spawn(&mut c, self.profile).map_err(|e| fail(None, EvalError::Start(e)))?;
        let pid = child.pid;
        span.record("pid", pid);
        self.shared.register(pid);
        let printed = read_on_a_thread(child.stdout);
        let first = out.drvs.len();
        let stderr = self.stderr_reader(child.stderr);
        let read = self.read(stderr, pid, starting, since, out);
        // Off the kill list before it is reaped: a reaped pid may be reused.
        self.shared.unregister(pid);
        let reaped = nix::wait4(pid);
        if let Ok((_, peak_kb)) = reaped {
            span.record("peak_rss_kb", peak_kb);
            out.peak_kb = out.peak_kb.max(peak_kb);
        }
        let at = read.at.clone();
        let Ok(printed) = printed.join() else {
            return Err(fail(at, EvalError::ReaderPanicked));
        };
        if let Some(next) = read.recycled {
            set_aside(&span, &stats_file);
            span.record("end", "recycled");
            return Ok(Some(next));
        }
        self.record_stats(&span, &stats_file);
        if let Some(dir) = super::counted::dir() {
            super::counted::keep(dir, &Self::who(self.shard, segment), pid).map_err(|e| fail(at.clone(), e))?;
        }
        if self.shared.failed.load(Ordering::SeqCst) && read.error.is_empty() {
            span.record("end", "failed");
            return Err(EvalError::Stopped.into());
        }
        let ended = reaped.map_err(|source| fail(at.clone(), EvalError::Wait { pid, source }))?.0;
        if !read.error.is_empty() {
            return Err(fail(at, EvalError::Nix(nix::message(read.error.iter().map(String::as_str)))));
        }
        if !ended.success() {
            return Err(fail(at, EvalError::Ended(ended)));
        }
        if let Some(now) = read.changed {
            return Err(fail(None, EvalError::AttributesChanged { now, then: self.total }));
        }
        // The markers and nix's own output must agree: they are two readings of one evaluation.
        let listed: Vec<String> = serde_json::from_str(&printed)
            .map_err(|source| fail(at.clone(), EvalError::Output { what: "nix eval", source }))?;
        let mine = &out.drvs[first..];
        if listed.len() != self.attrs.len() - from || mine.iter().map(|(_, d)| d).ne(listed.iter()) {
            return Err(fail(
                at,
                EvalError::Disagree { printed: listed.len(), named: mine.len(), of: self.attrs.len() - from },
            ));
        }
        span.record("end", "done");
        Ok(None)
    }

    /// Attribute `j` opened: the profile's root, its span (the one open
    /// before it closed), and the RSS at its start.
    fn begin(
        &self,
        at: Stamp,
        j: usize,
        pid: i32,
        on: &mut Option<(Span, Option<nix::Rss>)>,
        out: &mut Resolved,
    ) -> (Span, Option<nix::Rss>) {
        if let Some(f) = out.fold.as_mut() {
            f.set_root(&attr_path(&self.attrs[j]));
        }
        let span = at.stamp(|| {
            drop(on.take());
            self.resolve_span(&self.attrs[j], "miss")
        });
        (span, at.rss(nix::rss_kb(pid)))
    }

    /// Attribute `j` resolved to `drv`: its span told the RSS (and how much
    /// the attribute added), the derivation kept, and whether this evaluation
    /// wrote it: one stat (about a microsecond, against 150 µs and more an
    /// attribute), on this thread while nix goes on.
    fn note_resolved(
        &self,
        span: &Span,
        (rss, rss0): (Option<nix::Rss>, Option<nix::Rss>),
        since: &nix::StoreTime,
        (j, drv): (usize, &str),
        out: &mut Resolved,
    ) {
        span.record("drv", drv);
        if let Some(m) = rss {
            span.record("rss_kb", m.resident_kb);
        }
        if let (Some(m), Some(m0)) = (rss, rss0) {
            span.record("rss_delta_kb", m.anon_kb - m0.anon_kb);
        }
        if since.wrote(drv) {
            out.written.push(out.drvs.len() as u32);
        }
        out.drvs.push((self.attrs[j].clone(), drv.to_string()));
    }

    /// Reads nix's stderr to its end: the markers open and close the
    /// attributes' spans, trace lines go into the fold, an error is kept.
    fn read(
        &self,
        mut stderr: BufReader<std::fs::File>,
        pid: i32,
        starting: Span,
        since: nix::StoreTime,
        out: &mut Resolved,
    ) -> Reading {
        let mut starting = Some(starting);
        let mut progress = markers::Progress::new(self.attrs.len(), self.total);
        let mut on: Option<(Span, Option<nix::Rss>)> = None; // the open attribute's span, RSS at its start
        let mut r = Reading::default();
        let mut buf = Vec::new();
        if let Some(f) = out.fold.as_mut() {
            f.set_root(&format!("(evaluator {}: opening the flake)", self.shard));
        }
        loop {
            buf.clear();
            match stderr.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim_end_matches('\n');
            let line = markers::line(text);
            if r.took(&line, text, out) {
                continue;
            }
            let markers::Line::Marker(m) = line else { continue };
            let at = Stamp::of(out.fold.as_ref());
            match progress.step(m) {
                markers::Step::Opened(changed) => {
                    at.stamp(|| drop(starting.take()));
                    r.changed = changed.map(String::from);
                }
                // Opened back to back (not `open`), the attribute is the
                // profile's root already, since its predecessor resolved.
                markers::Step::Begin { j, open } if open => {
                    on = Some(self.begin(at, j, pid, &mut on, out));
                }
                markers::Step::Begin { .. } => {}
                markers::Step::Resolved { j, drv, next } => {
                    let Some((span, rss0)) = on.take() else { continue };
                    // The cap is on the RSS nix has now; the span keeps only an RSS that is the attribute's.
                    let rss_now = nix::rss_kb(pid);
                    let rss = at.rss(rss_now);
                    self.note_resolved(&span, (rss, rss0), &since, (j, drv), out);
                    let over_cap = self.max_rss_kb.is_some_and(|m| rss_now.is_some_and(|r| r.resident_kb > m));
                    if let (Some(next), true) = (next, over_cap) {
                        // Over the cap with attributes left: this evaluator is done.
                        at.stamp(|| drop(span));
                        r.recycled = Some(next);
                        // SAFETY: our own unreaped child.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        break;
                    }
                    // Back to back: the next attribute opens at the instant this one
                    // closes, and the profile's calls from here on are its own too, so
                    // a span and its attribute's traced self time cover one stretch
                    // of nix's clock (the step between attributes, and any wait of
                    // nix's on a full stderr pipe in it, counted once, in the next).
                    if let (Some(f), Some(n)) = (out.fold.as_mut(), next) {
                        f.set_root(&attr_path(&self.attrs[n]));
                    }
                    on = at
                        .stamp(|| {
                            drop(span);
                            next.map(|n| self.resolve_span(&self.attrs[n], "miss"))
                        })
                        .map(|s| (s, rss));
                }
                markers::Step::Nothing => {}
            }
        }
        r.at = progress.on.filter(|_| on.is_some()).map(|j| attr_path(&self.attrs[j]));
        r
    }

    /// A few of nix's counters on the evaluator span, for the trace; the
    /// whole file stays in the bundle.
    fn record_stats(&self, span: &Span, stats_file: &Path) {
        let Ok(text) = std::fs::read(stats_file) else { return };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else { return };
        if let Some(n) = v["nrFunctionCalls"].as_u64() {
            span.record("nix_function_calls", n);
        }
        if let Some(n) = v["nrThunks"].as_u64() {
            span.record("nix_thunks", n);
        }
        if let Some(n) = v["gc"]["totalBytes"].as_u64() {
            span.record("nix_gc_total_bytes", n);
        }
    }
}

/// nix prints the JSON list only at the end; it is read on its own thread
/// so a full stdout pipe never stalls nix while stderr is read.
fn read_on_a_thread<R: Read + Send + 'static>(mut stdout: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    })
}
