//! `evalbench run`: the passes, then everything made from them: summary,
//! traces, the archive, the report and Hydra's build products. The flags
//! become one `RunOptions` (options.rs), checked once; `run` only
//! orchestrates: the sides, their targets, the passes, the bundles.

mod guard;
mod options;
mod progress;

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use evalbench_bundle::{layout, pack_dir, write_atomic};
use evalbench_harness::target::gradient::Gradient;
use evalbench_harness::{Side, Target, INTERRUPTED};
use evalbench_report::compare::json as compare_json;
use options::{Baseline, RunOptions, RunTarget};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetKind {
    /// The reference pipeline, started and stopped by the run.
    Lab,
    /// A Gradient deployment described by --target-config.
    Gradient,
}

#[derive(clap::Args)]
pub struct Args {
    /// What to measure: the lab (started and stopped by the run) or a Gradient deployment.
    #[arg(long, value_enum, default_value = "lab")]
    pub target: TargetKind,
    /// The flake the lab evaluates (default: the embedded hello flake).
    #[arg(long)]
    pub flake: Option<PathBuf>,
    /// The bundle directory (with --baseline: the directory of both bundles, a/ and b/).
    #[arg(long, short, default_value = "out")]
    pub out: PathBuf,
    /// Also measure this flake, in the same session, pass by pass interleaved with --flake
    /// (A B, B A, ...), each in a lab of its own: the machine's drift then falls on both alike.
    /// OUT/a is the baseline's bundle, OUT/b --flake's, and OUT/compare.txt and compare.json
    /// their comparison, printed as `compare` prints it. The way to ask "did my change make it
    /// faster?" on a shared machine (docs/sessions.md).
    #[arg(long, value_name = "FLAKE")]
    pub baseline: Option<PathBuf>,
    /// The baseline is --flake as it was at this git revision: checked out beside your tree as
    /// a git worktree (your checkout is left as it is), removed when the run ends, and measured
    /// interleaved with --flake as --baseline would. `--flake . --baseline-rev HEAD~1` asks
    /// "did my last commit make it faster?".
    #[arg(long, value_name = "REV", conflicts_with = "baseline", requires = "flake")]
    pub baseline_rev: Option<String>,
    /// With --baseline or --baseline-rev: exit 1 on what `compare --fail-on-regression PCT` fires on.
    #[arg(long, value_name = "PCT", value_parser = crate::percent::parse, allow_hyphen_values = true)]
    pub fail_on_regression: Option<f64>,
    /// With --fail-on-regression: as `compare --allow-missing`, pass where a measure the gate
    /// judges is on one side only (without it the gate fails closed there, exit 2).
    #[arg(long, requires = "fail_on_regression")]
    pub allow_missing: bool,
    /// Passes to run, in order: cold-clean, warm-clean, cold-instrumented, warm-instrumented,
    /// and the counted passes cold-counted and warm-counted (see --counted).
    #[arg(long, value_delimiter = ',', default_value = "cold-clean,warm-clean,cold-instrumented,warm-instrumented")]
    pub passes: Vec<String>,
    /// Also run the counted passes (cold-counted, warm-counted): nix under Valgrind, which counts
    /// the instructions nix executes, exact to a few parts in a million on a busy machine, where a
    /// time spreads by percents. Their times are Valgrind's (15-30x slower) and never summarized.
    /// compare and the gate judge the counts with one run a side (docs/instructions.md).
    #[arg(long)]
    pub counted: bool,
    /// Runs of each counted pass (repeats are <pass>.2, ...): one is enough for a verdict.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat_counted: u32,
    /// No perf on instrumented passes (for hosts that cannot profile).
    #[arg(long)]
    pub no_perf: bool,
    /// No strace on instrumented passes.
    #[arg(long)]
    pub no_strace: bool,
    /// No tcpdump on clean passes.
    #[arg(long)]
    pub no_pcap: bool,
    /// Spans only, every other capture off: to measure what the captures cost.
    #[arg(long)]
    pub bare: bool,
    /// Runs of each clean pass (repeats are <pass>.2, <pass>.3, ...). The default is the
    /// smallest count at which `compare` finds a 10% change in evaluated seconds in 80% of
    /// seeded trials at the lab's measured noise (docs/how-many-runs.md); 1 gives no verdict.
    #[arg(long, default_value_t = evalbench_analyze::power::DEFAULT_CLEAN_RUNS, value_parser =
        clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Warm-up runs of each clean pass, made first and kept under OUT/warmup/, left out of every
    /// statistic (as hyperfine's --warmup). The default is what the lab's runs showed here
    /// (docs/verdicts.md); the plan in run.json records the count.
    #[arg(long, default_value_t = evalbench_analyze::power::DEFAULT_WARMUP_RUNS, value_parser =
        clap::value_parser!(u32).range(0..=100))]
    pub warmup: u32,
    /// Runs of each instrumented pass: their timings are shapes, never durations, so one by default.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat_instrumented: u32,
    /// Give up on a pass whose evaluation takes longer than this many seconds (at least 1).
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_s: u64,
    /// The lab's directory (PostgreSQL, sources, eval cache); must be world-traversable. Kept
    /// when the run ends. Default: one the run makes under /var/tmp/evalbench and removes when it
    /// ends well (a failed run keeps it for its logs; `evalbench lab prune` removes it).
    #[arg(long)]
    pub lab_dir: Option<PathBuf>,
    /// Keep the lab directory the run made for itself.
    #[arg(long)]
    pub keep_lab: bool,
    /// The lab's options, as `lab up` takes them.
    #[command(flatten)]
    pub lab: crate::lab::LabOptions,
    /// The baseline's lab runs with this setting (repeatable), on top of --lab-setting. Without
    /// --baseline or --baseline-rev the baseline is --flake itself: `--baseline-lab-setting
    /// graph_walk=join` measures the lab's two forms of graph walk interleaved, on one flake.
    #[arg(long, value_name = "NAME=VALUE", value_parser = crate::lab::check_lab_setting)]
    pub baseline_lab_setting: Vec<String>,
    /// No nix profile in instrumented passes (nix's --trace-function-calls is on by default there).
    #[arg(long)]
    pub no_nix_trace: bool,
    /// JSON description of a Gradient deployment (docs/targets.md), for --target gradient.
    #[arg(long)]
    pub target_config: Option<PathBuf>,
    /// Do not render report/ (summary, traces and the archive are still written).
    #[arg(long)]
    pub no_report: bool,
    /// Every step of every run on stderr (its status as it changes, the captures armed and
    /// stopped), not one line a run.
    #[arg(long, short)]
    pub verbose: bool,
}

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// The benchmark name of the embedded default flake.
const HELLO_FLAKE: &str = "hello-flake (embedded)";

