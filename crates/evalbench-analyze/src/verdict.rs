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

/// A change in percent for people: `+12.3%`, or how it changed where A is 0.
pub fn pct(change: f64, a: f64, b: f64) -> String {
    if change.is_finite() {
        format!("{change:+.1}%")
    } else if a == b {
        "+0.0%".into()
    } else {
        format!("from {} to {}", fmt(a), fmt(b))
    }
}
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
    pub text: String,
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
    /// of how far another session's median lies (README, "Sessions").
    pub between_sessions: Option<f64>,
    /// A and B were measured interleaved in one session (`run --baseline`):
    /// the machine's drift fell on both alike, so a side's drift is no
    /// reason to doubt a change, and the drift check is not applied.
    pub interleaved: bool,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules { alpha: ALPHA, min_change_pct: 1.0, interval_only_when_significant: false, between_sessions: None, interleaved: false }
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
    /// Said once when the run counts make any "faster/slower" impossible.
    pub power: Option<String>,
    #[serde(skip)]
    pub verdicts: Vec<(String, Verdict)>,
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
    let testable: Vec<usize> = (0..items.len()).filter(|&i| items[i].a.len() >= 2 && items[i].b.len() >= 2).collect();
    let p: Vec<f64> = testable.iter().map(|&i| mann_whitney(&items[i].a, &items[i].b)).collect();
    let adjusted = holm(&p);
    let m = testable.len();
    let untested = items.len() - m;
    let power = if m == 0 {
        // One run on a side: said once for the family, not on every line.
        (untested > 0)
            .then(|| format!("{name}: one run on a side gives no noise estimate and no verdict; repeat the runs (run --repeat N) to get one"))
    } else {
        let n1 = testable.iter().map(|&i| items[i].a.len()).max().unwrap_or(0);
        let n2 = testable.iter().map(|&i| items[i].b.len()).max().unwrap_or(0);
        let best = smallest_p(n1, n2);
        (best >= rules.alpha / m as f64).then(|| {
            let need = runs_needed(m, rules.alpha);
            format!(
                "{name}: with {n1} and {n2} runs no single one of {m} can be called {}/{} after Holm's correction (smallest possible p {best:.4} >= {}/{m}); {need} runs a side would allow it",
                words.0, words.1, rules.alpha
            )
        })
    };
    let mut tested = testable.iter().zip(p.iter().zip(&adjusted)).map(|(&i, (&p, &q))| (i, (p, q))).collect::<std::collections::HashMap<_, _>>();
    let verdicts = items
        .into_iter()
        .enumerate()
        .map(|(i, it)| {
            let v = verdict(&it, tested.remove(&i), m, unit, words, rules);
            (it.what, v)
        })
        .collect();
    Family { name: name.to_string(), tests: m, correction: "holm", power, verdicts }
}

