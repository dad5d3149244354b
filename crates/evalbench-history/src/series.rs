//! The history read back: per pass, one point per commit (its runs'
//! evaluated seconds and span totals), and the changes along the series.
//!
//! A commit is judged against a baseline: the runs of the commits before it
//! since the last change, at most [`BASELINE_COMMITS`] of them. Against the
//! previous commit alone, 5 runs a side could never pass the correction a
//! series needs (the exact test's smallest p at 5 vs 5 is 0.0079; eleven
//! steps at 5% leave 0.0045 each). The rules are `compare`'s (exact
//! Mann-Whitney, Holm within a family, a bootstrap interval that excludes 1,
//! the floor), with the family-wise 5% split over the series' steps
//! (Bonferroni), so an A/A series of any length flags nothing in 95% of
//! series. A change resets the baseline: a step is flagged once, at the
//! commit where it happened.

use std::collections::BTreeMap;

use evalbench_analyze::verdict::{judge, median, spread, Kind, Measured, Rules, Spread, ALPHA, TIME};
use serde::Serialize;

use crate::changepoint::{e_divisive, Params};
use crate::store::Stored;

/// How many commits before a commit make its baseline at most.
pub const BASELINE_COMMITS: usize = 30;
/// The resolution of evaluated seconds, and the smallest span change that counts per run (50 µs).
const EVALUATED_FLOOR_S: f64 = 1e-6;
const SPAN_FLOOR_MS: f64 = 0.05;
/// Spans shown per point.
const TOP_SPANS: usize = 5;

#[derive(Debug, Clone, Serialize)]
pub struct Commit {
    pub commit: String,
    /// Unix seconds.
    pub commit_time: i64,
    pub branch: Option<String>,
    pub machines: Vec<String>,
    /// Bundles added for this commit.
    pub bundles: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into [`History::commits`].
    pub commit: usize,
    pub evaluated_s: Spread,
    /// The largest spans by median total, ms.
    pub top_spans: Vec<(String, f64)>,
    /// Every span's median total over the commit's runs, ms.
    #[serde(skip)]
    pub span_medians: BTreeMap<String, f64>,
    #[serde(skip)]
    pub runs: Vec<Stored>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub commit: String,
    pub pass: String,
    /// `evaluated` for the headline, `<process> <span>` for a span.
    pub what: String,
    pub kind: Kind,
    pub change_pct: f64,
    pub p_adjusted: Option<f64>,
    /// The commits the baseline held, and the runs on each side.
    pub baseline_commits: usize,
    pub runs_a: usize,
    pub runs_b: usize,
    pub text: String,
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
    /// Refuses a pass, benchmark or machine that no stored run has, naming
    /// those there are: a typo must not read as "no changes".
    pub fn check(&self, rows: &[Stored], db: &str) -> Result<(), crate::HistoryError> {
        let known = |f: &dyn Fn(&Stored) -> String| -> Vec<String> {
            let mut v: Vec<String> = rows.iter().map(f).collect();
            v.sort();
            v.dedup();
            v
        };
        let wanted: [(&str, &str, &Option<String>, Vec<String>); 3] = [
            ("pass", "passes", &self.pass, known(&|r| r.pass.clone())),
            ("benchmark", "benchmarks", &self.benchmark, known(&|r| series_of(r).0)),
            ("machine", "machines", &self.machine, known(&|r| series_of(r).1)),
        ];
        for (what, plural, want, there) in wanted {
            if let Some(w) = want.as_ref().filter(|w| !there.contains(w)) {
                let list = if there.is_empty() { "none (the history is empty)".to_string() } else { there.join(", ") };
                return Err(crate::HistoryError::Invalid(format!("{db}: no {what} {w:?} in the history; {plural} there: {list}")));
            }
        }
        Ok(())
    }
}

/// A run's benchmark and machine, as a series shows them.
fn series_of(r: &Stored) -> (String, String) {
    (r.benchmark.clone().unwrap_or_else(|| "unknown benchmark".into()), r.machine.clone().unwrap_or_else(|| "unknown machine".into()))
}

