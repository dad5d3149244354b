//! The critical path of a pass: from the evaluate request to the moment
//! the evaluation left EvaluatingDerivation, the chain of span time and
//! waits that the end waited on, across server, worker and evaluator on
//! the aligned clocks. Every instant of the evaluated time belongs to one
//! segment, so the path's steps add up to the evaluated seconds. `whatif`
//! shortens some spans' own time in the same graph and finds the path
//! again (docs/decisions.md, "The critical path").

mod database;
mod error;
pub mod graph;
mod nested;
mod nodes;
mod order;
mod plan;
mod prepare;
mod segment;
pub mod shorten;
mod walk;
pub mod whatif;

pub use database::POSTGRES;
pub use error::PathError;
pub use segment::{Label, Segment};
pub use shorten::Shorten;

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

pub use graph::{Graph, Kind};

use std::path::Path;

use evalbench_bundle::{RunInfo, Stream};

/// What the path reads of a pass besides its spans: run.json (the
/// evaluated window, pg.pcap's port) and the pass's directory (pg.pcap).
#[derive(Debug, Clone, Copy)]
pub struct Pass<'a> {
    pub run: Option<&'a RunInfo>,
    pub dir: &'a Path,
}

/// The pass's clocks, put on the server's by the alignment (analyze's
/// `Alignment`): what the graph needs of them.
pub trait Clocks {
    /// What to add to a stream's times to put them on the server's clock.
    fn offset_for(&self, st: &Stream) -> i64;
    /// How far an edge across hosts may be off: the widest host's bound.
    fn bound_us(&self) -> Option<i64>;
}

/// Every stream on the server's clock (one host; tests).
pub struct SameClock;

impl Clocks for SameClock {
    fn offset_for(&self, _: &Stream) -> i64 {
        0
    }
    fn bound_us(&self) -> Option<i64> {
        None
    }
}

/// One step of the path: a span name of one process, or a kind of wait.
/// Read back too: the history keeps each run's largest steps.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct PathStep {
    pub process: Option<String>,
    pub name: String,
    /// Time on the path, and its share of the evaluated time.
    pub on_path_us: i64,
    pub share: f64,
    /// The spans' own time (less their children's) in the pass, and how
    /// much of it was not on the path; None for waits.
    pub own_us: Option<i64>,
    pub off_path_us: Option<i64>,
    /// Stretches of the path it had.
    pub segments: usize,
}

/// A step of the path as a key: its process (None for a wait) and name.
/// Steps of several runs are matched by it; [`PathStep::label`] is how it
/// is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepId<'a> {
    pub process: Option<&'a str>,
    pub name: &'a str,
}

