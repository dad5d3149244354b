//! `evalbench-harness`: the runner. Passes (cold/warm × clean/instrumented)
//! against a target (the lab, or a Gradient deployment), with collectors
//! armed from the evaluation request until the evaluation leaves
//! EvaluatingDerivation. It writes the pass directories of the bundle; the
//! summary, traces, archive and report are made from them afterwards.

pub mod capture;
pub mod cmdbench;
mod error;
pub mod gate;
pub mod pass;
pub mod provenance;
pub mod target;
pub mod tools;

use std::path::PathBuf;
use std::time::Duration;

use evalbench_bundle::{layout, RunInfo};

pub use capture::Captures;
pub use error::HarnessError;
pub use pass::{PassError, INTERRUPTED};
pub use target::Target;

/// Options of a run, parsed once.
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub out: PathBuf,
    pub passes: Vec<String>,
    /// The captures asked for; each pass takes its part of them.
    pub capture: CaptureSet,
    /// Every clean pass this many times; repeats are named `<pass>.2`, `<pass>.3`, ...
    pub repeat: usize,
    /// Every instrumented pass this many times (their timings are shapes: one is the default).
    pub repeat_instrumented: usize,
    /// Every counted pass this many times (an instruction count is exact to
    /// a few parts in a million: one is the default).
    pub repeat_counted: usize,
    /// Runs of each clean pass made before its counted ones, into
    /// `warmup/<pass>[.k]`, and left out of every statistic.
    pub warmup: usize,
    /// What the binary knows of the run (evalbench's version, the plan, the
    /// start); the target and its machine add the rest before the first pass.
    pub provenance: evalbench_bundle::Provenance,
    pub timeout: Duration,
}

/// The captures a run asks for (`run`'s `--no-perf`, `--no-strace`,
/// `--no-pcap`, `--no-nix-trace`, `--bare`): one value, of which each
/// pass takes its part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureSet {
    pub perf: bool,
    pub strace: bool,
    pub pcap: bool,
    /// Instrumented passes: nix traces its calls into a profile.
    pub nix_trace: bool,
    /// Spans only: every other capture off (to measure what the captures cost).
    pub bare: bool,
}

impl CaptureSet {
    /// Every capture, as `run` without flags.
    pub const ALL: CaptureSet = CaptureSet { perf: true, strace: true, pcap: true, nix_trace: true, bare: false };

    /// The captures turned off, as the plan in run.json names them.
    pub fn off(&self) -> Vec<String> {
        [
            ("perf", !self.perf),
            ("strace", !self.strace),
            ("pcap", !self.pcap),
            ("nix-trace", !self.nix_trace),
            ("all but spans (--bare)", self.bare),
        ]
        .into_iter()
        .filter(|(_, off)| *off)
        .map(|(flag, _)| flag.to_string())
        .collect()
    }

    /// What a pass captures: clean passes the cheap captures, instrumented
    /// passes the distorting ones (docs/decisions.md, "Passes").
    pub fn captures_for(&self, pass: &str) -> Captures {
        let clean = layout::is_clean(pass);
        // A counted pass is a clean one under Valgrind, which counts nix's
        // instructions; any other capture would be counted with them.
        if layout::is_counted(pass) {
            return Captures { instructions: true, ..Captures::NONE };
        }
        if self.bare {
            return Captures::NONE;
        }
        Captures {
            pcap: clean && self.pcap,
            pg_stats: clean,
            wait_samples: clean,
            perf: !clean && self.perf,
            strace: !clean && self.strace,
            auto_explain: !clean,
            instructions: false,
        }
    }
}

/// What the runner tells as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// A step of a run (`run`: `cold-clean.7`, `a: warm-up cold-clean (on b's lab)`), or
    /// of the setup and teardown (`setup`, `a: teardown`).
    Step { run: &'a str, what: &'a str },
    /// A run ended whole: its pass, its number in it of how many planned, a
    /// warm-up or not, its evaluated seconds; and runs done of all planned.
    RunDone {
        side: &'a str,
        pass: &'a str,
        number: usize,
        of: usize,
        warmup: bool,
        evaluated_s: Option<f64>,
        done: usize,
        total: usize,
    },
}

/// Runs every pass; stops at the first failing one (its files are kept).
/// The target is always finished (the lab stopped), whatever happened.
pub fn run(
    opts: &RunOpts,
    target: &mut dyn Target,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<RunInfo>, PassError> {
    let mut sides = [Side { label: "", opts, target }];
    run_sides(&mut sides, progress).map(|mut v| v.remove(0))
}

/// One side of an interleaved run: its own options (bundle directory,
/// provenance) and its own target (a lab of its own).
pub struct Side<'a> {
    /// Put before the pass name in progress lines (`a`, `b`); empty for one side.
    pub label: &'a str,
    pub opts: &'a RunOpts,
    pub target: &'a mut dyn Target,
}

