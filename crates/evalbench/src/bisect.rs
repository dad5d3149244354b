//! `evalbench bisect`: which commit moved nix's counters. Each probe checks
//! a commit of the flake's repository out beside the user's tree (as
//! `run --baseline-rev` does), evaluates it once through `evalbench run`
//! (one cold-clean run, the lab started and stopped for it), and reads
//! nix's exact counters from its bundle; the search is
//! `evalbench_analyze::bisect`. Every probe's bundle is kept under
//! OUT/<commit>/, so a rerun with the same OUT reuses them (resumes).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, Context};

use crate::baseline_rev::git;
use evalbench_analyze::bisect::{bisect, Commit, Probed};
use evalbench_bundle::layout;
use evalbench_report::bisect::{short, Counted, Found, MinorFound, Probe};

#[derive(clap::Args)]
pub struct Args {
    /// The flake: a directory in the git repository whose commits are bisected.
    #[arg(long)]
    pub flake: PathBuf,
    /// A revision where the counters were as they should be.
    pub good: String,
    /// A later revision where they are not (GOOD must be an ancestor of BAD).
    pub bad: String,
    /// Judge only this counter (e.g. nrFunctionCalls). Default: every exact counter GOOD and BAD
    /// both have (times and the heap's size are not exact and never judged).
    #[arg(long, conflicts_with = "measure")]
    pub counter: Option<String>,
    /// Bisect nix's instructions: each probe also runs the cold-counted pass (nix under Valgrind,
    /// 15-30x slower), and the counter judged is `instructions`, moved past --threshold (default
    /// here: the counts' measured spread, 0.25%). Sees what nix's call counts cannot: a builtin
    /// doing more work per call, another nix, another allocator.
    #[arg(long, conflicts_with_all = ["measure", "counter"])]
    pub instructions: bool,
    /// Bisect a time instead of nix's counters: `evaluated`, or a step of the critical path as
    /// the tables print it ("eval resolve"). Each probe is a session of its own, the commit
    /// interleaved with the last one known good, judged by compare's verdict (docs/bisect.md).
    #[arg(long, value_name = "evaluated|STEP")]
    pub measure: Option<String>,
    /// With --measure: runs a side in each session.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(2..))]
    pub repeat: u32,
    /// With --measure: a session that gives no verdict is made again this many times, then the
    /// commit is named undecided.
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// A counter moved when it changed by more than this percentage between two commits (with or
    /// without %): a commit that changes a comment or a harmless attribute moves a few thunks.
    /// Default: 1% (evalbench_analyze::verdict::MIN_CHANGE_PCT); with --instructions, 0.25%.
    #[arg(long, value_name = "PCT", value_parser = crate::percent::parse, allow_hyphen_values = true)]
    pub threshold: Option<f64>,
    /// Where each probe's bundle (OUT/<commit>/) and the result (bisect.txt, bisect.json,
    /// bisect.md) are written; a rerun with the same OUT reuses the probes made.
    #[arg(short, long, default_value = "bisect-out")]
    pub out: PathBuf,
    /// Also add every counted probe to this history (a SQLite file or postgresql://...), under its
    /// commit and author date, as the benchmark --flake names: `history show` then shows the step.
    #[arg(long, value_name = "DB")]
    pub history: Option<String>,
    /// The nix the lab runs for every probe (as `run --nix`).
    #[arg(long, value_name = "PATH", env = "EVALBENCH_NIX")]
    pub nix: Option<PathBuf>,
    /// Where each probe is evaluated: the lab (started and stopped for each probe), or a Gradient
    /// deployment (--target-config), whose project evaluates the head of the branch it watches:
    /// each probe first pushes its commit there (--push, --push-branch).
    #[arg(long, value_enum, default_value = "lab")]
    pub target: crate::run::TargetKind,
    /// With --target gradient: the deployment's description, as `run --target-config`.
    #[arg(long, value_name = "FILE", required_if_eq("target", "gradient"))]
    pub target_config: Option<PathBuf>,
    /// With --target gradient: the repository the deployment's project watches (a remote's name or
    /// URL, as `git push` takes it), pushed to from --flake's repository.
    #[arg(long, value_name = "REMOTE", required_if_eq("target", "gradient"))]
    pub push: Option<String>,
    /// With --target gradient: the branch the project watches. Its head is put back when the
    /// bisect ends (deleted again if it did not exist).
    #[arg(long, value_name = "BRANCH", required_if_eq("target", "gradient"))]
    pub push_branch: Option<String>,
    /// Print bisect.json on stdout instead of the text.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// GOOD, then every commit on the first-parent path from it to BAD.
fn line(flake: &Path, good: &str, bad: &str) -> anyhow::Result<Vec<Commit>> {
    let resolve = |rev: &str, what: &str| {
        git(flake, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .with_context(|| format!("{what} {rev}: no such commit in the repository of {}", flake.display()))
    };
    let (g, b) = (resolve(good, "GOOD")?, resolve(bad, "BAD")?);
    if git(flake, &["merge-base", "--is-ancestor", &g, &b]).is_err() {
        bail!("GOOD {good} is not an ancestor of BAD {bad}: nothing lies between them to bisect");
    }
    let mut hashes = vec![g.clone()];
    let after = git(flake, &["rev-list", "--first-parent", "--reverse", &format!("{g}..{b}")])?;
    hashes.extend(after.lines().map(String::from));
    if hashes.last() != Some(&b) {
        bail!(
            "BAD {bad} is not on the first-parent path from GOOD {good} (a merge's second parent): give a BAD on the \
                first-parent line"
        );
    }
    if hashes.len() < 2 {
        bail!("GOOD and BAD are the same commit: nothing to bisect");
    }
    hashes
        .into_iter()
        .map(|h| {
            let shown = git(flake, &["show", "-s", "--format=%s%x00%aI", &h])?;
            let (subject, date) = shown.split_once('\0').unwrap_or((shown.as_str(), ""));
            Ok(Commit { commit: h, subject: subject.to_string(), date: date.to_string() })
        })
        .collect()
}

/// One probe: the commit evaluated once through `evalbench run`, or its
/// bundle from an earlier bisect in the same OUT. The seconds it took.
fn probe(a: &Args, c: &Commit, out: &Path, push: &mut Option<crate::bisect_push::Pushed>) -> (Probed, f64) {
    let t = Instant::now();
    let dir = out.join(&c.commit);
    let counted = |dir: &Path| {
        let pass = dir.join("cold-clean");
        let run = evalbench_bundle::RunInfo::read(&pass.join(layout::RUN_JSON)).ok();
        let mut c = evalbench_analyze::counters::of_run(run.as_ref(), &pass).filter(|c| !c.is_empty())?;
        if a.instructions {
            // A probe of a bisect on instructions is whole only with its count.
            let i = evalbench_bundle::instructions::read(&dir.join("cold-counted")).ok()??;
            c.insert(evalbench_history::judge::INSTRUCTIONS.to_string(), i.total() as f64);
        }
        Some(c)
    };
    if let Some(c) = counted(&dir) {
        return (Probed::Counted(c), 0.0);
    }
    let result = (|| -> anyhow::Result<Probed> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| dir.display().to_string())?;
        }
        let exe = std::env::current_exe().context("finding evalbench itself")?;
        let mut cmd = Command::new(exe);
        // The clean pass first: it writes the commit's derivations, so that
        // the counted one never counts a first write of them.
        let passes = if a.instructions { "cold-clean,cold-counted" } else { "cold-clean" };
        cmd.args(["run", "--passes", passes, "--repeat", "1", "--warmup", "0", "--no-report", "--no-pcap"]);
        // Dropped (the checkout removed) when the probe ends.
        let _tree;
        if let Some(p) = push.as_mut() {
            p.put(&c.commit)?;
            cmd.arg("--target")
                .arg("gradient")
                .arg("--target-config")
                .arg(a.target_config.as_ref().context("--target-config")?);
        } else {
            _tree = crate::baseline_rev::Worktree::add(&a.flake, &c.commit)?;
            cmd.arg("--flake").arg(&_tree.flake);
        }
        cmd.arg("--out").arg(&dir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        if let Some(n) = &a.nix {
            cmd.arg("--nix").arg(n);
        }
        let o = cmd.output().context("running evalbench run")?;
        let err = String::from_utf8_lossy(&o.stderr);
        if let Some(c) = counted(&dir) {
            return Ok(Probed::Counted(c));
        }
        // What the evaluation itself said, where it ended (run.json), before what the run printed last.
        let said = evalbench_bundle::RunInfo::read(&dir.join("cold-clean").join(layout::RUN_JSON)).ok().map(|r| {
            format!(
                "the evaluation ended {}{}",
                r.status.as_deref().unwrap_or("without a status"),
                r.runner.and_then(|x| x.error).map(|e| format!(": {e}")).unwrap_or_default()
            )
        });
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        Ok(Probed::Skipped(format!(
            "the evaluation gave no counters (evalbench run exited {}): {}",
            o.status.code().unwrap_or(-1),
            said.as_deref().unwrap_or(last)
        )))
    })();
    let p = result.unwrap_or_else(|e| Probed::Skipped(format!("{e:#}")));
    (p, t.elapsed().as_secs_f64())
}

