//! One commit judged against the commits before it, so that `history add`
//! judges the commit it stores and `history show` reads what was judged
//! instead of judging a whole series again (10,000 commits read in well
//! under a second). `series::build` replays the same function over a whole
//! series, so what is stored and what is replayed are one rule.
//!
//! A judgement depends only on the commits before it, never on how many
//! follow: a verdict once stored stays true as the series grows.
//!
//! - **Per commit** (enough runs for a verdict): the commit's runs against
//!   the runs of the commits before it since the last change, at most
//!   [`BASELINE_COMMITS`] of them, with `compare`'s rules (exact
//!   Mann-Whitney, Holm within a family, the bootstrap interval, the
//!   floor) at a fixed [`STEP_ALPHA`]: 5% split over a horizon of
//!   [`HORIZON_COMMITS`] commits (Bonferroni), so an A/A series of up to
//!   that many commits flags nothing in at least 95% of series.
//! - **Change points** (too few runs for that: one run a commit, as most CI
//!   runs): E-divisive means over the commits' medians since the last
//!   change, at most [`WINDOW_COMMITS`] of them (`changepoint`), tested
//!   again as each commit arrives. A change is recorded at the commit where
//!   the new segment begins, when the commit that revealed it was added.
//! - nix's exact counters against the previous commit, without statistics.
//! - nix's instructions (a counted pass's series) against the previous
//!   commit, called past their measured spread (`analyze::instructions`):
//!   one run a commit suffices.
//!
//! A change resets the baseline: a step is flagged once, where it happened.

use std::collections::BTreeMap;

use evalbench_analyze::verdict::{judge as verdict, median, spread, Kind, Measured, Rules, Spread, ALPHA, TIME};
use serde::{Deserialize, Serialize};

use crate::changepoint::{e_divisive, Params};
use crate::series::{Change, Why};

/// How many commits before a commit make its baseline at most.
pub const BASELINE_COMMITS: usize = 30;
/// The series length the per-commit rule's 5% is split over.
pub const HORIZON_COMMITS: usize = 10_000;
/// Each commit's share of the 5%.
pub const STEP_ALPHA: f64 = ALPHA / HORIZON_COMMITS as f64;
/// How many commits' medians the change-point search sees at most.
pub const WINDOW_COMMITS: usize = 200;
/// The resolution of evaluated seconds, and the smallest span change that counts per run (50 µs).
const EVALUATED_FLOOR_S: f64 = 1e-6;
const SPAN_FLOOR_MS: f64 = 0.05;
/// Spans shown per point.
const TOP_SPANS: usize = 5;
/// A counted pass's instructions, kept among its run's counters under this name.
pub const INSTRUCTIONS: &str = "instructions";

/// What the judge keeps of one pass run: all a later commit's judgement reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInput {
    pub evaluated_s: Option<f64>,
    /// `<process> <span>` to its total, ms.
    pub spans: BTreeMap<String, f64>,
    /// nix's counters (empty when the run had none).
    pub counters: BTreeMap<String, f64>,
    /// The run's largest steps on its critical path ([`PATH_STEPS_KEPT`];
    /// empty for a run without a path, or added before paths were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<evalbench_analyze::path::PathStep>,
}

/// Steps of each run's path the history keeps: the answer shows three,
/// and a step among a commit's three largest by median is among nearly
/// every run's largest dozen (a run without it counts 0 for it).
pub const PATH_STEPS_KEPT: usize = 12;
/// Path steps shown per point: the answer's three.
const TOP_PATH: usize = 3;

/// The rule that judged a commit's times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rule {
    /// The first commit of a series: nothing to judge it against.
    #[serde(rename = "first")]
    First,
    #[serde(rename = "per-commit")]
    PerCommit,
    #[serde(rename = "e-divisive")]
    ChangePoint,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::First => "first",
            Rule::PerCommit => "per-commit",
            Rule::ChangePoint => "e-divisive",
        }
    }
}

