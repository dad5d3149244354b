//! `evalbench gate`: a deploy gate done so that it survives measurement
//! (unlike the gate whose claim of speed died under it, docs/gate.md): every failure named, every step measured, a
//! bundle to
//! inspect and compare.

use std::path::{Path, PathBuf};

use evalbench_host::outln;
use std::process::ExitCode;
use std::time::Instant;

use evalbench_harness::gate::{self, GateOpts, StepResult};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::Args)]
pub struct Args {
    /// The flake (a directory or flake reference).
    #[arg(default_value = ".")]
    pub flake: String,
    /// Attribute set of machines, each evaluated as `<ATTR>.<m>.drvPath` (default: nixosConfigurations' toplevels).
    #[arg(long)]
    pub machines: Option<String>,
    /// Attribute set of checks, each built (default: checks.x86_64-linux).
    #[arg(long)]
    pub checks: Option<String>,
    /// Steps at once (1 = a serial gate).
    #[arg(long, short, default_value_t = 1)]
    pub jobs: usize,
    /// Never start a step whose expected peak (from the last run) would go over this, e.g. 4G.
    /// Default: half of the memory available now.
    #[arg(long, value_parser = crate::size::parse_size)]
    pub mem_budget: Option<u64>,
    /// Use nix's evaluation cache.
    #[arg(long, value_enum, default_value = "on")]
    pub eval_cache: OnOff,
    /// Bundle directory: gate[.N]/ per run, summary, and the state file with each step's last peak.
    #[arg(long, short, default_value = "gate-out")]
    pub out: PathBuf,
    /// Run the gate on a built-in flake with a broken machine and a failing check: it must be red and name both.
    #[arg(long)]
    pub self_test: bool,
    /// No progress lines on stderr (the results table is still printed).
    #[arg(long, short)]
    pub quiet: bool,
}

fn gib(b: u64) -> String {
    format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let tmp;
    let (flake, machines) = if a.self_test {
        tmp = tempfile::tempdir()?;
        std::fs::write(tmp.path().join("flake.nix"), gate::SELF_TEST_FLAKE)?;
        (tmp.path().to_string_lossy().to_string(), Some(gate::SELF_TEST_MACHINES.to_string()))
    } else {
        (a.flake.clone(), a.machines.clone())
    };
    let flake_path = Path::new(&flake);
    let flake =
        if flake_path.exists() { std::path::absolute(flake_path)?.to_string_lossy().to_string() } else { flake };
    let opts = GateOpts {
        flake: PathBuf::from(&flake),
        machines,
        checks: a.checks.clone(),
        jobs: a.jobs.max(1),
        mem_budget: a.mem_budget.unwrap_or_else(|| evalbench_host::mem_available().unwrap_or(4 << 30) / 2),
        eval_cache: a.eval_cache == OnOff::On,
        out: if a.self_test {
            std::env::temp_dir().join(format!("evalbench-gate-self-test-{}", std::process::id()))
        } else {
            a.out.clone()
        },
    };
    let say = |m: &str| {
        if !a.quiet {
            eprintln!("evalbench gate: {m}");
        }
    };
    say(&format!(
        "{flake}: {} at once, memory budget {}, eval cache {}",
        opts.jobs,
        gib(opts.mem_budget),
        if opts.eval_cache { "on (steps may be answered from it: a warm gate)" } else { "off (every step evaluates)" }
    ));
    let steps = gate::discover(&opts)?;
    say(&format!("{} steps: {}", steps.len(), steps.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")));
    let t = Instant::now();
    let results = gate::run(&opts, &steps, &|m| say(m))?;
    let wall = t.elapsed().as_secs_f64();
    let dir = gate::write_bundle(&opts.out, &results, &opts, wall)?;
    // The steps' results are printed below either way; a summary that could
    // not be written is said, not hidden.
    if let Err(e) = crate::summarize::summarize_dir(&opts.out) {
        say(&format!("no summary.txt: {e}"));
    }
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    let mut w = evalbench_host::out::stdout();
    steps_table(&mut w, &failed, &results);
    let line = verdict_line(&failed, &results, (wall, &opts), &dir);
    if a.self_test {
        let ok = gate::self_test_passed(&results);
        let _ = std::fs::remove_dir_all(&opts.out);
        return if ok {
            outln!(
                w,
                "self-test passed: the gate is red and names machine broken and check fails, each with its error; the \
                    good steps passed"
            );
            crate::done(w)?;
            Ok(ExitCode::SUCCESS)
        } else {
            Err(anyhow::anyhow!(
                "self-test FAILED: expected exactly machine broken and check fails to fail; got: {line}"
            ))
        };
    }
    outln!(w, "{line}");
    crate::done(w)?;
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Each failed step's error, then every step's figures.
fn steps_table(w: &mut evalbench_host::out::Out<impl std::io::Write>, failed: &[&StepResult], results: &[StepResult]) {
    for r in failed {
        outln!(w, "FAILED {}: {}", r.step.name, r.error.as_deref().unwrap_or("(no message)").replace('\n', "\n    "));
    }
    for r in results {
        outln!(
            w,
            "{:<7} {:<40} eval cache {:<4}  wall {:>8.3} s  user {:>7.3} s  sys {:>7.3} s  peak {:>8.1} MiB",
            if r.ok { "ok" } else { "FAILED" },
            r.step.name,
            r.eval_cache,
            r.run.wall_s,
            r.run.user_s,
            r.run.sys_s,
            r.run.peak_bytes.unwrap_or(0) as f64 / 1048576.0
        );
    }
}

/// The gate's verdict, GREEN or RED, in one line.
fn verdict_line(failed: &[&StepResult], results: &[StepResult], (wall, opts): (f64, &GateOpts), dir: &Path) -> String {
    if failed.is_empty() {
        format!(
            "gate GREEN: {} steps passed in {wall:.2} s ({} at once, eval cache {}); bundle {}",
            results.len(),
            opts.jobs,
            if opts.eval_cache { "on" } else { "off" },
            dir.display()
        )
    } else {
        format!(
            "gate RED: {} of {} steps failed ({}) in {wall:.2} s; bundle {}",
            failed.len(),
            results.len(),
            failed.iter().map(|r| r.step.name.as_str()).collect::<Vec<_>>().join(", "),
            dir.display()
        )
    }
}