fn verdict(it: &Measured, p: Option<(f64, f64)>, m: usize, unit: &str, (better, worse): (Kind, Kind), rules: Rules) -> Verdict {
    let (sa, sb) = (spread(&it.a), spread(&it.b));
    // No NaN anywhere: 0 to 0 is no change; from 0 to anything has no percentage (null in JSON).
    let change = if sa.median != 0.0 {
        (sb.median / sa.median - 1.0) * 100.0
    } else if sb.median == 0.0 {
        0.0
    } else {
        f64::NAN
    };
    let change_text = pct(change, sa.median, sb.median);
    let floor = (rules.min_change_pct / 100.0 * sa.median.abs()).max(it.floor_abs);
    let Some((p, q)) = p else {
        // Under the floor a change is negligible whatever the noise: no
        // estimate of it is needed to say it is too small to matter.
        let (kind, why) = if (sb.median - sa.median).abs() < floor {
            (Kind::Negligible, format!("negligible, under the floor of {}", with_unit(floor, unit)))
        } else {
            (Kind::NoNoiseEstimate, "no noise estimate".to_string())
        };
        return Verdict {
            text: format!("{change_text} ({} → {}): {why}", fmt(sa.median), with_unit(sb.median, unit)),
            a: sa,
            b: sb,
            change_pct: change,
            ratio_interval: None,
            p_value: None,
            p_adjusted: None,
            floor,
            kind,
        }
        .rounded(unit);
    };
    if rules.interval_only_when_significant && q >= rules.alpha {
        let text = format!("{change_text}: inside run-to-run noise (Mann-Whitney p = {p:.4}, Holm-adjusted over {m}: {q:.4})");
        return Verdict {
            a: sa,
            b: sb,
            change_pct: change,
            ratio_interval: None,
            p_value: Some(p),
            p_adjusted: Some(q),
            floor,
            kind: Kind::InsideNoise,
            text,
        }
        .rounded(unit);
    }
    let (lo, hi) = bootstrap_ratio(&it.a, &it.b);
    let diff = sb.median - sa.median;
    let rel_floor = if sa.median != 0.0 { floor / sa.median.abs() } else { f64::INFINITY };
    let significant = q < rules.alpha && (hi < 1.0 || lo > 1.0);
    let tests = format!("Mann-Whitney p = {p:.4}, Holm-adjusted over {m}: {q:.4}; 95% interval of the ratio of medians {lo:.3}..{hi:.3}");
    let floor_text = format!("floor {}", with_unit(floor, unit));
    // A machine that drifted while one side ran (its later runs apart from
    // its earlier ones) moves that side's median by itself: a change no
    // larger than the drift is the machine's, not the change's.
    let drifted = [("A", &it.a), ("B", &it.b)]
        .into_iter()
        .filter(|_| !rules.interleaved)
        .filter_map(|(side, v)| drift(v).map(|d| (side, d)))
        .max_by(|x, y| x.1 .0.abs().total_cmp(&y.1 .0.abs()));
    let (kind, text) = if let Some((side, (d, pd))) =
        drifted.filter(|(_, (d, _))| significant && diff.abs() >= floor && d.abs() * 100.0 >= change.abs())
    {
        (
            Kind::InsideNoise,
            format!(
                "{change_text}: inside the machine's drift: the medians of {side}'s runs, taken in blocks in the order they ran, lie {:.1}% apart (Kruskal-Wallis p = {pd:.4}), as far as the change ({tests})",
                d * 100.0
            ),
        )
    } else if let Some(s) = rules.between_sessions.filter(|s| significant && diff.abs() >= floor && change.abs() <= s * 100.0) {
        (
            Kind::InsideNoise,
            format!(
                "{change_text}: inside the drift between sessions: A and B were measured in two sessions, and two sessions of one flake have differed by up to {:.0}% (compare --between-sessions); measure both in one session to judge it: run --baseline ({tests})",
                s * 100.0
            ),
        )
    } else if significant && diff.abs() < floor {
        (Kind::Negligible, format!("{change_text}: negligible, real but under the {floor_text} ({tests})"))
    } else if significant && diff < 0.0 {
        (better, format!("{better} by {:.1}% (outside noise: {tests})", -change))
    } else if significant {
        (worse, format!("{worse} by {change:.1}% (outside noise: {tests})"))
    } else if lo >= 1.0 - rel_floor && hi <= 1.0 + rel_floor {
        (Kind::Negligible, format!("{change_text}: negligible, the interval lies within the {floor_text} ({tests})"))
    } else {
        (Kind::InsideNoise, format!("{change_text}: inside run-to-run noise ({tests})"))
    };
    Verdict { a: sa, b: sb, change_pct: change, ratio_interval: Some((lo, hi)), p_value: Some(p), p_adjusted: Some(q), floor, kind, text }
        .rounded(unit)
}