fn flake_label(flake: Option<&Path>) -> String {
    flake.map_or_else(|| HELLO_FLAKE.to_string(), |f| f.display().to_string())
}

/// A side of the run: its label (`a`, `b`, or empty for one side), its
/// bundle directory, its flake (None: the embedded one), the flake's name,
/// and the other side's.
struct SidePlan {
    label: &'static str,
    dir: PathBuf,
    flake: Option<PathBuf>,
    name: String,
    other: Option<String>,
}

/// One side, or the baseline (`a`) and the flake (`b`). `baseline`: the
/// baseline's flake (None: the embedded one) and its name.
fn sides(o: &RunOptions, baseline: Option<(Option<PathBuf>, String)>) -> Vec<SidePlan> {
    let name = flake_label(o.flake.as_deref());
    match baseline {
        None => vec![SidePlan { label: "", dir: o.out.clone(), flake: o.flake.clone(), name, other: None }],
        Some((base, base_name)) => vec![
            SidePlan {
                label: "a",
                dir: o.out.join("a"),
                flake: base,
                name: base_name.clone(),
                other: Some(name.clone()),
            },
            SidePlan { label: "b", dir: o.out.join("b"), flake: o.flake.clone(), name, other: Some(base_name) },
        ],
    }
}

/// One id for every bundle of this invocation.
fn session_id() -> String {
    format!("{:012x}-{:x}", evalbench_host::now_us(), std::process::id())
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let o = RunOptions::from_args(a)?;
    // The output directory is this run's alone until it ends (refused, and
    // nothing started, when another run holds it or it holds another's files).
    let _out = guard::take(&o.out, &o.passes, o.baseline.is_some())?;
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let session = session_id();
    // Kept until the run ends: the baseline's checkout at --baseline-rev.
    let worktree = match (&o.baseline, &o.flake) {
        (Some(Baseline::Rev(rev)), Some(flake)) => Some(crate::baseline_rev::Worktree::add(flake, rev)?),
        _ => None,
    };
    let baseline = baseline_side(&o, worktree.as_ref());
    let plan = sides(&o, baseline);
    let mut targets: Vec<Box<dyn Target>> = Vec::new();
    let mut opts = Vec::new();
    // The labs this run makes for itself, removed when it ends well.
    let mut own_labs: Vec<PathBuf> = Vec::new();
    for side in &plan {
        if !side.label.is_empty() {
            guard::claim_side(&side.dir, &o.passes)?;
        }
        targets.push(match &o.target {
            RunTarget::Lab(lab) => {
                let dir = lab.dir_for(side.label, &side.dir);
                if lab.dir.is_none() {
                    own_labs.push(dir.clone());
                }
                let settings = if side.label == "a" { lab.baseline_settings } else { lab.config.lab_settings };
                Box::new(lab.lab(side.flake.as_deref(), &side.name, dir, settings)?)
            }
            RunTarget::Gradient(cfg) => Box::new(Gradient::load(cfg)?),
        });
        opts.push(o.harness(side.dir.clone(), o.provenance(&session, side.other.clone())));
    }
    let mut progress = progress::Progress::new(o.verbose);
    let mut sides: Vec<Side<'_>> = plan
        .iter()
        .zip(&opts)
        .zip(targets.iter_mut())
        .map(|((side, opts), t)| Side { label: side.label, opts, target: t.as_mut() })
        .collect();
    let result = evalbench_harness::run_sides(&mut sides, &mut |p| progress.say(p));
    progress.finish();
    progress::stop_at_stage("summarizing");
    let result = match result {
        Err(e) if !plan.iter().any(|s| guard::captured(&s.dir)) => return nothing_captured(&o, &own_labs, e),
        r => r,
    };
    // Whatever happened, what was captured is made readable (summarizing
    // is not interrupted: it is bounded, and a bundle half-summarized is worse).
    let made = finish_bundles(&plan, o.report);
    // An interrupted run's lab has nothing to tell: removed, as after a run that went well.
    put_labs_away(&o, result.is_ok() || INTERRUPTED.load(Ordering::Relaxed), &own_labs);
    match (result, made) {
        (Ok(_), Ok(text)) if INTERRUPTED.load(Ordering::Relaxed) => {
            crate::emit(&text)?;
            eprintln!("evalbench run: interrupted after the last run: the bundle in {} is whole", o.out.display());
            Ok(ExitCode::from(130))
        }
        (Ok(_), Ok(text)) => {
            if plan.len() == 2 {
                return compare_sides(&o.out, &plan[0].dir, &plan[1].dir, (o.fail_on_regression, o.allow_missing));
            }
            crate::emit(&text)?;
            eprintln!("evalbench run: bundle in {}", o.out.display());
            Ok(ExitCode::SUCCESS)
        }
        (Err(e), made) => failed(e, made, &plan, &o.out),
        (Ok(_), Err(m)) => Err(m),
    }
}

