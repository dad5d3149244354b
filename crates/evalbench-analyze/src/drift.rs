//! How far a pass's runs moved while they were made, as one bound for the
//! whole pass, and a trend in run order named.
//!
//! Between two sessions a row whose own blocks look steady is no steadier
//! than the machine it ran on: when the evaluated seconds of one side drift
//! by 44% over its runs, a span that moved 24% tells nothing. So between
//! sessions every row of a pass is held to the largest drift measured in
//! that pass, on either side, on any row above its floor and a hundredth of
//! the evaluated time, or on the evaluated seconds. The drift tests are not corrected for their number:
//! a drift found by chance only makes the bound wider, never a verdict
//! more likely (the lab's two sessions in docs/verdicts.md,
//! say", had rows drifting 32% that a corrected bound left out, and three
//! of them were then called "faster" by 20-27%).

use serde::Serialize;

use crate::spread::median;
use crate::verdict::{drift, ALPHA};

/// The pass's drift: where it was largest.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DriftBound {
    /// Block medians' spread over the side's median, as a fraction.
    pub fraction: f64,
    /// "A" or "B".
    pub side: &'static str,
    /// "evaluated seconds", or the row's name.
    pub on: String,
    /// Kruskal-Wallis p of the blocks.
    pub p: f64,
}

/// One row measured on both sides, in run order (ms), with the floor under
/// which its values say nothing (a row of a few µs drifts by its resolution).
pub struct RowRuns<'a> {
    pub what: &'a str,
    pub a: &'a [f64],
    pub b: &'a [f64],
    pub floor: f64,
}

/// The largest drift of a pass: the evaluated seconds (s) of either side,
/// and each row (ms) above its floor and a hundredth of the side's
/// evaluated time.
pub fn pass_bound(evaluated: (&[f64], &[f64]), rows: &[RowRuns<'_>]) -> Option<DriftBound> {
    // A row below a hundredth of the side's evaluated time drifts by its own
    // noise, not the machine's: a 0.1 ms span whose blocks read 0.1 and
    // 0.25 ms set a bound of 126% on a pass (the sample pipeline under CI's
    // load), under which no change of a pass could be called.
    let share = |v: &[f64]| median(v) * 1e3 / 100.0;
    let (least_a, least_b) = (share(evaluated.0), share(evaluated.1));
    let mut best: Option<DriftBound> = None;
    let mut keep = |b: DriftBound| {
        if best.as_ref().is_none_or(|x| b.fraction > x.fraction) {
            best = Some(b);
        }
    };
    for (side, v) in [("A", evaluated.0), ("B", evaluated.1)] {
        if let Some((d, p)) = drift(v) {
            keep(DriftBound { fraction: d, side, on: "evaluated seconds".into(), p });
        }
    }
    for r in rows {
        for (side, v, least) in [("A", r.a, least_a), ("B", r.b, least_b)] {
            if median(v).abs() < r.floor.max(least) {
                continue;
            }
            if let Some((d, p)) = drift(v) {
                keep(DriftBound { fraction: d, side, on: r.what.to_string(), p });
            }
        }
    }
    best
}

/// A monotone trend of a side's runs in the order they ran.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Trend {
    /// Kendall's τ of the values against the run order.
    pub tau: f64,
    /// Two-sided, from the normal approximation (n ≥ 8), ties corrected.
    pub p: f64,
    /// Medians of the first and the last quarter of the runs.
    pub first: f64,
    pub last: f64,
}

/// Runs a side needs before a trend is tested.
pub const TREND_MIN_RUNS: usize = 8;

/// Kendall's test of `v` against its order: Some when the runs rose or fell
/// (p < [`ALPHA`]).
pub fn trend(v: &[f64]) -> Option<Trend> {
    let n = v.len();
    if n < TREND_MIN_RUNS {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match v[j].partial_cmp(&v[i]) {
                Some(std::cmp::Ordering::Greater) => 1,
                Some(std::cmp::Ordering::Less) => -1,
                _ => 0,
            };
        }
    }
    // Variance with the ties among the values taken out.
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 {
        return None;
    }
    // Continuity-corrected.
    let z = (s.abs() as f64 - 1.0).max(0.0) / var.sqrt();
    let p = erfc(z / std::f64::consts::SQRT_2);
    let q = (n / 4).max(2);
    let tau = s as f64 / (nf * (nf - 1.0) / 2.0);
    (p < ALPHA).then(|| Trend { tau, p, first: median(&v[..q]), last: median(&v[n - q..]) })
}

/// The most leading runs [`warmup_runs`] looks at, and the runs after them
/// it needs to tell them from the rest.
pub const WARMUP_SCAN: usize = 8;

/// How many of a side's first runs were a warm-up: each, from the first,
/// lying above the rest's upper fence (median + 3 scaled MADs of the runs
/// after the first [`WARMUP_SCAN`]), until one does not. 0 with fewer than
/// `2 × WARMUP_SCAN` runs. `run --warmup` is chosen with it (docs/verdicts.md).
pub fn warmup_runs(v: &[f64]) -> usize {
    if v.len() < 2 * WARMUP_SCAN {
        return 0;
    }
    let rest = &v[WARMUP_SCAN..];
    let m = median(rest);
    let mad = median(&rest.iter().map(|x| (x - m).abs()).collect::<Vec<_>>()) * 1.4826;
    let fence = m + 3.0 * mad.max(m.abs() * 0.01);
    v[..WARMUP_SCAN].iter().take_while(|x| **x > fence).count()
}