impl Verdict {
    /// Figures in the unit at its precision; percentages to 3 places,
    /// ratios and p-values to 6. The text was written from the exact values.
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

/// A number and its unit; a family without a unit (nix's counters) gets no stray space.
fn with_unit(x: f64, unit: &str) -> String {
    if unit.is_empty() {
        fmt(x)
    } else {
        format!("{} {unit}", fmt(x))
    }
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_mann_whitney_matches_known_values() {
        // Completely separated samples of 5 and 5: p = 2/252.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        let p = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]);
        assert!(p > 0.5, "{p}");
    }

    #[test]
    fn one_run_gives_no_verdict() {
        assert_eq!(compare(&[1.0], &[2.0, 2.1], "s", 1e-6, Rules::default()).kind, Kind::NoNoiseEstimate);
    }

    #[test]
    fn exact_with_ties() {
        // Separated with ties inside each side: still the smallest p, 2/C(16,8).
        let a = [1.0, 1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0];
        let b = [6.0, 6.0, 7.0, 8.0, 9.0, 9.0, 9.0, 10.0];
        assert!((mann_whitney(&a, &b) - 2.0 / 12870.0).abs() < 1e-12);
        // All equal: no evidence at all.
        assert_eq!(mann_whitney(&[3.0; 4], &[3.0; 4]), 1.0);
        // A tie across the sides, by hand: doubled ranks 2 4 7 7 10 12, A's
        // sum 13 against a mean of 21; 2 of the C(6,3) = 20 picks sum to 13
        // or less and 2 to 29 or more.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[3.0, 4.0, 5.0]);
        assert!((p - 0.2).abs() < 1e-12, "{p}");
    }

    #[test]
    fn a_change_no_larger_than_a_sides_drift_is_inside_noise() {
        // A's runs climb in steps, 0.40 → 0.46 → 0.52 s (a block median 24%
        // of its median apart); B lies below nearly all of A, 16% under its median.
        let step = |level: f64, n: usize| (0..n).map(move |k| level + 0.001 * k as f64);
        let a: Vec<f64> = step(0.40, 7).chain(step(0.46, 7)).chain(step(0.52, 7)).chain(step(0.52, 8)).collect();
        let b: Vec<f64> = (0..29).map(|k| 0.405 + 0.0005 * k as f64).collect();
        let d = drift(&a).unwrap();
        assert!(d.0 > 0.2 && d.0 < 0.3 && d.1 < 0.001, "{d:?}");
        let v = compare(&a, &b, "s", 1e-6, Rules::default());
        assert_eq!(v.kind, Kind::InsideNoise, "{}", v.text);
        assert!(v.text.contains("inside the machine's drift: the medians of A's runs, taken in blocks in the order they ran, lie 2"), "{}", v.text);
        // Interleaved with B in one session, A's drift was B's too: the change is called.
        let one_session = Rules { interleaved: true, ..Rules::default() };
        assert_eq!(compare(&a, &b, "s", 1e-6, one_session).kind, Kind::Faster);
        // Steady sides: the same change is called.
        let a: Vec<f64> = (0..29).map(|k| 0.49 + 0.001 * (k % 7) as f64).collect();
        assert_eq!(drift(&a), None);
        assert_eq!(compare(&a, &b, "s", 1e-6, Rules::default()).kind, Kind::Faster);
    }

    #[test]
    fn holm_adjusts_step_down() {
        let q = holm(&[0.01, 0.04, 0.03, 0.2]);
        assert_eq!(q, vec![0.04, 0.09, 0.09, 0.2]);
    }

    #[test]
    fn smallest_p_and_runs_needed() {
        assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((smallest_p(6, 6) - 2.0 / 924.0).abs() < 1e-12);
        // 60 spans: 2/924 > 0.05/60 at 6 a side; 2/3432 < 0.05/60 at 7.
        assert_eq!(runs_needed(60, 0.05), 7);
        assert_eq!(runs_needed(1, 0.05), 4);
    }

    #[test]
    fn a_family_too_small_to_decide_says_so_once() {
        let items: Vec<Measured> = (0..60)
            .map(|i| Measured {
                what: format!("s{i}"),
                a: (0..6).map(|k| 10.0 + k as f64).collect(),
                b: (0..6).map(|k| 30.0 + k as f64).collect(),
                floor_abs: 0.05,
            })
            .collect();
        let f = judge("spans", items, "ms", TIME, Rules::default());
        assert!(f.power.as_deref().unwrap().contains("7 runs a side"), "{:?}", f.power);
        assert!(f.verdicts.iter().all(|(_, v)| v.kind == Kind::InsideNoise), "fully separated, yet not significant after the correction");
    }

    #[test]
    fn a_real_but_tiny_change_is_negligible() {
        let a: Vec<f64> = (0..8).map(|k| 100.0 + k as f64 * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let v = compare(&a, &b, "ms", 0.05, Rules::default());
        assert_eq!(v.kind, Kind::Negligible, "{}", v.text);
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        assert_eq!(compare(&a, &b, "ms", 0.05, Rules::default()).kind, Kind::Slower);
    }
}

#[cfg(test)]
mod one_run {
    use super::*;

    #[test]
    fn one_run_a_side_is_said_once_per_family_and_nothing_is_nan() {
        let items = vec![
            Measured { what: "zero".into(), a: vec![0.0], b: vec![0.0], floor_abs: 0.05 },
            Measured { what: "new".into(), a: vec![0.0], b: vec![2.0], floor_abs: 0.05 },
            Measured { what: "up".into(), a: vec![1.0], b: vec![2.0], floor_abs: 0.05 },
        ];
        let f = judge("spans", items, "ms", TIME, Rules::default());
        assert!(f.power.as_deref().unwrap().contains("one run on a side"), "{:?}", f.power);
        for (what, v) in &f.verdicts {
            // 0 to 0 lies under the floor: negligible even with one run a side.
            let want = if what == "zero" { Kind::Negligible } else { Kind::NoNoiseEstimate };
            assert_eq!(v.kind, want, "{what}");
            assert!(!v.text.contains("NaN") && !v.text.contains("repeat"), "{what}: {}", v.text);
        }
        assert_eq!(f.verdicts[0].1.change_pct, 0.0);
        assert!(f.verdicts[1].1.text.starts_with("from 0.000 to 2.000"), "{}", f.verdicts[1].1.text);
        let json = serde_json::to_string(&f.verdicts.iter().map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
        assert!(!json.contains("NaN"), "{json}");
    }
}
