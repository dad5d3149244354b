//! Honest verdicts on two sets of measurements. "Faster" or "slower" only
//! when two tests agree that the difference is not run-to-run noise: the
//! Mann-Whitney U test (exact for small samples), corrected with Holm's
//! step-down method over the family of verdicts it is read with (the spans
//! of a pass, its statements, the passes' headlines), and a bootstrap
//! interval of the ratio of medians that excludes 1. A change under a floor
//! (1% of the baseline, and the measurement's resolution or more) is
//! "negligible". One run on a side means no noise estimate, and no verdict.
//!
//! Why a correction: a pass has about a hundred spans and statements; tested
//! one by one at p < 0.05, identical inputs would always show some "faster".
//! Holm holds the chance of any false verdict in a family to 5%, which is
//! what an A/A comparison (same input on both sides) measures.

use serde::Serialize;

use crate::grounds::{Grounds, Rule, Side, Tested};
use crate::reason::Reason;

pub use crate::mann_whitney::{mann_whitney, smallest_p};
pub use crate::spread::{bootstrap_ratio, median, spread, Spread};

pub const ALPHA: f64 = 0.05;

/// What a verdict says. Serialized as the words the JSON has always had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Kind {
    #[serde(rename = "faster")]
    Faster,
    #[serde(rename = "slower")]
    Slower,
    #[serde(rename = "less")]
    Less,
    #[serde(rename = "more")]
    More,
    /// An exact count, equal on both sides.
    #[serde(rename = "same")]
    Same,
    #[serde(rename = "inside noise")]
    InsideNoise,
    #[serde(rename = "negligible")]
    Negligible,
    #[serde(rename = "no noise estimate")]
    NoNoiseEstimate,
    /// Not judged: the machine was busy beside a side's runs (`machine`).
    #[serde(rename = "withheld")]
    Withheld,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Faster => "faster",
            Kind::Slower => "slower",
            Kind::Less => "less",
            Kind::More => "more",
            Kind::Same => "same",
            Kind::InsideNoise => "inside noise",
            Kind::Negligible => "negligible",
            Kind::NoNoiseEstimate => "no noise estimate",
            Kind::Withheld => "withheld",
        }
    }
    /// A change called real: faster, slower, less or more.
    pub fn is_change(self) -> bool {
        matches!(self, Kind::Faster | Kind::Slower | Kind::Less | Kind::More)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The words of a family of times, and of amounts (bytes, counts).
pub const TIME: (Kind, Kind) = (Kind::Faster, Kind::Slower);
pub const AMOUNT: (Kind, Kind) = (Kind::Less, Kind::More);

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verdict {
    pub a: Spread,
    pub b: Spread,
    /// (median B / median A - 1) × 100.
    pub change_pct: f64,
    /// 95% bootstrap interval of median B / median A.
    pub ratio_interval: Option<(f64, f64)>,
    /// Two-sided Mann-Whitney U p-value, before any correction.
    pub p_value: Option<f64>,
    /// The p-value after Holm's correction over the verdict's family.
    pub p_adjusted: Option<f64>,
    /// The smallest change that counts, in the unit: the larger of the
    /// relative floor (of A's median) and the absolute one.
    pub floor: f64,
    pub kind: Kind,
    /// Why it reads so, as a table's word (`Reason::label`).
    #[serde(default)]
    pub reason: crate::reason::Reason,
    /// What decided it, exact, for the report to word (`grounds`); its
    /// JSON carries the words in their place (`report::output::worded`).
    #[serde(skip)]
    pub grounds: Grounds,
}

/// What every verdict is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// Family-wise error rate, controlled with Holm's step-down correction.
    pub alpha: f64,
    /// Changes smaller than this percentage of A's median are negligible.
    pub min_change_pct: f64,
    /// Bootstrap the interval only for items whose adjusted p passes: a
    /// history of thousands of comparisons cannot afford 2,000 resamples
    /// each. Such items are then "inside noise" even where the interval
    /// would have lain within the floor ("negligible").
    pub interval_only_when_significant: bool,
    /// A and B come from two sessions (`run`s), not one interleaved run: a
    /// change no larger than this fraction is the machine's between them.
    /// Runs of one session share its minutes, so their spread says nothing
    /// of how far another session's median lies (docs/sessions.md).
    pub between_sessions: Option<f64>,
    /// A and B were measured interleaved in one session (`run --baseline`):
    /// the machine's drift fell on both alike, so a side's drift is no
    /// reason to doubt a change, and the drift check is not applied.
    pub interleaved: bool,
    /// Between sessions: the largest drift measured in the pass, as a
    /// fraction (`drift::pass_bound`); a change no larger is not called.
    pub pass_drift: Option<f64>,
    /// A side's runs were made on a busy machine (`machine`): no time
    /// verdict at all, whatever the tests say.
    pub withheld: bool,
    /// Between sessions, in the row's unit: a row that moved by less than
    /// this is inside the drift between sessions, whatever its percentage (a
    /// hundredth of the pass's evaluated seconds, for its spans, statements
    /// and path steps). A row of 4 ms in a 330 ms evaluation moved 20.3%
    /// between two sessions of one flake (bench/sessions.sh): small rows
    /// differ between sessions by more than the allowance, large ones do not.
    pub session_floor: Option<f64>,
}

