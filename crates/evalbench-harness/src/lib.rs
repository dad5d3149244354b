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
    pub perf: bool,
    pub strace: bool,
    pub pcap: bool,
    /// Spans only: every other capture off (to measure what the captures cost).
    pub bare: bool,
    /// Every clean pass this many times; repeats are named `<pass>.2`, `<pass>.3`, ...
    pub repeat: usize,
    /// Every instrumented pass this many times (their timings are shapes: one is the default).
    pub repeat_instrumented: usize,
    /// What the binary knows of the run (evalbench's version, the plan, the
    /// start); the target and its machine add the rest before the first pass.
    pub provenance: evalbench_bundle::Provenance,
    pub timeout: Duration,
    /// Instrumented passes: nix traces its calls into a profile.
    pub nix_trace: bool,
}

impl RunOpts {
    /// What a pass captures: clean passes the cheap captures, instrumented
    /// passes the distorting ones (docs/ARCHITECTURE.md, "Passes").
    pub fn captures_for(&self, pass: &str) -> Captures {
        let clean = layout::is_clean(pass);
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
        }
    }
}

/// Runs every pass; stops at the first failing one (its files are kept).
/// The target is always finished (the lab stopped), whatever happened.
pub fn run(opts: &RunOpts, target: &mut dyn Target, progress: &mut dyn FnMut(&str, &str)) -> Result<Vec<RunInfo>, PassError> {
    let setup = |m: String| PassError::new("(before the first pass)", m);
    let setup_from = |e: HarnessError| PassError::new("(before the first pass)", e);
    std::fs::create_dir_all(&opts.out).map_err(|e| setup(format!("{}: {e}", opts.out.display())))?;
    for p in &opts.passes {
        if !layout::PASSES.contains(&layout::base_name(p)) {
            return Err(setup(format!("unknown pass {p:?}; passes are {}", layout::PASSES.join(", "))));
        }
    }
    progress("setup", &format!("starting the {} target", target.name()));
    let result = (|| {
        target.start().map_err(setup_from)?;
        // Every tool any pass will need, checked before the first one.
        let any = opts.passes.iter().map(|p| opts.captures_for(p)).fold(Captures::NONE, Captures::union);
        let cap = target.capture();
        tools::check(&any, &cap.server, &cap.worker, target.pipeline_here()).map_err(setup_from)?;
        progress("setup", "recording what is measured (flake, nix, PostgreSQL, machine)");
        let provenance = provenance::gather(&opts.provenance, target);
        let mut infos = Vec::new();
        let runs_of = |base: &str| if layout::is_clean(base) { opts.repeat.max(1) } else { opts.repeat_instrumented.max(1) };
        let rounds = opts.passes.iter().map(|p| runs_of(p)).max().unwrap_or(1);
        for round in 1..=rounds {
            for base in opts.passes.iter().filter(|b| round <= runs_of(b)) {
                let p = if round == 1 { base.clone() } else { format!("{base}.{round}") };
                let plan = pass::PassPlan {
                    name: &p,
                    cold: layout::is_cold(base),
                    captures: opts.captures_for(base),
                    dir: opts.out.join(&p),
                    timeout: opts.timeout,
                    nix_trace: opts.nix_trace,
                    provenance: &provenance,
                };
                let mut pp = |m: &str| progress(&p, m);
                infos.push(pass::run_pass(target, &plan, &mut pp)?);
                progress(&p, "done");
            }
        }
        Ok(infos)
    })();
    progress("teardown", &format!("stopping the {} target", target.name()));
    target.finish();
    result
}