/// A commit of one series (benchmark, machine, pass), judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judged {
    pub commit: String,
    /// Unix seconds.
    pub commit_time: i64,
    /// When its first run was added (Unix µs): orders commits of one time.
    pub added_us: i64,
    /// Stored apart from the judgement: only a later commit's judgement reads them.
    #[serde(skip, default)]
    pub inputs: Vec<RunInput>,
    pub evaluated_s: Spread,
    /// The largest spans by median total, ms.
    pub top_spans: Vec<(String, f64)>,
    /// The largest steps on the critical path by median over the commit's
    /// runs (`analyze::over_runs`: the figures summary.txt gives).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_path: Vec<evalbench_analyze::over_runs::StepOverRuns>,
    /// Every span's median total over the commit's runs, ms (stored apart: only the page reads them).
    #[serde(skip, default)]
    pub span_medians: crate::medians::SpanMedians,
    pub rule: Rule,
    /// The per-commit rule could not reach [`STEP_ALPHA`] with these runs.
    pub powerless: bool,
    /// The commit the baseline starts at once this one is judged.
    pub start: String,
    /// A counted pass: nix's instructions over the commit's runs (none
    /// stored before schema 2's counted passes: read as absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Spread>,
    /// The changes found when this commit was judged (a change point names an earlier commit).
    pub changes: Vec<Change>,
}

impl Judged {
    /// A commit's runs, not judged yet.
    pub fn new(commit: String, commit_time: i64, added_us: i64, inputs: Vec<RunInput>) -> Judged {
        let evaluated: Vec<f64> = inputs.iter().filter_map(|r| r.evaluated_s).collect();
        let mut per_span: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for r in &inputs {
            for (k, v) in &r.spans {
                per_span.entry(k).or_default().push(*v);
            }
        }
        let span_medians = crate::medians::SpanMedians::from_pairs(per_span.iter().map(|(k, v)| (*k, median(v))));
        let mut top: Vec<(String, f64)> = span_medians.iter().map(|(k, v)| (k.to_string(), v)).collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top.truncate(TOP_SPANS);
        let paths: Vec<&[evalbench_analyze::path::PathStep]> =
            inputs.iter().filter(|r| !r.path.is_empty()).map(|r| r.path.as_slice()).collect();
        let mut top_path = evalbench_analyze::over_runs::steps_over_runs(&paths);
        top_path.truncate(TOP_PATH);
        let counts = instruction_counts(&inputs);
        Judged {
            instructions: (!counts.is_empty()).then(|| spread(&counts)),
            top_path,
            start: commit.clone(),
            commit,
            commit_time,
            added_us,
            inputs,
            evaluated_s: spread(&evaluated),
            top_spans: top,
            span_medians,
            rule: Rule::First,
            powerless: false,
            changes: Vec::new(),
        }
    }
}

/// Judges `next` against `before` (the series' earlier commits in order;
/// the last [`WINDOW_COMMITS`] suffice). `pass` names the series in its changes.
pub fn judge(pass: &str, before: &[Judged], mut next: Judged) -> Judged {
    next.changes.clear();
    let Some(last) = before.last() else {
        next.rule = Rule::First;
        next.powerless = false;
        next.start = next.commit.clone();
        return next;
    };
    // Where the baseline starts: the last change, or as far back as was kept.
    let start = before.iter().rposition(|p| p.commit == last.start).unwrap_or(0);
    next.start = last.start.clone();
    // A counted pass's series keeps no seconds (Valgrind's): its
    // instructions and counters are all there is to judge.
    let mut changes = if next.instructions.is_some() && next.inputs.iter().all(|r| r.evaluated_s.is_none()) {
        next.rule = Rule::PerCommit;
        Vec::new()
    } else {
        time_steps(pass, before, start, &mut next)
    };
    counter_steps(pass, last, &next, &mut changes);
    instruction_steps(pass, last, &next, &mut changes);
    next.changes = changes;
    next
}