/// The negligible floor, its one home: a change smaller than this
/// percentage of A's median is negligible, real or not (`compare
/// --min-change`; the gate and history judge with it too).
pub const MIN_CHANGE_PCT: f64 = 1.0;
/// And for a span or statement, smaller than this many microseconds
/// (`compare --min-abs-us`).
pub const MIN_ABS_US: f64 = 50.0;

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            alpha: ALPHA,
            min_change_pct: MIN_CHANGE_PCT,
            interval_only_when_significant: false,
            between_sessions: None,
            interleaved: false,
            pass_drift: None,
            withheld: false,
            session_floor: None,
        }
    }
}

/// One thing measured on both sides, run by run.
#[derive(Debug, Clone)]
pub struct Measured {
    pub what: String,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    /// Absolute floor in the unit: the measurement's resolution, or more.
    pub floor_abs: f64,
}

/// A family of verdicts, judged together: within it the chance of any
/// false "faster/slower" is held to `alpha` (Holm).
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    pub name: String,
    /// Verdicts that were tested (two runs or more on both sides).
    pub tests: usize,
    pub correction: &'static str,
    /// Set when the run counts make any "faster/slower" impossible: said
    /// once for the family (its JSON carries the words: `report::output::worded`).
    #[serde(skip)]
    pub power: Option<Power>,
    #[serde(skip)]
    pub verdicts: Vec<(String, Verdict)>,
}

/// Why no item of a family can be called a change, whatever its runs show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Power {
    /// One run on a side: no noise estimate.
    OneRun,
    /// With `runs` (A, B) no single one of `tests` can pass Holm's
    /// correction: the smallest p those runs allow is `best`, not under
    /// `alpha / tests`; `need` runs a side would allow it.
    TooFewRuns { runs: (usize, usize), tests: usize, best: f64, alpha: f64, need: usize, words: (Kind, Kind) },
}

/// Holm's step-down adjusted p-values, in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let mut out = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Runs a side at which one change among `m` can pass Holm's correction.
pub fn runs_needed(m: usize, alpha: f64) -> usize {
    (2..=1000).find(|&n| smallest_p(n, n) < alpha / m.max(1) as f64).unwrap_or(1000)
}

/// Judges B against A for every item of a family: the exact Mann-Whitney
/// test per item, Holm's correction over the family, a bootstrap interval of
/// the ratio of medians that must exclude 1 as well, and a floor under which
/// a change is negligible. `words` are (better, worse): [`TIME`] for times,
/// [`AMOUNT`] for amounts.
pub fn judge(name: &str, items: Vec<Measured>, unit: &str, words: (Kind, Kind), rules: Rules) -> Family {
    judge_each(name, items, unit, words, rules, &|_| rules)
}