/// Orders the stored runs by commit time, then by when they were added, and
/// judges each commit against its baseline. A series is one pass of one
/// benchmark on one machine (as Bencher keys results by benchmark and
/// testbed): when the selected runs hold several, each pass's name carries
/// its benchmark and machine (`cold-clean [hello @ ci-1]`).
pub fn build(mut rows: Vec<Stored>, select: &Select) -> History {
    let only_pass = select.pass.as_deref();
    rows.retain(|r| {
        let (b, m) = series_of(r);
        select.benchmark.as_ref().is_none_or(|x| *x == b) && select.machine.as_ref().is_none_or(|x| *x == m)
    });
    let mut keys: Vec<(String, String)> = rows.iter().map(series_of).collect();
    keys.sort();
    keys.dedup();
    let several = keys.len() > 1;
    let mut commits: Vec<Commit> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut bundles: Vec<std::collections::BTreeSet<i64>> = Vec::new();
    let mut by_pass: BTreeMap<String, BTreeMap<usize, Vec<Stored>>> = BTreeMap::new();
    rows.sort_by_key(|r| (r.commit_time, r.added_us, r.run_id));
    for r in rows {
        let i = *index.entry(r.commit.clone()).or_insert_with(|| {
            commits.push(Commit { commit: r.commit.clone(), commit_time: r.commit_time, branch: r.branch.clone(), machines: Vec::new(), bundles: 0 });
            bundles.push(Default::default());
            commits.len() - 1
        });
        bundles[i].insert(r.run_id);
        if let Some(m) = &r.machine {
            if !commits[i].machines.contains(m) {
                commits[i].machines.push(m.clone());
            }
        }
        if only_pass.is_none_or(|p| p == r.pass) {
            let key = if several {
                let (b, m) = series_of(&r);
                format!("{} [{b} @ {m}]", r.pass)
            } else {
                r.pass.clone()
            };
            by_pass.entry(key).or_default().entry(i).or_default().push(r);
        }
    }
    for (c, b) in commits.iter_mut().zip(&bundles) {
        c.bundles = b.len();
    }
    let mut passes = BTreeMap::new();
    let mut changes = Vec::new();
    let mut power = Vec::new();
    let mut rules = Vec::new();
    // Passes judged by change points split the 5% between them.
    let series = by_pass.len().max(1);
    // Passes are judged apart, so on every core at once.
    let judged: Vec<Judged> = std::thread::scope(|sc| {
        let commits = &commits;
        let handles: Vec<_> = by_pass
            .into_iter()
            .map(|(pass, points)| {
                sc.spawn(move || {
                    let points: Vec<Point> = points.into_iter().map(|(commit, runs)| point(commit, runs)).collect();
                    let (mut ch, mut pw) = (Vec::new(), Vec::new());
                    let rule = judge_series(&pass, &points, commits, series, &mut ch, &mut pw);
                    (pass, points, ch, pw, rule)
                })
            })
            .collect();
        // A panic here is a bug: it goes on with its own message, never as a missing pass.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    for (pass, points, ch, pw, rule) in judged {
        changes.extend(ch);
        power.extend(pw);
        rules.extend(rule);
        passes.insert(pass, points);
    }
    History { commits, passes, changes, power, rules, series: keys }
}

/// A pass judged: its name, points, changes, power notes and rule.
type Judged = (String, Vec<Point>, Vec<Change>, Vec<String>, Option<PassRule>);

fn point(commit: usize, runs: Vec<Stored>) -> Point {
    let evaluated: Vec<f64> = runs.iter().filter_map(|r| r.evaluated_s).collect();
    let mut per_span: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &runs {
        for (k, v) in &r.spans {
            per_span.entry(k).or_default().push(*v);
        }
    }
    let span_medians: BTreeMap<String, f64> = per_span.iter().map(|(k, v)| (k.to_string(), median(v))).collect();
    let mut top: Vec<(String, f64)> = span_medians.iter().map(|(k, v)| (k.clone(), *v)).collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(TOP_SPANS);
    Point { commit, evaluated_s: spread(&evaluated), top_spans: top, span_medians, runs }
}

/// Span totals per run of these points, 0 where a run lacks the span.
fn span_samples(points: &[&Point]) -> BTreeMap<String, Vec<f64>> {
    let runs: Vec<&Stored> = points.iter().flat_map(|p| p.runs.iter()).collect();
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        for (k, v) in &r.spans {
            let e = out.entry(k.clone()).or_insert_with(|| vec![0.0; i]);
            e.resize(i, 0.0);
            e.push(*v);
        }
    }
    for v in out.values_mut() {
        v.resize(runs.len(), 0.0);
    }
    out
}

