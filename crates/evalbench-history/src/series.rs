//! The history read back: per series (one pass of one benchmark on one
//! machine), one point per commit and the changes along it. The points and
//! changes are those `judge` made, commit by commit: stored by `history
//! add` and read back as they are ([`assemble`]), or replayed over stored
//! runs ([`build`]) where a history holds runs judged by no add (a history
//! written before judgements were kept).

use std::collections::BTreeMap;

use evalbench_analyze::verdict::{Kind, Spread};
use serde::{Deserialize, Serialize};

use crate::judge::{judge, Judged, Rule, RunInput, STEP_ALPHA};
use crate::store::Stored;

#[derive(Debug, Clone, Serialize)]
pub struct Commit {
    pub commit: String,
    /// Unix seconds.
    pub commit_time: i64,
    pub branch: Option<String>,
    pub machines: Vec<String>,
    /// Bundles added for this commit.
    pub bundles: usize,
    /// Each as `history add` was given it (a production evaluation's report
    /// names the evaluation), in the order added.
    pub sources: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into [`History::commits`].
    pub commit: usize,
    pub evaluated_s: Spread,
    /// The largest spans by median total, ms.
    pub top_spans: Vec<(String, f64)>,
    /// The largest steps on the critical path, by median over the runs.
    pub top_path: Vec<evalbench_analyze::over_runs::StepOverRuns>,
    /// Every span's median total over the commit's runs, ms.
    #[serde(skip)]
    pub span_medians: crate::medians::SpanMedians,
    /// A counted pass: nix's instructions over the commit's runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Spread>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub commit: String,
    pub pass: String,
    /// `evaluated` for the headline, `<process> <span>` for a span.
    pub what: String,
    pub kind: Kind,
    /// NaN (null in JSON) where there is no percentage: a counter from 0.
    #[serde(deserialize_with = "evalbench_analyze::spread::null_is_nan")]
    pub change_pct: f64,
    pub p_adjusted: Option<f64>,
    /// The commits the baseline held, and the runs on each side.
    pub baseline_commits: usize,
    pub runs_a: usize,
    pub runs_b: usize,
    /// What found it, exact, for the report to word (`report::words::change`).
    pub why: Why,
}

/// What a change was found by: its grounds, stored with it and worded
/// when shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The commit's runs against the commits before it: the verdict's grounds.
    Tested(evalbench_analyze::grounds::Grounds),
    /// A change point among the commits' medians of evaluated seconds,
    /// found when commit `found_when` was added: the medians (s) over the
    /// commits before it and from it on, and the permutation test's p.
    ChangePoint {
        found_when: String,
        #[serde(with = "evalbench_analyze::grounds::any_f64")]
        before_s: f64,
        #[serde(with = "evalbench_analyze::grounds::any_f64")]
        after_s: f64,
        #[serde(with = "evalbench_analyze::grounds::any_f64")]
        p: f64,
    },
    /// One of nix's exact counters against the commit before.
    Counter { name: String, grounds: evalbench_analyze::counters::CounterGrounds },
    /// nix's instructions (a counted pass) against the commit before: the
    /// medians, and the spread a change had to pass (percent).
    Instructions { a: f64, b: f64, threshold_pct: f64 },
}

#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub commits: Vec<Commit>,
    /// Pass name to its points, in commit order.
    pub passes: BTreeMap<String, Vec<Point>>,
    pub changes: Vec<Change>,
    /// Per pass, said when the run counts make a verdict impossible.
    pub power: Vec<String>,
    /// Per pass, which rule judged its times, and why.
    pub rules: Vec<PassRule>,
    /// The (benchmark, machine) series the selected runs hold.
    pub series: Vec<(String, String)>,
}

/// The rule that judged a pass's times.
#[derive(Debug, Clone, Serialize)]
pub struct PassRule {
    pub pass: String,
    /// `per-commit` or `e-divisive`.
    pub rule: &'static str,
    pub text: String,
}

/// Which series to read back; None is all.
#[derive(Debug, Clone, Default)]
pub struct Select {
    pub pass: Option<String>,
    pub benchmark: Option<String>,
    pub machine: Option<String>,
}