/// [`judge`], with each item held to rules of its own beside the family's
/// correction: a family spanning passes (the primary measures) where one
/// pass drifted or ran on a busy machine and another did not.
pub fn judge_each(
    name: &str,
    items: Vec<Measured>,
    unit: &str,
    words: (Kind, Kind),
    rules: Rules,
    of: &dyn Fn(usize) -> Rules,
) -> Family {
    let items = items
        .into_iter()
        .enumerate()
        .map(|(i, measured)| Item { measured, unit: unit.to_string(), words, rules: of(i) })
        .collect();
    judge_together(name, items, rules)
}

/// One item of a family judged together: what was measured, in which unit
/// and words, under which rules.
pub struct Item {
    pub measured: Measured,
    pub unit: String,
    pub words: (Kind, Kind),
    pub rules: Rules,
}

/// Judges items of several kinds (times, amounts) as one family: Holm's
/// correction over all of them, each verdict in its own unit and words.
/// The exploratory rows of a comparison are one such family.
pub fn judge_together(name: &str, items: Vec<Item>, rules: Rules) -> Family {
    let testable: Vec<usize> =
        (0..items.len()).filter(|&i| items[i].measured.a.len() >= 2 && items[i].measured.b.len() >= 2).collect();
    let p: Vec<f64> = testable.iter().map(|&i| mann_whitney(&items[i].measured.a, &items[i].measured.b)).collect();
    let adjusted = holm(&p);
    let m = testable.len();
    let untested = items.len() - m;
    let words = items.first().map_or(TIME, |it| it.words);
    let power = if m == 0 {
        // One run on a side: said once for the family, not on every line.
        (untested > 0).then_some(Power::OneRun)
    } else {
        let n1 = testable.iter().map(|&i| items[i].measured.a.len()).max().unwrap_or(0);
        let n2 = testable.iter().map(|&i| items[i].measured.b.len()).max().unwrap_or(0);
        let best = smallest_p(n1, n2);
        (best >= rules.alpha / m as f64).then(|| Power::TooFewRuns {
            runs: (n1, n2),
            tests: m,
            best,
            alpha: rules.alpha,
            need: runs_needed(m, rules.alpha),
            words,
        })
    };
    let mut tested = testable
        .iter()
        .zip(p.iter().zip(&adjusted))
        .map(|(&i, (&p, &q))| (i, (p, q)))
        .collect::<std::collections::HashMap<_, _>>();
    let verdicts = items
        .into_iter()
        .enumerate()
        .map(|(i, it)| {
            let v = verdict(&it.measured, tested.remove(&i), m, &it.unit, it.words, it.rules);
            (it.measured.what, v)
        })
        .collect();
    Family { name: name.to_string(), tests: m, correction: "holm", power, verdicts }
}