fn judge_series(
    pass: &str,
    points: &[Point],
    commits: &[Commit],
    series: usize,
    changes: &mut Vec<Change>,
    power: &mut Vec<String>,
) -> Option<PassRule> {
    let steps = points.len().saturating_sub(1);
    if steps == 0 {
        return None;
    }
    let rules =
        Rules { alpha: ALPHA / steps as f64, min_change_pct: 1.0, interval_only_when_significant: true, between_sessions: None, interleaved: false };
    let mut start = 0usize;
    let mut powerless = 0usize;
    let mut timed = Vec::new();
    for i in 1..points.len() {
        let from = start.max(i.saturating_sub(BASELINE_COMMITS));
        let base: Vec<&Point> = points[from..i].iter().collect();
        let a: Vec<f64> = base.iter().flat_map(|p| p.runs.iter().filter_map(|r| r.evaluated_s)).collect();
        let b: Vec<f64> = points[i].runs.iter().filter_map(|r| r.evaluated_s).collect();
        let head = judge("evaluated", vec![Measured { what: "evaluated".into(), a, b, floor_abs: EVALUATED_FLOOR_S }], "s", TIME, rules);
        if head.power.is_some() {
            powerless += 1;
        }
        let (sa, sb) = (span_samples(&base), span_samples(&[&points[i]]));
        let items: Vec<Measured> = sa
            .iter()
            .filter_map(|(k, va)| sb.get(k).map(|vb| Measured { what: k.clone(), a: va.clone(), b: vb.clone(), floor_abs: SPAN_FLOOR_MS }))
            .collect();
        let spans = judge("spans", items, "ms", TIME, rules);
        let runs_a = base.iter().map(|p| p.runs.len()).sum();
        let mut flagged = false;
        for (what, v) in head.verdicts.iter().chain(spans.verdicts.iter()) {
            if v.kind.is_change() {
                flagged = true;
                timed.push(Change {
                    commit: commits[points[i].commit].commit.clone(),
                    pass: pass.to_string(),
                    what: what.clone(),
                    kind: v.kind,
                    change_pct: v.change_pct,
                    p_adjusted: v.p_adjusted,
                    baseline_commits: base.len(),
                    runs_a,
                    runs_b: points[i].runs.len(),
                    text: v.text.clone(),
                });
            }
        }
        if flagged {
            start = i;
        }
        counter_steps(pass, &points[i - 1], &points[i], commits, changes);
    }
    // Most commits too few runs for the per-commit rule (one run a commit,
    // as most CI runs): the series is judged as a whole instead.
    if powerless * 2 > steps {
        let p = Params { alpha: Params::default().alpha / series as f64, ..Params::default() };
        changes.extend(change_points(pass, points, commits, p));
        return Some(PassRule {
            pass: pass.to_string(),
            rule: "e-divisive",
            text: format!(
                "{pass}: {powerless} of {steps} commits had too few runs for a verdict of their own; evaluated seconds judged as a series by change points (E-divisive means, permutation test at {:.4}; spans not judged)",
                p.alpha
            ),
        });
    }
    changes.extend(timed);
    if powerless > 0 {
        power.push(format!(
            "{pass}: {powerless} of {steps} commits had too few runs on a side for any verdict at {:.4} (5% over {steps} steps); more runs per commit, or more commits in the baseline, allow it",
            ALPHA / steps as f64
        ));
    }
    Some(PassRule {
        pass: pass.to_string(),
        rule: "per-commit",
        text: format!("{pass}: each commit's runs against the commits before it (Mann-Whitney, Holm over the spans, 5% over {steps} steps)"),
    })
}

/// The change points of a pass's evaluated seconds (a commit's median), as
/// changes at the first commit of each new segment, against the segment before.
fn change_points(pass: &str, points: &[Point], commits: &[Commit], p: Params) -> Vec<Change> {
    let kept: Vec<&Point> = points.iter().filter(|q| q.evaluated_s.n > 0).collect();
    let values: Vec<f64> = kept.iter().map(|q| q.evaluated_s.median).collect();
    let found = e_divisive(&values, p);
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(found.iter().map(|c| c.at));
    bounds.push(values.len());
    found
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (before, after) = (&values[bounds[k]..c.at], &values[c.at..bounds[k + 2]]);
            let (ma, mb) = (median(before), median(after));
            let change = (mb / ma - 1.0) * 100.0;
            let kind = if mb > ma { Kind::Slower } else { Kind::Faster };
            Change {
                commit: commits[kept[c.at].commit].commit.clone(),
                pass: pass.to_string(),
                what: "evaluated".into(),
                kind,
                change_pct: evalbench_bundle::num::round_to(change, 3),
                p_adjusted: Some(evalbench_bundle::num::round_to(c.p_value, 6)),
                baseline_commits: before.len(),
                runs_a: before.len(),
                runs_b: after.len(),
                text: format!(
                    "{kind} by {:.1}% from this commit on (change point: median {:.3} s over {} commits before, {:.3} s over {} from here; permutation p = {:.4})",
                    change.abs(),
                    ma,
                    before.len(),
                    mb,
                    after.len(),
                    c.p_value
                ),
            }
        })
        .collect()
}

/// A counter's value at a point: the one value all its runs agree on. None
/// when the runs disagree (then it is no exact count) or lack it.
fn exact_value(p: &Point, name: &str) -> Option<f64> {
    let mut v = p.runs.iter().map(|r| r.counters.get(name).copied());
    let first = v.next()??;
    v.all(|x| x == Some(first)).then_some(first)
}

/// nix's headline counters against the previous commit: exact counts, so
/// any step is a change, without statistics (and without spending the
/// series' 5%). Counters that are times or differ between runs are left to
/// the evaluated seconds.
fn counter_steps(pass: &str, before: &Point, at: &Point, commits: &[Commit], changes: &mut Vec<Change>) {
    use evalbench_analyze::counters::{exact_headline, judge_exact};
    for name in exact_headline() {
        let (Some(a), Some(b)) = (exact_value(before, name), exact_value(at, name)) else { continue };
        let v = judge_exact(name, a, b);
        if v.kind == Kind::Same {
            continue;
        }
        changes.push(Change {
            commit: commits[at.commit].commit.clone(),
            pass: pass.to_string(),
            what: format!("nix {name}"),
            kind: v.kind,
            // From 0 there is no percentage (null in JSON, "–" in Markdown).
            change_pct: v.change_pct.unwrap_or(f64::NAN),
            p_adjusted: None,
            baseline_commits: 1,
            runs_a: before.runs.len(),
            runs_b: at.runs.len(),
            text: v.text,
        });
    }
}
