//! `evalbench bisect --measure evaluated|STEP`: which commit made a time
//! slower, where nix's counters cannot see it (a flake input that takes
//! longer to fetch, a server setting). Each probe measures a commit
//! interleaved against the last commit known good, in one session (`run
//! --baseline`: the machine's drift falls on both alike), and reads
//! compare's verdict. Slower outside the noise is bad; inside the noise is
//! good only where the interval of the ratio stays below half the step
//! BAD showed against GOOD, else it is measured again (`--retries`) and
//! then named undecided, never guessed. BAD not slower than GOOD: nothing
//! to find. The search is `evalbench_analyze::bisect::bisect_time`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use evalbench_analyze::bisect::{bisect_time, Class, Commit};
use evalbench_report::bisect::{short, timed_text, Measured, Timed};

use crate::bisect::Args;

/// The verdict on `measure` in a session's compare.json: (kind, change %, ratio interval).
fn verdict(compare: &serde_json::Value, measure: &str) -> Option<(String, f64, [f64; 2])> {
    let pass = compare["passes"].as_array()?.iter().find(|p| p["pass_a"] == "cold-clean")?;
    let v = if measure == "evaluated" {
        &pass["wall"]
    } else {
        &pass["path"].as_array()?.iter().find(|r| r["what"] == measure)?["verdict"]
    };
    let i = v["ratio_interval"].as_array()?;
    Some((v["kind"].as_str()?.to_string(), v["change_pct"].as_f64()?, [i.first()?.as_f64()?, i.get(1)?.as_f64()?]))
}

/// One session: `commit` against `good`, interleaved, `repeat` runs a side.
fn session(a: &Args, commit: &Commit, good: &Commit, dir: &Path) -> anyhow::Result<serde_json::Value> {
    let tree = crate::baseline_rev::Worktree::add(&a.flake, &commit.commit)?;
    let base = crate::baseline_rev::Worktree::add(&a.flake, &good.commit)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let exe = std::env::current_exe().context("finding evalbench itself")?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "run",
        "--passes",
        "cold-clean",
        "--no-report",
        "--no-pcap",
        "--repeat",
        &a.repeat.to_string(),
        "--flake",
    ])
    .arg(&tree.flake)
    .arg("--baseline")
    .arg(&base.flake)
    .arg("--out")
    .arg(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(n) = &a.nix {
        cmd.arg("--nix").arg(n);
    }
    let o = cmd.output().context("running evalbench run --baseline")?;
    let path = dir.join("compare.json");
    let text = std::fs::read(&path).with_context(|| {
        let err = String::from_utf8_lossy(&o.stderr);
        format!(
            "no comparison (evalbench run exited {}): {}",
            o.status.code().unwrap_or(-1),
            err.lines().last().unwrap_or("")
        )
    })?;
    serde_json::from_slice(&text).with_context(|| path.display().to_string())
}

/// The bisection of a time; Ok(text, json).
pub fn run(a: &Args, commits: &[Commit], measure: &str, say: &dyn Fn(String)) -> anyhow::Result<(String, String)> {
    let n = commits.len();
    let expected = 1 + (n as f64 - 1.0).log2().ceil() as usize;
    say(intro(commits, measure, a.repeat, expected));
    let mut made: Vec<Measured> = Vec::new();
    // Half the step BAD showed against GOOD, as a ratio: a probe inside the noise is good only below it.
    let mut half_step: Option<f64> = None;
    let mut measure_one = |i: usize, good: usize| -> Class {
        for attempt in 0..=a.retries {
            let t = Instant::now();
            let dir = a.out.join("time").join(format!(
                "{}-vs-{}.{attempt}",
                short(&commits[i].commit),
                short(&commits[good].commit)
            ));
            let (class, v) = match session(a, &commits[i], &commits[good], &dir) {
                Err(e) => (Class::Undecided(format!("{e:#}")), None),
                Ok(doc) => match verdict(&doc, measure) {
                    None => {
                        (Class::Undecided(format!("compare.json has no verdict on {measure:?} for cold-clean")), None)
                    }
                    Some((kind, pct, iv)) => (classify(&kind, iv, half_step), Some((kind, pct, iv))),
                },
            };
            if i == n - 1 && good == 0 {
                if let (Class::Bad, Some((_, pct, _))) = (&class, &v) {
                    half_step = Some(1.0 + pct / 200.0);
                }
            }
            let s = t.elapsed().as_secs_f64();
            say(format!(
                "measured {} against {} ({s:.0} s): {}",
                short(&commits[i].commit),
                short(&commits[good].commit),
                v.as_ref().map_or_else(|| format!("{class:?}"), |(k, p, _)| format!("{measure} {p:+.1}%, {k}"))
            ));
            if made.is_empty() && expected > 1 {
                say(format!(
                    "a session takes {s:.0} s here: about {:.0} s for the {} more expected",
                    s * (expected - 1) as f64,
                    expected - 1
                ));
            }
            made.push(Measured {
                commit: commits[i].commit.clone(),
                against: commits[good].commit.clone(),
                class: class.clone(),
                kind: v.as_ref().map(|x| x.0.clone()),
                change_pct: v.as_ref().map(|x| x.1),
                ratio_interval: v.as_ref().map(|x| x.2),
                seconds: s,
            });
            if !matches!(class, Class::Undecided(_)) || attempt == a.retries {
                return class;
            }
        }
        unreachable!("the last attempt returns")
    };
    let o = bisect_time(n, &mut measure_one);
    let doc = Timed {
        measure,
        good: &commits[0],
        bad: &commits[n - 1],
        commits: n,
        repeat: a.repeat,
        differ: o.differ,
        undecided_ends: o.undecided_ends,
        found: o.step.as_ref().map(|s| &commits[s.at]),
        before: o.step.as_ref().map(|s| &commits[s.before]),
        among: o.step.as_ref().map(|s| s.among.iter().map(|&i| &commits[i]).collect()).unwrap_or_default(),
        probes: &made,
        sessions_tried: a.retries + 1,
    };
    Ok((timed_text(&doc), serde_json::to_string_pretty(&doc).context("bisect.json")? + "\n"))
}

/// What the search will do, said first.
fn intro(commits: &[Commit], measure: &str, repeat: u32, expected: usize) -> String {
    let n = commits.len();
    format!(
        "{n} commits from GOOD {} to BAD {} (first parent); {measure} measured, each probe a session of {} runs a side \
            interleaved with the last good commit; about {expected} sessions, more where one gives no verdict",
        short(&commits[0].commit),
        short(&commits[n - 1].commit),
        repeat
    )
}

/// A session's verdict as the search reads it: slower is bad; inside noise,
/// negligible, faster or the same is good, unless its interval reaches past
/// half the step BAD showed against GOOD (`half_step`, a ratio): then
/// undecided, as is no verdict.
fn classify(kind: &str, iv: [f64; 2], half_step: Option<f64>) -> Class {
    match kind {
        "slower" => Class::Bad,
        "inside noise" | "negligible" | "faster" | "same" => match half_step {
            Some(h) if iv[1] >= h => {
                Class::Undecided(format!("{kind}, but its interval reaches {:.3}, past half the step ({h:.3})", iv[1]))
            }
            _ => Class::Good,
        },
        other => Class::Undecided(format!("no verdict: {other}")),
    }
}