/// Runs the passes of every side, interleaved: round by round, each pass
/// on one side and then on the next, the order reversed every other round
/// (A B, B A, A B, ...). Whatever the machine does during the run (a
/// neighbour's load, a slow minute) then falls on both sides alike, which
/// two runs made one after the other cannot promise: between two sessions
/// this machine's medians moved by more than the change being looked for
/// (docs/decisions.md, "Sessions"). Passes and repeats are the first
/// side's. Every target is finished, whatever happened.
pub fn run_sides(
    sides: &mut [Side<'_>],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<Vec<RunInfo>>, PassError> {
    let setup = |m: String| PassError::new("(before the first pass)", m);
    let first = sides.first().map(|s| s.opts).ok_or_else(|| setup("no side to run".into()))?;
    for s in sides.iter() {
        std::fs::create_dir_all(&s.opts.out).map_err(|e| setup(format!("{}: {e}", s.opts.out.display())))?;
    }
    layout::check_passes(&first.passes).map_err(|e| setup(e.to_string()))?;
    let mut started = 0;
    let result = (|| {
        let provenances = start_sides(sides, &mut started, progress)?;
        let mut infos: Vec<Vec<RunInfo>> = sides.iter().map(|_| Vec::new()).collect();
        let runs_of = |base: &str| match layout::PassKind::of(base) {
            layout::PassKind::Clean => first.repeat.max(1),
            layout::PassKind::Instrumented => first.repeat_instrumented.max(1),
            layout::PassKind::Counted => first.repeat_counted.max(1),
        };
        let rounds = first.passes.iter().map(|p| runs_of(p)).max().unwrap_or(1);
        let clean = first.passes.iter().filter(|p| layout::is_clean(p)).count();
        let cross = Crossing::of(sides, &first.passes);
        // Warm-up rounds first, clean passes only, then the counted ones,
        // each kind alternating A B, B A from its own first round. Crossed,
        // every warm-up is made on both targets: a target's first run of a
        // workload (its first clone of it) is then never a counted one.
        let warmups = first.warmup * if cross.is_some() { 2 } else { 1 };
        let total = sides.len() * (warmups * clean + first.passes.iter().map(|p| runs_of(p)).sum::<usize>());
        let mut done = 0usize;
        for round in 1..=warmups + rounds {
            let warmup = round <= warmups;
            let counted = if warmup { round } else { round - warmups };
            let crossed =
                cross.as_ref().is_some_and(|_| if warmup { counted % 2 == 0 } else { Crossing::crossed(counted) });
            if let Some(c) = &cross {
                c.assign(sides, crossed)?;
            }
            for base in first.passes.iter().filter(|b| if warmup { layout::is_clean(b) } else { counted <= runs_of(b) })
            {
                let name = if counted == 1 { base.clone() } else { format!("{base}.{counted}") };
                let mut order: Vec<usize> = (0..sides.len()).collect();
                // Counted round 1 is A B whatever the warm-up rounds were.
                if counted % 2 == 0 {
                    order.reverse();
                }
                for i in order {
                    // Side i's run, on the target that serves its workload this round.
                    let t = if crossed { sides.len() - 1 - i } else { i };
                    let at = RunAt { i, t, name: &name, base, warmup, crossed, interleaved: cross.is_some() };
                    let info = run_one(sides, &at, &provenances[i], progress)?;
                    done += 1;
                    let of = if warmup { warmups / if cross.is_some() { 2 } else { 1 } } else { runs_of(base) };
                    let number = if warmup && cross.is_some() { counted.div_ceil(2) } else { counted };
                    let (side, evaluated_s) = (sides[i].label, info.evaluated_s);
                    let pass = base;
                    progress(Progress::RunDone { side, pass, number, of, warmup, evaluated_s, done, total });
                    infos[i].push(info);
                }
            }
        }
        Ok(infos)
    })();
    for s in sides.iter_mut().take(started) {
        progress(Progress::Step {
            run: &tag(s.label, "teardown"),
            what: &format!("stopping the {} target", s.target.name()),
        });
        s.target.finish();
    }
    result
}

/// A side's run name, `label: what` (no label: `what`).
fn tag(label: &str, what: &str) -> String {
    if label.is_empty() {
        what.to_string()
    } else {
        format!("{label}: {what}")
    }
}

/// Each side's target started (`started` counts them, for the teardown),
/// the tools any of its passes needs checked, what it measures recorded.
fn start_sides(
    sides: &mut [Side<'_>],
    started: &mut usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<evalbench_bundle::Provenance>, PassError> {
    let setup_from = |e: HarnessError| PassError::new("(before the first pass)", e);
    let mut provenances = Vec::new();
    for s in sides.iter_mut() {
        progress(Progress::Step {
            run: &tag(s.label, "setup"),
            what: &format!("starting the {} target", s.target.name()),
        });
        *started += 1;
        s.target.start().map_err(setup_from)?;
        // Every tool any pass will need, checked before the first one.
        let any = s.opts.passes.iter().map(|p| s.opts.capture.captures_for(p)).fold(Captures::NONE, Captures::union);
        let cap = s.target.capture();
        tools::check(&any, &cap.server, &cap.worker, s.target.pipeline_here()).map_err(setup_from)?;
        progress(Progress::Step {
            run: &tag(s.label, "setup"),
            what: "recording what is measured (flake, nix, PostgreSQL, machine)",
        });
        provenances.push(provenance::gather(&s.opts.provenance, &mut *s.target));
    }
    Ok(provenances)
}

/// One run of a round: side `i`'s pass, on target `t`.
struct RunAt<'a> {
    i: usize,
    t: usize,
    name: &'a str,
    base: &'a str,
    warmup: bool,
    /// The sides' targets swapped this round.
    crossed: bool,
    /// An interleaved session: run.json names the target.
    interleaved: bool,
}

fn run_one(
    sides: &mut [Side<'_>],
    r: &RunAt<'_>,
    provenance: &evalbench_bundle::Provenance,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<RunInfo, PassError> {
    let (label, opts) = (sides[r.i].label, sides[r.i].opts);
    let what = if r.warmup { format!("warm-up {}", r.name) } else { r.name.to_string() };
    // Interrupted between runs (or while the targets started): no run is begun.
    if INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(PassError::new(&tag(label, &what), "interrupted before it began"));
    }
    // A warm-up run is its pass's run in every way but where it is kept.
    let dir = if r.warmup { format!("{}/{}", layout::WARMUP_DIR, r.name) } else { r.name.to_string() };
    let plan = pass::PassPlan {
        name: r.name,
        cold: layout::is_cold(r.base),
        captures: opts.capture.captures_for(r.base),
        dir: opts.out.join(&dir),
        timeout: opts.timeout,
        nix_trace: opts.capture.nix_trace,
        provenance,
        instance: r.interleaved.then_some(r.t as u32),
    };
    let on =
        if r.crossed { format!(" (on {}'s {})", sides[r.t].label, sides[r.t].target.name()) } else { String::new() };
    let shown = tag(label, &format!("{what}{on}"));
    let mut pp = |m: &str| progress(Progress::Step { run: &shown, what: m });
    pass::run_pass(&mut *sides[r.t].target, &plan, &mut pp).map_err(|mut e| {
        e.pass = shown.clone();
        e
    })
}

/// An interleaved session of two sides whose targets can serve each
/// other's workload: the sides cross between the two targets round by
/// round, so that a difference between the targets themselves (one lab's
/// PostgreSQL faster at writes than the other's, measured in an A/A pair)
/// falls on both sides instead of reading as the change.
struct Crossing {
    workloads: Vec<target::Served>,
}

impl Crossing {
    /// Only where every round, a warm-up's too, begins with a cold pass: a target starts
    /// serving another workload at a cold reset, so that a warm pass never
    /// finds the other workload's caches.
    fn of(sides: &[Side<'_>], passes: &[String]) -> Option<Crossing> {
        let first_clean = passes.iter().find(|p| layout::is_clean(p));
        if sides.len() != 2
            || !passes.first().is_some_and(|p| layout::is_cold(p))
            || first_clean.is_some_and(|p| !layout::is_cold(p))
        {
            return None;
        }
        let workloads: Option<Vec<_>> = sides.iter().map(|s| s.target.workload()).collect();
        workloads.map(|workloads| Crossing { workloads })
    }

    /// Counted rounds 1 to 4 run straight, crossed, crossed, straight, and
    /// so on: with the order's A B, B A, each side runs on each target
    /// first and second equally often in every four rounds, and on each
    /// target once in every first two.
    fn crossed(round: usize) -> bool {
        matches!(round % 4, 2 | 3)
    }

    /// Each target serves the workload of the side it runs this round.
    fn assign(&self, sides: &mut [Side<'_>], crossed: bool) -> Result<(), PassError> {
        for (t, s) in sides.iter_mut().enumerate() {
            let w = &self.workloads[if crossed { 1 - t } else { t }];
            s.target.serve(w).map_err(|e| PassError::new("(between two rounds)", e))?;
        }
        Ok(())
    }
}
