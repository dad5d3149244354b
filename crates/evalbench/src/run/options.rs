//! `run`'s options: its flags parsed and checked once, into one value
//! (`RunOptions`) that the run's parts are derived from, each by one
//! function: the harness's options per side, the lab of a side, and the
//! provenance's plan. Every refusal is said here, before anything is
//! started or removed (hyperfine's `Options::from_cli_arguments`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use evalbench_harness::target::lab::Lab;
use evalbench_harness::{CaptureSet, RunOpts};
use evalbench_lab::control::LabConfig;
use evalbench_lab::setting::LabSettings;

use super::{Args, TargetKind};

/// What `run` measures.
pub enum RunTarget {
    Lab(LabPlan),
    /// A Gradient deployment, described by this file (--target-config).
    Gradient(PathBuf),
}

/// The lab (or the two labs) the run starts.
pub struct LabPlan {
    /// `--net`, `--eval-workers`, `--pg-setting`, ... as `lab up` takes them.
    pub config: LabConfig,
    /// `--lab-dir`: None, one the run makes for itself (and removes when it ends well).
    pub dir: Option<PathBuf>,
    pub keep: bool,
    /// The baseline's lab settings: `--baseline-lab-setting` on top of `--lab-setting`.
    pub baseline_settings: LabSettings,
}

/// What `--flake` is measured against, interleaved, in one session.
pub enum Baseline {
    /// `--baseline FLAKE`.
    Flake(PathBuf),
    /// `--baseline-rev REV`: `--flake` at that revision, checked out beside it.
    Rev(String),
    /// `--baseline-lab-setting` alone: `--flake` itself, its lab set otherwise.
    Settings,
}

pub struct RunOptions {
    /// The bundle directory, absolute (with a baseline: the directory of a/ and b/).
    pub out: PathBuf,
    pub target: RunTarget,
    /// None: the embedded hello flake.
    pub flake: Option<PathBuf>,
    pub baseline: Option<Baseline>,
    pub fail_on_regression: Option<f64>,
    /// `--allow-missing`: the gate passes what one side lacks.
    pub allow_missing: bool,
    pub passes: Vec<String>,
    pub capture: CaptureSet,
    pub repeat: usize,
    pub repeat_instrumented: usize,
    pub repeat_counted: usize,
    pub warmup: usize,
    pub timeout: Duration,
    /// Render report/ (`--no-report` turns it off).
    pub report: bool,
    /// Every step on stderr, not one line a run (`-v`).
    pub verbose: bool,
}

impl RunOptions {
    /// The flags, checked together: a refusal names the flags at fault.
    pub fn from_args(mut a: Args) -> anyhow::Result<RunOptions> {
        let out = std::path::absolute(&a.out).with_context(|| a.out.display().to_string())?;
        let baseline = match (&a.baseline, &a.baseline_rev) {
            (Some(flake), _) => Some(Baseline::Flake(flake.clone())),
            (None, Some(rev)) => Some(Baseline::Rev(rev.clone())),
            (None, None) if !a.baseline_lab_setting.is_empty() => Some(Baseline::Settings),
            (None, None) => None,
        };
        if a.fail_on_regression.is_some() && baseline.is_none() {
            anyhow::bail!(
                "--fail-on-regression needs a baseline to compare with: --baseline FLAKE, --baseline-rev REV or \
                    --baseline-lab-setting NAME=VALUE"
            );
        }
        let mut passes = std::mem::take(&mut a.passes);
        if a.counted {
            passes.extend(
                evalbench_bundle::layout::COUNTED_PASSES
                    .iter()
                    .filter(|p| !passes.iter().any(|q| q == *p))
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>(),
            );
        }
        evalbench_bundle::layout::check_passes(&passes).map_err(|e| anyhow::anyhow!("--passes: {e}"))?;
        let counted = passes.iter().any(|p| evalbench_bundle::layout::is_counted(p));
        let target = target(&a, counted, baseline.is_some())?;
        // The flags together first; then what they name, before anything starts.
        for (flag, flake) in [("--flake", &a.flake), ("--baseline", &a.baseline)] {
            if let Some(f) = flake {
                check_flake(flag, f)?;
            }
        }
        Ok(RunOptions {
            out,
            target,
            flake: a.flake,
            baseline,
            fail_on_regression: a.fail_on_regression,
            allow_missing: a.allow_missing,
            passes,
            capture: CaptureSet {
                perf: !a.no_perf,
                strace: !a.no_strace,
                pcap: !a.no_pcap,
                nix_trace: !a.no_nix_trace,
                bare: a.bare,
            },
            repeat: a.repeat as usize,
            repeat_instrumented: a.repeat_instrumented as usize,
            repeat_counted: a.repeat_counted as usize,
            warmup: a.warmup as usize,
            timeout: Duration::from_secs(a.timeout_s),
            report: !a.no_report,
            verbose: a.verbose,
        })
    }