fn verdict(
    it: &Measured,
    p: Option<(f64, f64)>,
    m: usize,
    unit: &str,
    (better, worse): (Kind, Kind),
    rules: Rules,
) -> Verdict {
    let (sa, sb) = (spread(&it.a), spread(&it.b));
    // No NaN anywhere: 0 to 0 is no change; from 0 to anything has no percentage (null in JSON).
    let change = if sa.median != 0.0 {
        (sb.median / sa.median - 1.0) * 100.0
    } else if sb.median == 0.0 {
        0.0
    } else {
        f64::NAN
    };
    let floor = (rules.min_change_pct / 100.0 * sa.median.abs()).max(it.floor_abs);
    let grounds = Grounds {
        unit: unit.to_string(),
        change,
        a_median: sa.median,
        b_median: sb.median,
        floor,
        tested: None,
        interval: None,
        words: (better, worse),
        rule: Rule::NoEstimate,
    };
    let verdict = |kind: Kind, reason: Reason, p: Option<(f64, f64)>, grounds: Grounds| {
        Verdict {
            a: sa.clone(),
            b: sb.clone(),
            change_pct: change,
            ratio_interval: grounds.interval,
            p_value: p.map(|p| p.0),
            p_adjusted: p.map(|p| p.1),
            floor,
            kind,
            reason,
            grounds,
        }
        .rounded(unit)
    };
    let Some((p, q)) = p else {
        // Under the floor a change is negligible whatever the noise: no
        // estimate of it is needed to say it is too small to matter.
        return if (sb.median - sa.median).abs() < floor {
            verdict(Kind::Negligible, Reason::Tested, None, Grounds { rule: Rule::UnderFloorUntested, ..grounds })
        } else {
            verdict(Kind::NoNoiseEstimate, Reason::TooFewRuns, None, grounds)
        };
    };
    let tested = Some(Tested { p, adjusted: q, family: m });
    // Runs so few that no p the test gives could pass the threshold: a
    // change not called is then "too few runs", never "inside noise".
    let threshold = rules.alpha / m.max(1) as f64;
    let best = crate::mann_whitney::smallest_p(it.a.len(), it.b.len());
    let too_few = |kind: Kind, reason: Reason, rule: Rule| match (kind, rule) {
        (Kind::InsideNoise, Rule::Noise | Rule::NoiseByP) if best >= threshold => (
            Kind::InsideNoise,
            Reason::TooFewRuns,
            Rule::TooFewRuns { best, threshold, need: runs_needed(m, rules.alpha) },
        ),
        other => (other.0, reason, other.1),
    };
    if rules.interval_only_when_significant && q >= rules.alpha {
        let (kind, reason, rule) = too_few(Kind::InsideNoise, Reason::Tested, Rule::NoiseByP);
        return verdict(kind, reason, Some((p, q)), Grounds { tested, rule, ..grounds });
    }
    let (lo, hi) = bootstrap_ratio(&it.a, &it.b);
    let found = Found { change, diff: sb.median - sa.median, a_median: sa.median, floor, q, interval: (lo, hi) };
    let (kind, reason, rule) = decide(it, &found, (better, worse), rules);
    let (kind, reason, rule) = too_few(kind, reason, rule);
    verdict(kind, reason, Some((p, q)), Grounds { tested, interval: Some((lo, hi)), rule, ..grounds })
}

/// What the tests and the floor found of a tested item, for [`decide`].
struct Found {
    change: f64,
    /// Median B − median A, in the unit.
    diff: f64,
    a_median: f64,
    floor: f64,
    /// Holm's adjusted p.
    q: f64,
    /// The bootstrap interval of the ratio of medians.
    interval: (f64, f64),
}