/// The evaluated seconds and spans of `next` against the commits from
/// `start` on: per commit where its runs allow a verdict, else by change
/// points; sets `next`'s rule, power and start.
fn time_steps(pass: &str, before: &[Judged], start: usize, next: &mut Judged) -> Vec<Change> {
    let i = before.len();
    let rules = Rules {
        alpha: STEP_ALPHA,
        min_change_pct: evalbench_analyze::verdict::MIN_CHANGE_PCT,
        interval_only_when_significant: true,
        between_sessions: None,
        interleaved: false,
        ..Rules::default()
    };
    let base = &before[start.max(i.saturating_sub(BASELINE_COMMITS))..];
    let a: Vec<f64> = base.iter().flat_map(|p| p.inputs.iter().filter_map(|r| r.evaluated_s)).collect();
    let b: Vec<f64> = next.inputs.iter().filter_map(|r| r.evaluated_s).collect();
    let head = verdict(
        "evaluated",
        vec![Measured { what: "evaluated".into(), a, b, floor_abs: EVALUATED_FLOOR_S }],
        "s",
        TIME,
        rules,
    );
    next.powerless = head.power.is_some();
    let mut changes = Vec::new();
    if next.powerless {
        next.rule = Rule::ChangePoint;
        let from = start.max((i + 1).saturating_sub(WINDOW_COMMITS));
        // A full window slides: its oldest commits are not where the last change was.
        let sliding = from > start;
        if let Some(at) = change_points(pass, &before[from..], next, sliding, &mut changes) {
            next.start = at;
        }
    } else {
        next.rule = Rule::PerCommit;
        let runs_a: usize = base.iter().map(|p| p.inputs.len()).sum();
        let (sa, sb) = (span_samples(base.iter().flat_map(|p| &p.inputs)), span_samples(next.inputs.iter()));
        let items: Vec<Measured> = sa
            .iter()
            .filter_map(|(k, va)| {
                sb.get(k).map(|vb| Measured { what: k.clone(), a: va.clone(), b: vb.clone(), floor_abs: SPAN_FLOOR_MS })
            })
            .collect();
        let spans = verdict("spans", items, "ms", TIME, rules);
        for (what, v) in head.verdicts.iter().chain(spans.verdicts.iter()) {
            if v.kind.is_change() {
                next.start = next.commit.clone();
                changes.push(Change {
                    commit: next.commit.clone(),
                    pass: pass.to_string(),
                    what: what.clone(),
                    kind: v.kind,
                    change_pct: v.change_pct,
                    p_adjusted: v.p_adjusted,
                    baseline_commits: base.len(),
                    runs_a,
                    runs_b: next.inputs.len(),
                    why: Why::Tested(v.grounds.clone()),
                });
            }
        }
    }
    changes
}

/// A counted pass's runs' instructions (none for any other pass).
fn instruction_counts(inputs: &[RunInput]) -> Vec<f64> {
    inputs.iter().filter_map(|r| r.counters.get(INSTRUCTIONS).copied()).collect()
}

/// nix's instructions against the previous commit's (a counted pass's
/// series): a change past their spread is a step, flagged where it happened.
fn instruction_steps(pass: &str, before: &Judged, at: &Judged, changes: &mut Vec<Change>) {
    let (a, b) = (instruction_counts(&before.inputs), instruction_counts(&at.inputs));
    if a.is_empty() || b.is_empty() {
        return;
    }
    let (change, threshold, kind) = evalbench_analyze::instructions::judge(&a, &b);
    if !kind.is_change() {
        return;
    }
    changes.push(Change {
        commit: at.commit.clone(),
        pass: pass.to_string(),
        what: format!("nix {INSTRUCTIONS}"),
        kind,
        change_pct: evalbench_bundle::num::round_to(change, 4),
        p_adjusted: None,
        baseline_commits: 1,
        runs_a: a.len(),
        runs_b: b.len(),
        why: Why::Instructions { a: median(&a), b: median(&b), threshold_pct: threshold.pct() },
    });
}

/// Span totals per run, 0 where a run lacks the span.
fn span_samples<'a>(runs: impl Iterator<Item = &'a RunInput>) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut n = 0;
    for (i, r) in runs.enumerate() {
        for (k, v) in &r.spans {
            let e = out.entry(k.clone()).or_insert_with(|| vec![0.0; i]);
            e.resize(i, 0.0);
            e.push(*v);
        }
        n = i + 1;
    }
    for v in out.values_mut() {
        v.resize(n, 0.0);
    }
    out
}