impl Select {
    /// Refuses a pass, benchmark or machine that no stored series has,
    /// naming those there are: a typo must not read as "no changes".
    pub fn check(&self, series: &[SeriesKey], db: &str) -> Result<(), crate::HistoryError> {
        let known = |f: &dyn Fn(&SeriesKey) -> String| -> Vec<String> {
            let mut v: Vec<String> = series.iter().map(f).collect();
            v.sort();
            v.dedup();
            v
        };
        let wanted: [(&str, &str, &Option<String>, Vec<String>); 3] = [
            ("pass", "passes", &self.pass, known(&|k| k.pass.clone())),
            ("benchmark", "benchmarks", &self.benchmark, known(&|k| k.benchmark.clone())),
            ("machine", "machines", &self.machine, known(&|k| k.machine.clone())),
        ];
        for (what, plural, want, there) in wanted {
            if let Some(w) = want.as_ref().filter(|w| !there.contains(w)) {
                let list = if there.is_empty() { "none (the history is empty)".to_string() } else { there.join(", ") };
                return Err(crate::HistoryError::Invalid(format!(
                    "{db}: no {what} {w:?} in the history; {plural} there: {list}"
                )));
            }
        }
        Ok(())
    }
}

/// A run's benchmark and machine, as a series shows them.
pub fn series_of(r: &Stored) -> (String, String) {
    (
        r.benchmark.clone().unwrap_or_else(|| "unknown benchmark".into()),
        r.machine.clone().unwrap_or_else(|| "unknown machine".into()),
    )
}

/// What one series is keyed by in the store and in [`assemble`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SeriesKey {
    pub benchmark: String,
    pub machine: String,
    pub pass: String,
}

impl RunInput {
    pub fn of(r: &Stored) -> RunInput {
        RunInput { evaluated_s: r.evaluated_s, spans: r.spans.clone(), counters: r.counters.clone(), path: Vec::new() }
    }
}

/// The commits of stored runs, ordered by commit time and then by when
/// their first run was added.
pub fn commits_of(rows: &[Stored]) -> Vec<Commit> {
    let mut sorted: Vec<&Stored> = rows.iter().collect();
    sorted.sort_by_key(|r| (r.commit_time, r.added_us, r.run_id));
    let mut commits: Vec<Commit> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut bundles: Vec<std::collections::BTreeSet<i64>> = Vec::new();
    for r in sorted {
        let i = *index.entry(&r.commit).or_insert_with(|| {
            commits.push(Commit {
                commit: r.commit.clone(),
                commit_time: r.commit_time,
                branch: r.branch.clone(),
                machines: Vec::new(),
                bundles: 0,
                sources: Vec::new(),
            });
            bundles.push(Default::default());
            commits.len() - 1
        });
        if bundles[i].insert(r.run_id) {
            commits[i].sources.push(r.source.clone());
        }
        if let Some(m) = &r.machine {
            if !commits[i].machines.contains(m) {
                commits[i].machines.push(m.clone());
            }
        }
    }
    for (c, b) in commits.iter_mut().zip(&bundles) {
        c.bundles = b.len();
    }
    commits
}