/// The baseline side's flake and label, where there is one: a worktree at
/// --baseline-rev, another flake, or the same flake with other lab settings.
fn baseline_side(
    o: &RunOptions,
    worktree: Option<&crate::baseline_rev::Worktree>,
) -> Option<(Option<PathBuf>, String)> {
    match (&o.baseline, worktree) {
        (_, Some(w)) => {
            eprintln!(
                "evalbench run: the baseline is {} at {} (a worktree in {})",
                o.flake.as_deref().unwrap_or(Path::new(".")).display(),
                w.commit,
                w.flake.display()
            );
            Some((Some(w.flake.clone()), w.label.clone()))
        }
        (Some(Baseline::Flake(base)), None) => Some((Some(base.clone()), flake_label(Some(base)))),
        // The same flake on both sides, the lab set otherwise on one.
        (Some(Baseline::Settings), None) => Some((o.flake.clone(), flake_label(o.flake.as_deref()))),
        (Some(Baseline::Rev(_)) | None, None) => None,
    }
}

/// A run that failed: 130 where it was interrupted (as a shell reports
/// SIGINT), 1 where an evaluation ended Failed or Aborted (a verdict on the
/// flake, not an error of ours: its run.json, or its warm-up's, says so),
/// else the pass's error, whole (its causes printed as a chain).
fn failed(
    e: evalbench_harness::PassError,
    made: anyhow::Result<String>,
    plan: &[SidePlan],
    out: &Path,
) -> anyhow::Result<ExitCode> {
    if let Err(m) = made {
        eprintln!("evalbench run: the partial bundle is incomplete: {m}");
    }
    // Interrupted: 130, as a shell reports SIGINT. An evaluation that
    // ended Failed or Aborted is a verdict on the flake (exit 1), not
    // an error of ours (exit 2): its run.json (or its warm-up's) says so.
    // The pass's error stays whole: its causes are printed as a chain.
    let crashed = !e.dead.is_empty();
    let e = anyhow::Error::new(e).context(format!("what was captured is in {}", out.display()));
    let ended = plan.iter().flat_map(|side| runs_ended(&side.dir)).collect::<Vec<_>>();
    if INTERRUPTED.load(Ordering::Relaxed) || ended.contains(&evalbench_bundle::Ended::Interrupted) {
        eprintln!("evalbench run: interrupted: {}", crate::chain(&e));
        return Ok(ExitCode::from(130));
    }
    if !crashed && ended.contains(&evalbench_bundle::Ended::Failed) {
        eprintln!("evalbench run: {}", crate::chain(&e));
        return Ok(ExitCode::from(1));
    }
    Err(e)
}