impl PathStep {
    pub fn id(&self) -> StepId<'_> {
        StepId { process: self.process.as_deref(), name: &self.name }
    }

    /// `process name`, or `wait: what`.
    pub fn label(&self) -> String {
        match &self.process {
            Some(p) => format!("{p} {}", self.name),
            None => format!("wait: {}", self.name),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CriticalPath {
    /// The evaluate request and the end of EvaluatingDerivation, server clock.
    pub from_us: i64,
    pub to_us: i64,
    /// The path's segments added up (= to_us - from_us).
    pub total_us: i64,
    /// The alignment's bound: how far a cross-host edge may be off.
    pub bound_us: Option<i64>,
    pub steps: Vec<PathStep>,
    pub segments: Vec<Segment>,
    /// What the path could not use (an unreadable pg.pcap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Time on the path per process (waits as one), largest first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ByProcess {
    /// The process, or None for the waits between spans.
    pub process: Option<String>,
    pub on_path_us: i64,
    pub share: f64,
}

impl CriticalPath {
    pub fn by_process(&self) -> Vec<ByProcess> {
        by_process(&self.steps, self.to_us.saturating_sub(self.from_us))
    }
}

/// The steps' time on the path summed per process.
pub fn by_process(steps: &[PathStep], evaluated_us: i64) -> Vec<ByProcess> {
    let mut m: std::collections::BTreeMap<Option<String>, i64> = Default::default();
    for s in steps {
        let e = m.entry(s.process.clone()).or_default();
        *e = e.saturating_add(s.on_path_us);
    }
    let mut v: Vec<ByProcess> = m
        .into_iter()
        .map(|(process, on)| ByProcess {
            process,
            on_path_us: on,
            share: evalbench_bundle::num::round_to(
                if evaluated_us > 0 { on as f64 / evaluated_us as f64 } else { 0.0 },
                6,
            ),
        })
        .collect();
    v.sort_by(|a, b| b.on_path_us.cmp(&a.on_path_us).then_with(|| a.process.cmp(&b.process)));
    v
}

/// The same path from spans the caller keeps: the cross-check of the
/// graph [`critical_path`] builds while giving the spans up (tests/run.rs
/// holds both to one real pass). Not for use: nothing else needs the
/// spans and the graph side by side.
#[doc(hidden)]
pub fn critical_path_held(
    streams: &[Stream],
    pass: Pass<'_>,
    align: &dyn Clocks,
) -> Result<(Graph, CriticalPath), PathError> {
    graph::fits(streams.iter().map(|st| st.spans.len()).sum())?;
    let w = evaluated(pass.run, streams, align)?;
    let g = graph::build(streams, align, w.t0, w.t1);
    measured(g, w, align, pass)
}

/// A pass's critical path, or why there is none. The spans are given up
/// to it: they are dropped as soon as the graph has what it needs of them,
/// so the walk does not hold them too (at 4.5M spans, 500 MB less at the
/// peak).
pub fn critical_path(
    streams: Vec<Stream>,
    pass: Pass<'_>,
    align: &dyn Clocks,
) -> Result<(Graph, CriticalPath), PathError> {
    graph_owned(streams, pass, align).and_then(|(g, w)| measured(g, w, align, pass))
}

/// The graph of the evaluated window, the pass's streams given up to it
/// (dropped even when the window is unknown); with the window's start.
fn graph_owned(streams: Vec<Stream>, pass: Pass<'_>, align: &dyn Clocks) -> Result<(Graph, Window), PathError> {
    graph::fits(streams.iter().map(|st| st.spans.len()).sum())?;
    let w = evaluated(pass.run, &streams, align)?;
    let g = graph::build_owned(streams, align, w.t0, w.t1);
    evalbench_host::phase::phase("path: graph built");
    Ok((g, w))
}

/// The evaluated window on the server's clock, and what of it was taken
/// from elsewhere than the runner's own record.
#[derive(Debug, Clone)]
struct Window {
    t0: i64,
    t1: i64,
    /// run.json had no evaluate request (Gradient's has none): the start
    /// is the pass's first span on the server's clock.
    start_from_spans: Option<String>,
    /// evaluated_s looks rounded to a tenth of a second (Gradient's is).
    rounded: bool,
    /// Some stream's nesting was inferred from time containment.
    inferred: bool,
}

impl Window {
    /// What a reader of the path must know about how it was made.
    fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.inferred {
            parts.push(
                "inferred: the span lines carry no ids, so each span's parent is the innermost span of its process \
                    containing it in time"
                    .to_string(),
            );
        }
        if let Some(from) = &self.start_from_spans {
            parts.push(format!(
                "start: run.json has no evaluate request, so the path starts where {from} started (server clock)"
            ));
        }
        if self.rounded {
            parts.push(
                "end: the start plus evaluated_s, which run.json gives rounded to 0.1 s (the end is within ±50 ms)"
                    .to_string(),
            );
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// The evaluated window, server clock: the evaluate request (or, where
/// run.json has none, the first span) and its end.
fn evaluated(run: Option<&RunInfo>, streams: &[Stream], align: &dyn Clocks) -> Result<Window, PathError> {
    let run = run.ok_or(PathError::NoRun)?;
    let secs = run.evaluated_s.ok_or(PathError::NoWindow)?;
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(PathError::NotADuration(secs));
    }
    let (t0, start_from_spans) = match run.requested_us {
        Some(t) => (t, None),
        None => {
            let (t, from) = start_of_assignment(streams, align).ok_or(PathError::NoWindow)?;
            (t, Some(from))
        }
    };
    let rounded = ((secs * 10.0).round() - secs * 10.0).abs() < 1e-9 && run.requested_us.is_none();
    let inferred = streams.iter().any(|st| st.nesting_inferred);
    // From a file of another machine: saturated, never wrapped (a float's
    // cast to i64 saturates already; the sum need not).
    Ok(Window { t0, t1: t0.saturating_add((secs * 1e6).round() as i64), start_from_spans, rounded, inferred })
}

/// Where the evaluation shows in the spans first, on the server's clock,
/// and which span that is: from the first `assign_job` back along the
/// contract's assignment steps, each the latest of its name starting before
/// the next (so the scheduler's idle rounds before the request are not
/// taken for it); None without an `assign_job`.
fn start_of_assignment(streams: &[Stream], align: &dyn Clocks) -> Option<(i64, String)> {
    use evalbench_bundle::contract::ASSIGNMENT_CHAIN;
    let starts = |process: &str, name: &str| -> Vec<i64> {
        let mut v: Vec<i64> = streams
            .iter()
            .filter(|st| st.process == process)
            .flat_map(|st| {
                st.spans
                    .iter()
                    .filter(move |s| st.name(s) == name)
                    .map(move |s| s.ts_us.saturating_add(align.offset_for(st)))
            })
            .collect();
        v.sort_unstable();
        v
    };
    let &(assign_process, assign_name) = ASSIGNMENT_CHAIN.last()?;
    // Without a job handed to a worker there is no evaluation to find in the spans.
    let mut at = starts(assign_process, assign_name).first().copied()?;
    let mut from = format!("{assign_process} {assign_name}");
    for &(process, name) in ASSIGNMENT_CHAIN.iter().rev().skip(1) {
        if let Some(&t) = starts(process, name).iter().rev().find(|&&t| t <= at) {
            at = t;
            from = format!("{process} {name}");
        }
    }
    Some((at, format!("the first job's assignment ({from})")))
}

/// The path through the measured graph, the database's stretches carved
/// out of the server's (from the pass's pg.pcap).
fn measured(g: Graph, w: Window, align: &dyn Clocks, pass: Pass<'_>) -> Result<(Graph, CriticalPath), PathError> {
    let (refiner, note) = database::Refiner::new(pass);
    let note = match (w.note(), note) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    measured_with(g, w.t0, align, refiner, note)
}

/// [`measured`] with the round trips read.
fn measured_with(
    g: Graph,
    t0: i64,
    align: &dyn Clocks,
    mut refiner: database::Refiner,
    note: Option<String>,
) -> Result<(Graph, CriticalPath), PathError> {
    // Per step, before the walk: its scratch (8 bytes a span) is gone by
    // the time the segments are held.
    let own = g.own_us();
    give_back_freed();
    // Each segment refined as the walk finds it, into one vector: refined
    // after the walk, the path was held twice (2 x 140 MB at 4.5M spans).
    let (mut segs, mut pieces) = (Vec::new(), Vec::new());
    let to_us = g.walk_measured_each(t0, &mut |seg| {
        refiner.split(seg, &mut |s| pieces.push(s));
        // Backwards, as the walk goes: reversed with the rest below.
        segs.extend(pieces.drain(..).rev());
    })?;
    segs.reverse();
    evalbench_host::phase::phase("path: walked back from the end");
    let mut g = g;
    g.db = std::mem::take(&mut refiner.db);
    g.trips = std::mem::take(&mut refiner.trips);
    if !g.trips.is_empty() {
        // The statements now split the server's stretches: a plan laid out
        // before they were known would weigh those stretches whole.
        g.plan = std::sync::OnceLock::new();
    }
    let steps = g.steps_of(&segs, to_us.saturating_sub(t0), &g.db, &own);
    let path = g.assemble(t0, to_us, segs, steps, align, note);
    Ok((g, path))
}

/// Returns the heap's freed memory to the system before the walk, whose
/// stretches are the pass's peak beside the graph: the graph's build
/// sorted and hashed on every core, and glibc keeps what was freed.
fn give_back_freed() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks glibc's own heap.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// As [`critical_path`], for a caller that wants the steps alone:
/// no segment is kept (at 4.5M spans the path has 2.2M, 140 MB), each is
/// added to its step as the walk finds it.
pub fn critical_steps(streams: Vec<Stream>, pass: Pass<'_>, align: &dyn Clocks) -> Result<Vec<PathStep>, PathError> {
    let (mut g, w) = graph_owned(streams, pass, align)?;
    // Nothing is predicted from it: the edges are checked, not laid out.
    g.predicts = false;
    let t0 = w.t0;
    let own = g.own_us();
    let (mut refiner, _) = database::Refiner::new(pass);
    let mut by = Tally::new();
    let to_us = g.walk_measured_each(t0, &mut |seg| refiner.split(seg, &mut |s| tally(&mut by, &s)))?;
    Ok(g.steps_of_tally(by, to_us.saturating_sub(t0), &refiner.db, &own))
}

/// (process, name) to (time on the path, stretches).
type Tally = HashMap<(Option<Arc<str>>, Arc<str>), (i64, usize)>;

fn tally(by: &mut Tally, s: &Segment) {
    let e = by.entry((s.label().process.clone(), s.label().name.clone())).or_default();
    e.0 = e.0.saturating_add(s.to_us.saturating_sub(s.from_us));
    e.1 += 1;
}

impl Graph {
    /// Own time per step: each span's duration less its children's and the
    /// spans of other threads or processes it waited on inside it.
    pub fn own_us(&self) -> Vec<i64> {
        let mut own: Vec<i64> = self.spans.iter().map(|f| f.end.saturating_sub(f.start)).collect();
        for f in &self.spans {
            if let Some(up) = f.up() {
                // Waiting on another thread or process counts from the span's start.
                let from = if f.remote() { self.spans[up].start } else { f.start };
                own[up.index()] = own[up.index()].saturating_sub(f.end.saturating_sub(from));
            }
        }
        let mut per = vec![0i64; self.steps.len()];
        for (f, o) in self.spans.iter().zip(own) {
            per[f.step() as usize] = per[f.step() as usize].saturating_add(o.max(0));
        }
        per
    }

    /// Own time per (process, span name), as [`Graph::own_us`] counts it:
    /// what the span tables show beside the total, so that a name's own
    /// time is one figure in the tables and in `whatif`.
    pub fn own_by_name(&self) -> Vec<(&str, &str, i64)> {
        self.steps.iter().zip(self.own_us()).map(|((p, n), o)| (&**p, &**n, o)).collect()
    }

    /// The segments by step; `db` has the own time of the database's steps
    /// (process [`POSTGRES`]), which are no spans of the graph, and what
    /// they took of the server's spans (on the path, though not the span's).
    fn steps_of(&self, segs: &[Segment], evaluated_us: i64, db: &database::Database, own: &[i64]) -> Vec<PathStep> {
        let mut by = Tally::new();
        for s in segs {
            tally(&mut by, s);
        }
        self.steps_of_tally(by, evaluated_us, db, own)
    }

    fn steps_of_tally(&self, by: Tally, evaluated_us: i64, db: &database::Database, own: &[i64]) -> Vec<PathStep> {
        let step_of: HashMap<(&str, &str), usize> =
            self.steps.iter().enumerate().map(|(i, (p, n))| ((&**p, &**n), i)).collect();
        let mut steps: Vec<PathStep> = by
            .into_iter()
            .map(|((process, name), (on, n))| {
                let own_us = match process.as_deref() {
                    Some(POSTGRES) => db.statements.get(&*name).map(|&o| o.max(on)),
                    Some(p) => step_of.get(&(p, &*name)).map(|&i| {
                        let carved = if p == evalbench_bundle::layout::SERVER {
                            db.carved.get(&*name).copied().unwrap_or(0)
                        } else {
                            0
                        };
                        (own[i] - carved).max(on)
                    }),
                    None => None,
                };
                PathStep {
                    share: evalbench_bundle::num::round_to(
                        if evaluated_us > 0 { on as f64 / evaluated_us as f64 } else { 0.0 },
                        6,
                    ),
                    off_path_us: own_us.map(|o| o - on),
                    own_us,
                    process: process.map(|p| p.to_string()),
                    name: name.to_string(),
                    on_path_us: on,
                    segments: n,
                }
            })
            .collect();
        steps.sort_by(|a, b| b.on_path_us.cmp(&a.on_path_us).then_with(|| a.label().cmp(&b.label())));
        steps
    }

    /// The steps a `--faster` name selects: those whose span name is
    /// `pattern`, and those whose `process:name` is. A process or a span
    /// name may hold a colon, so no split of `pattern` is guessed.
    pub fn select(&self, pattern: &str) -> Vec<u32> {
        (0..self.steps.len() as u32)
            .filter(|&i| {
                let (p, n) = &self.steps[i as usize];
                // NAME, PROCESS:NAME, or "PROCESS NAME" as the path's tables print a step.
                **n == *pattern
                    || pattern.strip_prefix(&**p).and_then(|r| r.strip_prefix(':').or_else(|| r.strip_prefix(' ')))
                        == Some(&**n)
            })
            .collect()
    }

    /// The step of exactly `process`'s spans of `name`.
    pub fn step(&self, process: &str, name: &str) -> Option<u32> {
        self.steps.iter().position(|(p, n)| **p == *process && **n == *name).map(|i| i as u32)
    }
}

#[cfg(test)]
mod shorten_tests;
#[cfg(test)]
mod tests;