/// Every series of the stored runs, each judged commit by commit from its
/// first: what `history add` would have stored had it judged each as it
/// came. Series are judged apart, so on every core at once.
pub fn judge_all(rows: &[Stored]) -> BTreeMap<SeriesKey, Vec<Judged>> {
    let mut sorted: Vec<&Stored> = rows.iter().collect();
    sorted.sort_by_key(|r| (r.commit_time, r.added_us, r.run_id));
    let mut by_series: BTreeMap<SeriesKey, Vec<Judged>> = BTreeMap::new();
    for r in sorted {
        let (benchmark, machine) = series_of(r);
        let points = by_series.entry(SeriesKey { benchmark, machine, pass: r.pass.clone() }).or_default();
        match points.iter_mut().find(|p| p.commit == r.commit) {
            Some(p) => p.inputs.push(RunInput::of(r)),
            None => points.push(Judged::new(r.commit.clone(), r.commit_time, r.added_us, vec![RunInput::of(r)])),
        }
    }
    std::thread::scope(|sc| {
        let handles: Vec<_> = by_series
            .into_iter()
            .map(|(key, points)| {
                sc.spawn(move || {
                    let mut judged: Vec<Judged> = Vec::with_capacity(points.len());
                    for p in points {
                        let p = Judged::new(p.commit, p.commit_time, p.added_us, p.inputs);
                        let j = judge(&key.pass, &judged, p);
                        judged.push(j);
                    }
                    (key, judged)
                })
            })
            .collect();
        // A panic here is a bug: it goes on with its own message, never as a missing series.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    })
}

/// Judges every stored run's series from its first commit and reads them
/// back: the same history `add` keeps, for runs no `add` judged.
pub fn build(rows: Vec<Stored>, select: &Select) -> History {
    let commits = commits_of(&rows);
    assemble(commits, judge_all(&rows), select)
}

/// The selected series, judged, as one history: a series is one pass of
/// one benchmark on one machine (as Bencher keys results by benchmark and
/// testbed); when the selection holds several, each pass's name carries
/// its benchmark and machine (`cold-clean [hello @ ci-1]`).
pub fn assemble(commits: Vec<Commit>, judged: BTreeMap<SeriesKey, Vec<Judged>>, select: &Select) -> History {
    let judged: Vec<(SeriesKey, Vec<Judged>)> = judged
        .into_iter()
        .filter(|(k, _)| {
            select.benchmark.as_ref().is_none_or(|x| *x == k.benchmark)
                && select.machine.as_ref().is_none_or(|x| *x == k.machine)
        })
        .collect();
    let mut keys: Vec<(String, String)> =
        judged.iter().map(|(k, _)| (k.benchmark.clone(), k.machine.clone())).collect();
    keys.sort();
    keys.dedup();
    let several = keys.len() > 1;
    // Commits no selected series holds are not shown.
    let held: std::collections::BTreeSet<&str> =
        judged.iter().flat_map(|(_, v)| v.iter().map(|p| p.commit.as_str())).collect();
    let commits: Vec<Commit> = commits.into_iter().filter(|c| held.contains(c.commit.as_str())).collect();
    let index: BTreeMap<&str, usize> = commits.iter().enumerate().map(|(i, c)| (c.commit.as_str(), i)).collect();
    let mut passes = BTreeMap::new();
    let (mut changes, mut power, mut rules) = (Vec::new(), Vec::new(), Vec::new());
    for (key, points) in judged {
        if select.pass.as_ref().is_some_and(|p| *p != key.pass) {
            continue;
        }
        let name =
            if several { format!("{} [{} @ {}]", key.pass, key.benchmark, key.machine) } else { key.pass.clone() };
        if let Some((rule, note)) = rule_of(&name, &points) {
            rules.push(rule);
            power.extend(note);
        }
        // Moved, not copied: a page of 10,000 commits holds half a million span medians.
        let mut shown: Vec<Point> = Vec::with_capacity(points.len());
        for p in points {
            changes.extend(p.changes.into_iter().map(|c| Change { pass: name.clone(), ..c }));
            if let Some(&commit) = index.get(p.commit.as_str()) {
                let (evaluated_s, top_spans, top_path, span_medians, instructions) =
                    (p.evaluated_s, p.top_spans, p.top_path, p.span_medians, p.instructions);
                shown.push(Point { commit, evaluated_s, top_spans, top_path, span_medians, instructions });
            }
        }
        passes.insert(name, shown);
    }
    History { commits, passes, changes, power, rules, series: keys }
}

/// Which rule judged a series' times, as `show` says it.
fn rule_of(pass: &str, points: &[Judged]) -> Option<(PassRule, Option<String>)> {
    let steps = points.len().saturating_sub(1);
    if steps == 0 {
        return None;
    }
    // A counted pass's seconds are Valgrind's and not kept: its instructions are what is judged.
    if points.iter().any(|p| p.instructions.is_some()) {
        return Some((
            PassRule {
                pass: pass.to_string(),
                rule: "instructions",
                text: format!(
                    "{pass}: nix's instructions, each commit's against the commit before's, called past their measured \
                        spread ({}%) or {}x a commit's own; one run a commit suffices",
                    evalbench_analyze::instructions::SPREAD_PCT,
                    evalbench_analyze::instructions::SPREAD_TIMES
                ),
            },
            None,
        ));
    }
    let by_points = points.iter().filter(|p| p.rule == Rule::ChangePoint).count();
    // Change points name the series only where no commit had the runs for a
    // verdict of its own; otherwise the early commits, and those just after
    // a change (their baseline starts again), are the exception.
    if !points.iter().any(|p| p.rule == Rule::PerCommit) {
        return Some((
            PassRule {
                pass: pass.to_string(),
                rule: Rule::ChangePoint.as_str(),
                text: format!(
                    "{pass}: {by_points} of {steps} commits had too few runs for a verdict of their own; evaluated \
                        seconds judged as a series by change points (E-divisive means, permutation test at {:.4}, over \
                        the medians since the last change as each commit was added; spans not judged; seeded A/A \
                        series: about one false change in 30,000 commits)",
                    crate::changepoint::Params::default().alpha
                ),
            },
            None,
        ));
    }
    let note = (by_points > 0).then(|| {
        format!(
            "{pass}: {by_points} of {steps} commits had too few runs on a side for a verdict of their own at \
                {STEP_ALPHA} (5% over a horizon of {} commits), the first ones and those just after a change, and were \
                judged by change points; more runs per commit allow it sooner",
            crate::judge::HORIZON_COMMITS
        )
    });
    Some((
        PassRule {
            pass: pass.to_string(),
            rule: Rule::PerCommit.as_str(),
            text: format!(
                "{pass}: each commit's runs against the commits before it (Mann-Whitney, Holm over the spans, \
                    {STEP_ALPHA} a commit: 5% over a horizon of {} commits)",
                crate::judge::HORIZON_COMMITS
            ),
        },
        note,
    ))
}