/// A run stopped before its first run: nothing to summarize, nothing kept
/// (its lab removed when interrupted, kept for its logs otherwise).
fn nothing_captured(o: &RunOptions, own_labs: &[PathBuf], e: evalbench_harness::PassError) -> anyhow::Result<ExitCode> {
    let interrupted = INTERRUPTED.load(Ordering::Relaxed);
    put_labs_away(o, interrupted, own_labs);
    let e = anyhow::Error::new(e).context("nothing was captured");
    if interrupted {
        eprintln!("evalbench run: interrupted before the first run: {}", crate::chain(&e));
        return Ok(ExitCode::from(130));
    }
    Err(e)
}

/// Each side's bundle finished (`finish_bundle`): one side's summary text,
/// or the last error.
fn finish_bundles(plan: &[SidePlan], report: bool) -> anyhow::Result<String> {
    let mut made: anyhow::Result<String> = Ok(String::new());
    for side in plan {
        match finish_bundle(&side.dir, report) {
            Ok(text) if plan.len() == 1 => made = Ok(text),
            Ok(_) => eprintln!("evalbench run: {}: bundle in {}", side.label, side.dir.display()),
            Err(e) => made = Err(e.context(format!("bundle {}", side.dir.display()))),
        }
    }
    made
}

/// The labs the run made for itself: removed when it went well, else kept
/// (for their logs, or --keep-lab), and said.
fn put_labs_away(o: &RunOptions, went_well: bool, own_labs: &[PathBuf]) {
    let keep = matches!(&o.target, RunTarget::Lab(l) if l.keep);
    if went_well && !keep {
        remove_labs(own_labs);
    } else if !own_labs.is_empty() {
        let why = if keep { "--keep-lab" } else { "for its logs" };
        for d in own_labs {
            eprintln!(
                "evalbench run: kept the lab directory {} ({why}; `evalbench lab prune` removes it)",
                d.display()
            );
        }
    }
}