/// erfc(x) for x ≥ 0, Numerical Recipes' Chebyshev fit (relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded::Seeded;

    fn noise(r: &mut Seeded, n: usize, level: f64) -> Vec<f64> {
        (0..n).map(|_| level * (1.0 + (r.next(1000) as f64 / 1000.0 - 0.5) * 0.1)).collect()
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [(0.0, 1.0), (0.5, 0.479500122), (1.0, 0.157299207), (2.0, 0.004677735)] {
            assert!((erfc(x) - want).abs() < 1e-6, "{x}");
        }
    }

    /// Steady runs in a seeded order show a trend in about 5% of sides;
    /// runs that climb show it every time, and it is named.
    #[test]
    fn a_trend_is_found_where_it_is_and_rarely_where_it_is_not() {
        let mut r = Seeded(0x7472_656e);
        let false_trends = (0..400).filter(|_| trend(&noise(&mut r, 32, 0.5)).is_some()).count();
        assert!(false_trends <= 32, "{false_trends} of 400 steady sides had a trend");
        for _ in 0..50 {
            let climbing: Vec<f64> =
                noise(&mut r, 32, 0.5).iter().enumerate().map(|(i, x)| x * (1.0 + 0.02 * i as f64)).collect();
            let t = trend(&climbing).expect("a climb of 60% over 32 runs");
            assert!(t.tau > 0.5 && t.last > t.first * 1.3, "{t:?}");
        }
        let t = trend(&(0..16).map(|i| 1.0 - 0.01 * i as f64).collect::<Vec<_>>()).unwrap();
        assert!(t.tau == -1.0 && t.p < 0.001 && t.first > t.last, "{t:?}");
        assert_eq!(trend(&[1.0; 12]), None, "all ties: no trend");
    }

    #[test]
    fn a_warm_up_is_counted_from_the_first_run() {
        let mut r = Seeded(0x7761_726d);
        let mut v = noise(&mut r, 32, 0.5);
        assert_eq!(warmup_runs(&v), 0, "{v:?}");
        v[0] = 0.9;
        v[1] = 0.7;
        assert_eq!(warmup_runs(&v), 2);
        v[0] = 0.5;
        assert_eq!(warmup_runs(&v), 0, "a slow second run after a steady first is no warm-up");
        assert_eq!(warmup_runs(&[0.9, 0.5, 0.5]), 0, "too few runs to tell");
    }

    /// The bound is the largest drift found, on the evaluated seconds or on
    /// any row above its floor; steady rows set at most a small one.
    #[test]
    fn the_bound_is_the_largest_drift_found() {
        let mut r = Seeded(0x6472_6966);
        let steady = |r: &mut Seeded| noise(r, 32, 10.0);
        let climbing: Vec<f64> = (0..32).map(|i| 0.5 + 0.01 * i as f64).collect();
        let rows: Vec<(String, Vec<f64>, Vec<f64>)> =
            (0..80).map(|i| (format!("row{i}"), steady(&mut r), steady(&mut r))).collect();
        let rr: Vec<RowRuns> = rows.iter().map(|(w, a, b)| RowRuns { what: w, a, b, floor: 0.05 }).collect();
        let steady_wall = noise(&mut r, 32, 0.5);
        // 160 steady rows of ±5%: a chance drift is no wider than their noise.
        assert!(pass_bound((&steady_wall, &steady_wall), &rr).is_none_or(|b| b.fraction < 0.1));
        let b = pass_bound((&climbing, &steady_wall), &rr).unwrap();
        assert_eq!((b.side, b.on.as_str()), ("A", "evaluated seconds"));
        assert!(b.fraction > 0.3, "{b:?}");
        // A row that climbs further sets it; one under its floor never does.
        let mut rows2 = rows.clone();
        rows2[7].2 = climbing.iter().map(|x| x * 20.0 * (1.0 + (x - 0.5) * 2.0)).collect();
        rows2[9].1 = climbing.iter().map(|x| x * 0.01 * (1.0 + (x - 0.5) * 10.0)).collect();
        let rr: Vec<RowRuns> = rows2.iter().map(|(w, a, b)| RowRuns { what: w, a, b, floor: 0.05 }).collect();
        let b = pass_bound((&climbing, &steady_wall), &rr).unwrap();
        assert_eq!((b.side, b.on.as_str()), ("B", "row7"), "{b:?}");
        // Nor does a row above the floor but under a hundredth of the
        // evaluated time (1 ms of 0.5 s), however far it climbs.
        let mut rows3 = rows.clone();
        rows3[11].1 = (0..32).map(|i| 1.0 + 0.2 * i as f64).collect();
        rows3[11].1.iter_mut().for_each(|x| *x = (*x).min(4.9));
        let rr: Vec<RowRuns> = rows3.iter().map(|(w, a, b)| RowRuns { what: w, a, b, floor: 0.05 }).collect();
        assert!(pass_bound((&steady_wall, &steady_wall), &rr).is_none_or(|b| b.on != "row11"));
    }
}