/// The rule that decides a tested item: the machine's first (a busy side,
/// a side's drift, the pass's drift, the drift between sessions), which may
/// only hold back a change the tests call; then the tests and the floor.
fn decide(it: &Measured, f: &Found, (better, worse): (Kind, Kind), rules: Rules) -> (Kind, Reason, Rule) {
    let (change, diff, floor, (lo, hi)) = (f.change, f.diff, f.floor, f.interval);
    let rel_floor = if f.a_median != 0.0 { floor / f.a_median.abs() } else { f64::INFINITY };
    let significant = f.q < rules.alpha && (hi < 1.0 || lo > 1.0);
    // A change the tests call real and the floor does not call negligible:
    // the only kind the machine's rules below may hold back.
    let called = significant && diff.abs() >= floor;
    // A machine that drifted while one side ran (its later runs apart from
    // its earlier ones) moves that side's median by itself: a change no
    // larger than the drift is the machine's, not the change's.
    let drifted = [(Side::A, &it.a), (Side::B, &it.b)]
        .into_iter()
        .filter(|_| !rules.interleaved)
        .filter_map(|(side, v)| drift(v).map(|d| (side, d)))
        .max_by(|x, y| x.1 .0.abs().total_cmp(&y.1 .0.abs()));
    let between = !rules.interleaved && rules.between_sessions.is_some();
    if rules.withheld {
        (Kind::Withheld, Reason::Machine, Rule::Withheld)
    } else if let Some((side, (d, pd))) = drifted.filter(|(_, (d, _))| called && d.abs() * 100.0 >= change.abs()) {
        (Kind::InsideNoise, Reason::SideDrift, Rule::SideDrift { side, drift: d, p: pd })
    } else if let Some(d) = rules.pass_drift.filter(|d| {
        !rules.interleaved && called && change.abs() <= d * 100.0 && rules.between_sessions.is_none_or(|s| *d >= s)
    }) {
        (Kind::InsideNoise, Reason::PassDrift, Rule::PassDrift { drift: d })
    } else if let Some(fl) = rules.session_floor.filter(|fl| between && called && diff.abs() < *fl) {
        let allowance = rules.between_sessions.unwrap_or(0.0);
        (Kind::InsideNoise, Reason::BetweenSessions, Rule::SessionFloor { moved: diff.abs(), floor: fl, allowance })
    } else if let Some(s) = rules.between_sessions.filter(|s| called && change.abs() <= s * 100.0) {
        (Kind::InsideNoise, Reason::BetweenSessions, Rule::BetweenSessions { allowance: s })
    } else if significant && diff.abs() < floor {
        (Kind::Negligible, Reason::Tested, Rule::RealUnderFloor)
    } else if significant && diff < 0.0 {
        (better, Reason::Tested, Rule::Better)
    } else if significant {
        (worse, Reason::Tested, Rule::Worse)
    } else if lo >= 1.0 - rel_floor && hi <= 1.0 + rel_floor {
        (Kind::Negligible, Reason::Tested, Rule::WithinFloor)
    } else {
        (Kind::InsideNoise, Reason::Tested, Rule::Noise)
    }
}

impl Verdict {
    /// Figures in the unit at its precision; percentages to 3 places,
    /// ratios and p-values to 6. The grounds keep the exact values, which
    /// the sentence is written from.
    fn rounded(self, unit: &str) -> Verdict {
        use evalbench_bundle::num::{decimals, round_to};
        let d = decimals(unit);
        Verdict {
            a: self.a.rounded(d),
            b: self.b.rounded(d),
            change_pct: round_to(self.change_pct, 3),
            ratio_interval: self.ratio_interval.map(|(lo, hi)| (round_to(lo, 6), round_to(hi, 6))),
            p_value: self.p_value.map(|p| round_to(p, 6)),
            p_adjusted: self.p_adjusted.map(|p| round_to(p, 6)),
            floor: round_to(self.floor, d),
            ..self
        }
    }
}

/// Runs a side needs before its drift is checked (two blocks of four).
pub const DRIFT_MIN_RUNS: usize = 8;

/// A side's drift: its runs, in the order they ran, cut into consecutive
/// blocks of about seven (two to four blocks), whose medians span this
/// share of the side's median, when the blocks differ (Kruskal-Wallis,
/// p < [`ALPHA`]); with the p. Runs on a shared machine are not steady:
/// back-to-back bundles of one input here had blocks 24% apart within one
/// bundle, and read "faster by 8.0%, outside noise" against each other.
pub fn drift(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    if n < DRIFT_MIN_RUNS {
        return None;
    }
    let k = (n / 7).clamp(2, 4);
    let blocks: Vec<&[f64]> = (0..k).map(|i| &v[i * n / k..(i + 1) * n / k]).collect();
    let p = crate::mann_whitney::kruskal_wallis(&blocks);
    let medians: Vec<f64> = blocks.iter().map(|b| median(b)).collect();
    let (lo, hi) = medians.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &m| (lo.min(m), hi.max(m)));
    let m = median(v);
    (p < ALPHA && m != 0.0).then(|| ((hi - lo) / m.abs(), p))
}

/// One verdict on its own (a family of one), for a time: smaller is faster.
pub fn compare(a: &[f64], b: &[f64], unit: &str, floor_abs: f64, rules: Rules) -> Verdict {
    let it = Measured { what: String::new(), a: a.to_vec(), b: b.to_vec(), floor_abs };
    judge("", vec![it], unit, TIME, rules).verdicts.remove(0).1
}