/// The change points among `window` and `next` (a commit's median each),
/// as changes at the first commit of each new segment against the segment
/// before. Returns the commit where the last new segment begins.
fn change_points(
    pass: &str,
    window: &[Judged],
    next: &Judged,
    sliding: bool,
    changes: &mut Vec<Change>,
) -> Option<String> {
    let kept: Vec<&Judged> = window.iter().chain(std::iter::once(next)).filter(|q| q.evaluated_s.n > 0).collect();
    let values: Vec<f64> = kept.iter().map(|q| q.evaluated_s.median).collect();
    let params = Params::default();
    let mut found = e_divisive(&values, params);
    // A split that leaves the fewest values allowed after it may be pinned
    // there by that bound, the true step lying later (a step 3 commits
    // back, with 4 required, shows as a split 4 back): it waits for the
    // next commit, which places it.
    found.retain(|c| values.len() - c.at > params.min_size);
    // In a window that slides, every add shows the search a new handful of
    // oldest commits to split off: tested again and again at that edge, by
    // chance some split (seen: "3.0% slower from c4580", 5 commits against
    // 195, found when c4774 was added). A real step was in the newer half
    // of the window for WINDOW_COMMITS / 2 adds, and found there.
    if sliding {
        found.retain(|c| c.at * 2 >= values.len());
    }
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(found.iter().map(|c| c.at));
    bounds.push(values.len());
    for (k, c) in found.iter().enumerate() {
        let (before, after) = (&values[bounds[k]..c.at], &values[c.at..bounds[k + 2]]);
        let (ma, mb) = (median(before), median(after));
        let change = (mb / ma - 1.0) * 100.0;
        let kind = if mb > ma { Kind::Slower } else { Kind::Faster };
        changes.push(Change {
            commit: kept[c.at].commit.clone(),
            pass: pass.to_string(),
            what: "evaluated".into(),
            kind,
            change_pct: evalbench_bundle::num::round_to(change, 3),
            p_adjusted: Some(evalbench_bundle::num::round_to(c.p_value, 6)),
            baseline_commits: before.len(),
            runs_a: before.len(),
            runs_b: after.len(),
            why: Why::ChangePoint { found_when: next.commit.clone(), before_s: ma, after_s: mb, p: c.p_value },
        });
    }
    found.last().map(|c| kept[c.at].commit.clone())
}

/// A counter's value at a commit: the one value all its runs agree on. None
/// when the runs disagree (then it is no exact count) or lack it.
fn exact_value(p: &Judged, name: &str) -> Option<f64> {
    let mut v = p.inputs.iter().map(|r| r.counters.get(name).copied());
    let first = v.next()??;
    v.all(|x| x == Some(first)).then_some(first)
}

/// nix's headline counters against the previous commit: exact counts, so
/// any step is a change, without statistics (and without spending the
/// series' 5%). Counters that are times or differ between runs are left to
/// the evaluated seconds.
fn counter_steps(pass: &str, before: &Judged, at: &Judged, changes: &mut Vec<Change>) {
    use evalbench_analyze::counters::{exact_headline, judge_exact};
    for name in exact_headline() {
        let (Some(a), Some(b)) = (exact_value(before, name), exact_value(at, name)) else { continue };
        let v = judge_exact(name, a, b);
        if v.kind == Kind::Same {
            continue;
        }
        changes.push(Change {
            commit: at.commit.clone(),
            pass: pass.to_string(),
            what: format!("nix {name}"),
            kind: v.kind,
            // From 0 there is no percentage (null in JSON, "–" in Markdown).
            change_pct: v.change_pct.unwrap_or(f64::NAN),
            p_adjusted: None,
            baseline_commits: 1,
            runs_a: before.inputs.len(),
            runs_b: at.inputs.len(),
            why: Why::Counter { name: name.to_string(), grounds: v.grounds },
        });
    }
}