    /// What the binary knows of a side before its target is started:
    /// evalbench, the plan, the session, the start.
    pub fn provenance(&self, session: &str, interleaved_with: Option<String>) -> evalbench_bundle::Provenance {
        use evalbench_bundle::provenance::{Evalbench, Plan, Provenance};
        Provenance {
            evalbench: Evalbench {
                version: Some(env!("CARGO_PKG_VERSION").into()),
                git_rev: option_env!("EVALBENCH_GIT_REV").map(String::from),
            },
            plan: Plan {
                passes: self.passes.clone(),
                repeat_clean: Some(self.repeat),
                repeat_instrumented: Some(self.repeat_instrumented),
                repeat_counted: Some(self.repeat_counted),
                warmup_clean: Some(self.warmup),
                captures_off: Some(self.capture.off()),
                eval_workers: match &self.target {
                    RunTarget::Lab(l) => Some(l.config.eval_workers),
                    RunTarget::Gradient(_) => None,
                },
            },
            started: Some(
                jiff::Timestamp::now()
                    .round(jiff::Unit::Second)
                    .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string()),
            ),
            session: Some(session.to_string()),
            interleaved_with,
            ..Provenance::default()
        }
    }

    /// The harness's options for the side whose bundle goes to `dir`.
    pub fn harness(&self, dir: PathBuf, provenance: evalbench_bundle::Provenance) -> RunOpts {
        RunOpts {
            out: dir,
            passes: self.passes.clone(),
            capture: self.capture,
            repeat: self.repeat,
            repeat_instrumented: self.repeat_instrumented,
            repeat_counted: self.repeat_counted,
            warmup: self.warmup,
            provenance,
            timeout: self.timeout,
        }
    }
}

impl LabPlan {
    /// The lab directory of a side (`label` empty for one side).
    pub fn dir_for(&self, label: &str, bundle_dir: &Path) -> PathBuf {
        match &self.dir {
            Some(d) if label.is_empty() => d.clone(),
            Some(d) => d.join(label),
            None => default_lab_dir(bundle_dir),
        }
    }

    /// One lab for one flake (`None`: the embedded hello flake), named `name`.
    pub fn lab(
        &self,
        flake: Option<&Path>,
        name: &str,
        lab_dir: PathBuf,
        settings: LabSettings,
    ) -> anyhow::Result<Lab> {
        if let Some(parent) = lab_dir.parent() {
            std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
        }
        let path = match flake {
            Some(f) => f.to_path_buf(),
            None => evalbench_lab::flake::hello_flake(&lab_dir.with_extension("hello-flake"))?,
        };
        let mut lab = Lab::new(lab_dir, path, LabConfig { lab_settings: settings, ..self.config.clone() });
        // The flake as given names the benchmark; the embedded one by a name of its own, not its temporary path.
        lab.flake_label = Some(name.to_string());
        Ok(lab)
    }
}

/// Each run's lab of its own: two runs never share one, whatever their --out.
fn default_lab_dir(out: &Path) -> PathBuf {
    let abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    PathBuf::from(format!("/var/tmp/evalbench/lab-{:08x}-{}", evalbench_host::dir_hash(&abs), std::process::id()))
}

/// A flake to evaluate: a directory holding flake.nix, checked before
/// anything is started (refused, named, with nothing left behind).
fn check_flake(flag: &str, flake: &Path) -> anyhow::Result<()> {
    let meta = std::fs::metadata(flake).with_context(|| format!("{flag} {}", flake.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("{flag} {}: not a directory (a flake is a directory holding flake.nix)", flake.display());
    }
    if !flake.join("flake.nix").is_file() {
        anyhow::bail!("{flag} {}: no flake.nix in it", flake.display());
    }
    Ok(())
}

/// The target a run's flags name, each flag it cannot take refused.
fn target(a: &Args, counted: bool, has_baseline: bool) -> anyhow::Result<RunTarget> {
    match a.target {
        TargetKind::Lab => {
            let config = a.lab.config();
            if counted && config.eval_max_rss.is_some() {
                anyhow::bail!(
                    "counted passes cannot recycle evaluators (--eval-max-rss): a recycled nix is killed, and \
                        Valgrind writes a count only when a process exits"
                );
            }
            let mut baseline_settings = config.lab_settings;
            for s in &a.baseline_lab_setting {
                baseline_settings.set(s)?;
            }
            Ok(RunTarget::Lab(LabPlan { config, dir: a.lab_dir.clone(), keep: a.keep_lab, baseline_settings }))
        }
        TargetKind::Gradient => {
            if has_baseline {
                anyhow::bail!("--baseline interleaves two labs; it is not available with --target gradient");
            }
            let cfg = a.target_config.clone().context("--target gradient needs --target-config FILE")?;
            if counted {
                anyhow::bail!(
                    "counted passes (--counted, cold-counted, warm-counted) run the lab's nix under Valgrind; they \
                        are not available with --target gradient"
                );
            }
            if !a.lab.pg.settings.is_empty() {
                anyhow::bail!(
                    "--pg-setting is for the lab's own PostgreSQL; a Gradient deployment's server is configured \
                        where it runs"
                );
            }
            Ok(RunTarget::Gradient(cfg))
        }
    }
}