/// Set by SIGINT: the probe under way stops (its `evalbench run` got the
/// signal too), the probes made are kept, and the bisect ends.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Flags that do not go with the target: a deployment has its own nix and
/// one pipeline; the lab needs nothing pushed.
fn refuse_target_flags(a: &Args) -> anyhow::Result<()> {
    use crate::run::TargetKind;
    if a.target == TargetKind::Gradient {
        if a.measure.is_some() {
            bail!(
                "--measure with --target gradient: a time is bisected by interleaving a commit with the last good one \
                    in one session, two pipelines side by side (run --baseline), which one deployment is not; bisect \
                    nix's counters on a deployment (docs/bisect.md)"
            );
        }
        if let Some(n) = &a.nix {
            bail!(
                "--nix {} (or EVALBENCH_NIX) with --target gradient: a deployment evaluates with its own nix; --nix \
                    chooses the lab's",
                n.display()
            );
        }
    } else if a.push.is_some() || a.push_branch.is_some() || a.target_config.is_some() {
        bail!(
            "--push, --push-branch and --target-config are for --target gradient; the lab evaluates each probe's \
                commit checked out beside your tree"
        );
    }
    Ok(())
}

/// Each commit a probe counted, added to the history `db` in the commits'
/// order (a probe reused from an earlier bisect was added then).
fn add_to_history(
    a: &Args,
    commits: &[Commit],
    probes: &[(usize, Probed)],
    db: &str,
    say: &dyn Fn(String),
) -> anyhow::Result<()> {
    let benchmark = std::path::absolute(&a.flake).unwrap_or_else(|_| a.flake.clone()).display().to_string();
    // In the commits' order, not the probes': commits made in one second
    // share a commit time, and the history orders those by when they were added.
    let mut probes: Vec<&(usize, Probed)> = probes.iter().collect();
    probes.sort_by_key(|(i, _)| *i);
    for (i, p) in probes {
        if !matches!(p, Probed::Counted(_)) {
            continue;
        }
        let c = &commits[*i];
        let dir = a.out.join(&c.commit);
        let b = evalbench_bundle::Bundle::open(&dir, evalbench_bundle::Limits::default())?;
        let added = crate::history::Added {
            commit: &c.commit,
            commit_time: Some(&c.date),
            branch: None,
            machine: None,
            benchmark: Some(benchmark.clone()),
            db,
        };
        match crate::history::add(&b, &dir, added) {
            Ok(_) => {}
            // A probe reused from an earlier bisect was added then.
            Err(e)
                if e.downcast_ref::<evalbench_history::HistoryError>()
                    .is_some_and(|h| matches!(h, evalbench_history::HistoryError::Duplicate { .. })) =>
            {
                say(format!("{}: already in {db}", short(&c.commit)));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    refuse_target_flags(&a)?;
    let commits = line(&a.flake, &a.good, &a.bad)?;
    let threshold = a.threshold.unwrap_or(if a.instructions {
        evalbench_analyze::instructions::SPREAD_PCT
    } else {
        evalbench_analyze::verdict::MIN_CHANGE_PCT
    });
    std::fs::create_dir_all(&a.out).with_context(|| a.out.display().to_string())?;
    let n = commits.len();
    let say = |s: String| {
        if !a.quiet {
            eprintln!("evalbench bisect: {s}");
        }
    };
    if let Some(m) = &a.measure {
        return timed(&a, &commits, m, &say);
    }
    say(format!(
        "{n} commits from GOOD {} to BAD {} (first parent); counters move past {}%; one evaluation a probe, about {} \
            probes",
        short(&commits[0].commit),
        short(&commits[n - 1].commit),
        threshold,
        2 + (n as f64 - 1.0).log2().ceil() as usize
    ));
    let mut push = pusher(&a, &say)?;
    // SAFETY: the handler only stores to an atomic.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
    let names = if a.instructions {
        Some(vec![evalbench_history::judge::INSTRUCTIONS.to_string()])
    } else {
        a.counter.clone().map(|c| vec![c])
    };
    let mut seconds: Vec<f64> = vec![0.0; n];
    let mut made = 0usize;
    let outcome = {
        let mut each = |i: usize| {
            made += 1;
            let (p, s) = probe(&a, &commits[i], &a.out, &mut push);
            if INTERRUPTED.load(Ordering::Relaxed) {
                // Not taken for a skip: the probe was stopped, and a rerun makes it again.
                drop(push.take());
                eprintln!(
                    "evalbench bisect: interrupted; the {} probes made before are kept in {}: the same command resumes",
                    made - 1,
                    a.out.display()
                );
                std::process::exit(130);
            }
            seconds[i] = s;
            let what = probe_line(&p, names.as_deref());
            let took = if s > 0.0 { format!("{s:.1} s") } else { "from an earlier bisect".into() };
            say(format!("probe {made}: {} {} ({took}): {what}", short(&commits[i].commit), commits[i].subject));
            if made == 1 && s > 0.0 {
                let left = (n as f64 - 1.0).log2().ceil() + 1.0;
                say(format!("a probe takes {s:.0} s here: about {:.0} s for the {left:.0} more expected", s * left));
            }
            p
        };
        bisect(n, names.as_deref(), threshold, &mut each)
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err((i, why)) => bail!(
            "{} {}: {why}: an end of the range must evaluate",
            if i == 0 { "GOOD" } else { "BAD" },
            commits[i].commit
        ),
    };
    counter_was_counted(a.counter.as_deref(), &outcome)?;
    let doc = document(&a, &commits, &outcome, &seconds);
    if let Some(db) = &a.history {
        add_to_history(&a, &commits, &outcome.probes, db, &say)?;
    }
    write_counted(&a, &doc)?;
    Ok(ExitCode::SUCCESS)
}

/// `--counter NAME`: some probe must have counted it, or the name is wrong.
fn counter_was_counted(counter: Option<&str>, outcome: &evalbench_analyze::bisect::Outcome) -> anyhow::Result<()> {
    if let Some(c) = counter {
        if !outcome.probes.iter().any(|(_, p)| matches!(p, Probed::Counted(m) if m.contains_key(c))) {
            bail!(
                "--counter {c}: no probe counted it; nix's counters are named as NIX_SHOW_STATS writes them \
                    (nrFunctionCalls, nrThunks, gc.totalBytes, ...)"
            );
        }
    }
    Ok(())
}

/// `--measure`: a time bisected (`bisect_time`), its files written and printed.
fn timed(a: &Args, commits: &[Commit], measure: &str, say: &dyn Fn(String)) -> anyhow::Result<ExitCode> {
    let (text, json) = crate::bisect_time::run(a, commits, measure, say)?;
    evalbench_bundle::write_atomic(&a.out.join("bisect.json"), json.as_bytes())?;
    evalbench_bundle::write_atomic(&a.out.join("bisect.txt"), text.as_bytes())?;
    crate::emit(if a.json { &json } else { &text })?;
    Ok(ExitCode::SUCCESS)
}

/// `--push REMOTE --push-branch BRANCH`: where each probe's commit is pushed.
fn pusher(a: &Args, say: &dyn Fn(String)) -> anyhow::Result<Option<crate::bisect_push::Pushed>> {
    match (&a.push, &a.push_branch) {
        (Some(remote), Some(branch)) => {
            let p = crate::bisect_push::Pushed::new(&a.flake, remote, branch)?;
            say(format!("each probe's commit is pushed to {}", p.describe()));
            Ok(Some(p))
        }
        _ => Ok(None),
    }
}

/// A probe's line: the first counter judged (nrFunctionCalls unless one was
/// named), or why it was skipped.
fn probe_line(p: &Probed, names: Option<&[String]>) -> String {
    match p {
        Probed::Counted(c) => {
            let shown = names.and_then(|v| v.first()).map_or("nrFunctionCalls", String::as_str);
            c.get(shown).map_or_else(
                || "counted".to_string(),
                |v| format!("{shown} {}", evalbench_report::figures::grouped(*v)),
            )
        }
        Probed::Skipped(why) => format!("skipped: {why}"),
    }
}

/// bisect.json's document of a counters' bisect.
fn document<'a>(
    a: &Args,
    commits: &'a [Commit],
    outcome: &'a evalbench_analyze::bisect::Outcome,
    seconds: &[f64],
) -> Counted<'a> {
    let n = commits.len();
    Counted {
        flake: a.flake.display().to_string(),
        good: &commits[0],
        bad: &commits[n - 1],
        commits: n,
        counters: &outcome.counters,
        judged: &outcome.judged,
        minor: outcome
            .minor
            .iter()
            .map(|m| MinorFound { from: &commits[m.from], to: &commits[m.to], moved: &m.moved })
            .collect(),
        threshold_pct: outcome.threshold_pct,
        differ: outcome.differ,
        found: outcome
            .steps
            .iter()
            .map(|s| Found {
                commit: &commits[s.at],
                before: &commits[s.before],
                among: s.among.iter().map(|&i| &commits[i]).collect(),
                moved: &s.moved,
            })
            .collect(),
        probes: outcome
            .probes
            .iter()
            .map(|(i, p)| Probe { commit: &commits[*i], probed: p, seconds: seconds[*i] })
            .collect(),
    }
}

/// bisect.json, bisect.txt and bisect.md into OUT, and one of them printed.
fn write_counted(a: &Args, doc: &Counted<'_>) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(doc).context("bisect.json")? + "\n";
    let text = evalbench_report::bisect::counted_text(doc);
    evalbench_bundle::write_atomic(&a.out.join("bisect.json"), json.as_bytes())?;
    evalbench_bundle::write_atomic(&a.out.join("bisect.txt"), text.as_bytes())?;
    evalbench_bundle::write_atomic(
        &a.out.join("bisect.md"),
        evalbench_report::bisect::counted_markdown(doc).as_bytes(),
    )?;
    crate::emit(if a.json { &json } else { &text })?;
    Ok(())
}