/// The labs a run made for itself, stopped and removed; what could not be, said.
fn remove_labs(dirs: &[PathBuf]) {
    let mut r = evalbench_lab::prune::Removed::default();
    for d in dirs {
        if let Err(e) = evalbench_lab::prune::remove(d, &mut r) {
            eprintln!("evalbench run: the lab directory {} was not removed: {e}", d.display());
        }
    }
    for (d, what) in &r.running {
        eprintln!("evalbench run: the lab directory {} is still in use, kept: {}", d.display(), what.join(", "));
    }
    for d in &r.removed {
        eprintln!("evalbench run: removed {} (made for this run; --keep-lab keeps it)", d.display());
    }
}

/// `run --baseline`: the two bundles compared as `compare a b` would, written
/// beside them and printed; the gate's exit status.
fn compare_sides(
    out: &Path,
    a: &Path,
    b: &Path,
    (pct, allow_missing): (Option<f64>, bool),
) -> anyhow::Result<ExitCode> {
    let limits = evalbench_bundle::Limits::default();
    let (ba, bb) = (evalbench_bundle::Bundle::open(a, limits)?, evalbench_bundle::Bundle::open(b, limits)?);
    let (c, gate) = crate::compare::judged(&ba, &bb, &evalbench_analyze::comparison::Opts::default(), pct)?;
    let text = evalbench_report::compare::text::text(
        &a.display().to_string(),
        &b.display().to_string(),
        &c,
        compare_json::TOP,
        pct.map(|p| (p, gate.as_slice())),
        false,
    );
    write_atomic(&out.join("compare.txt"), text.as_bytes())?;
    write_atomic(&out.join("compare.json"), compare_json::json(a, b, &c, pct, &gate).as_bytes())?;
    crate::emit(&text)?;
    for line in evalbench_report::compare::text::undecided(&c) {
        eprintln!("evalbench run: {line}");
    }
    eprintln!(
        "evalbench run: bundles in {} and {}, their comparison in {}",
        a.display(),
        b.display(),
        out.join("compare.txt").display()
    );
    Ok(crate::compare::gate_exit("evalbench run", (pct, allow_missing), &c, &gate).unwrap_or(ExitCode::SUCCESS))
}

/// summary, traces, report, archive, build products.
fn finish_bundle(out: &Path, report: bool) -> anyhow::Result<String> {
    // One reading of the directory serves the summary, the report and the metrics.
    let bundle = evalbench_bundle::Bundle::open(out, evalbench_bundle::Limits::default())?;
    let opts = evalbench_report::summary::write::SummarizeOpts::default();
    let (summary, _, text) = crate::summarize::summarize(&bundle, out, opts, &mut |_| {})?;
    if report {
        let dir = out.join(layout::REPORT_DIR);
        let mut traces = evalbench_report::html::Traces::new(&dir).context("report")?;
        let page = evalbench_analyze::view::page::page(&bundle, &mut |p, layout| traces.spans(p, layout));
        evalbench_report::html::render(&page, &dir, traces).context("report")?;
    }
    pack_dir(out, &out.join(layout::ARCHIVE), &[layout::ARCHIVE, layout::NIX_SUPPORT_DIR])?;
    write_atomic(
        &out.join(layout::HYDRA_BUILD_PRODUCTS),
        evalbench_report::summary::hydra::build_products(out).as_bytes(),
    )?;
    // Hydra's medians per clean pass: only run writes them, so only run computes them.
    let medians = evalbench_analyze::metrics::of_bundle(&bundle);
    write_atomic(
        &out.join(layout::HYDRA_METRICS),
        evalbench_report::summary::hydra::metrics(&summary, &medians).as_bytes(),
    )?;
    Ok(text)
}

/// How the runs in `out` that did not complete ended, warm-ups included.
fn runs_ended(out: &std::path::Path) -> Vec<evalbench_bundle::Ended> {
    let Ok(bundle) = evalbench_bundle::Bundle::open(out, evalbench_bundle::Limits::default()) else {
        return Vec::new();
    };
    bundle
        .every_run()
        .filter_map(|d| match &d.outcome {
            evalbench_bundle::Outcome::Incomplete { ended, .. } => Some(*ended),
            _ => None,
        })
        .collect()
}
