//! Honest verdicts on two sets of measurements. "Faster" or "slower" only
//! when two tests agree that the difference is not run-to-run noise: the
//! Mann-Whitney U test (exact for small samples) at a stated level, and a
//! bootstrap interval of the ratio of medians that excludes 1. One run on a
//! side means no noise estimate, and no verdict.

use serde::Serialize;

pub const ALPHA: f64 = 0.05;
const BOOTSTRAP: usize = 2000;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Median absolute deviation from the median.
    pub mad: f64,
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}

pub fn spread(v: &[f64]) -> Spread {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    Spread {
        n: v.len(),
        median: m,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        mad: median(&dev),
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
    /// Two-sided Mann-Whitney U p-value.
    pub p_value: Option<f64>,
    /// "faster", "slower", "inside noise", "no noise estimate"
    pub kind: &'static str,
    pub text: String,
}

/// Two-sided p-value of the Mann-Whitney U test: exact by counting when the
/// samples are small and tie-free, normal approximation with tie correction otherwise.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    let mut all: Vec<(f64, usize)> = a.iter().map(|&x| (x, 0)).chain(b.iter().map(|&x| (x, 1))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Mid-ranks for ties.
    let mut ranks = vec![0.0; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            ranks[k] = r;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all.iter().zip(&ranks).filter(|(x, _)| x.1 == 0).map(|(_, r)| r).sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u = u1.min((n1 * n2) as f64 - u1);
    if ties == 0.0 && n1 <= 30 && n2 <= 30 {
        // Exact: count the arrangements with U <= u.
        let max = n1 * n2;
        // counts[i][j][s]: ways with i from A, j from B, U = s; rolled over i.
        let mut prev: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
        for row in prev.iter_mut() {
            row[0] = 1.0;
        }
        for _i in 1..=n1 {
            let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max + 1]; n2 + 1];
            cur[0][0] = 1.0;
            for j in 1..=n2 {
                for s in 0..=max {
                    // The largest value is from A (it beats all j of B) or from B.
                    let from_a = if s >= j { prev[j][s - j] } else { 0.0 };
                    cur[j][s] = from_a + cur[j - 1][s];
                }
            }
            prev = cur;
        }
        let counts = &prev[n2];
        let total: f64 = counts.iter().sum();
        let below: f64 = counts.iter().take(u.floor() as usize + 1).sum();
        return (2.0 * below / total).min(1.0);
    }
    let n = (n1 + n2) as f64;
    let mu = (n1 * n2) as f64 / 2.0;
    let sigma = ((n1 * n2) as f64 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)))).sqrt();
    if sigma == 0.0 {
        return 1.0;
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / sigma;
    (2.0 * (1.0 - normal_cdf(z))).min(1.0)
}

fn normal_cdf(z: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26 for erf.
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * (-x * x).exp();
    0.5 * (1.0 + if x >= 0.0 { y } else { -y })
}

/// Percentile bootstrap of median(B)/median(A), seeded: the same data give the same interval.
pub fn bootstrap_ratio(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut state: u64 = 0x2545F4914F6CDD1D ^ (a.len() as u64) << 32 ^ b.len() as u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut ratios = Vec::with_capacity(BOOTSTRAP);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..BOOTSTRAP {
        for x in ra.iter_mut() {
            *x = a[next(a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[next(b.len())];
        }
        let ma = median(&ra);
        if ma != 0.0 {
            ratios.push(median(&rb) / ma);
        }
    }
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| ratios[((q * ratios.len() as f64) as usize).min(ratios.len() - 1)];
    (at(0.025), at(0.975))
}

/// The verdict on B against A, for a time: smaller is faster.
pub fn compare(a: &[f64], b: &[f64], unit: &str) -> Verdict {
    compare_words(a, b, unit, ("faster", "slower"))
}

/// The verdict on B against A, for an amount (memory): smaller is less.
pub fn compare_amount(a: &[f64], b: &[f64], unit: &str) -> Verdict {
    compare_words(a, b, unit, ("less", "more"))
}

fn compare_words(a: &[f64], b: &[f64], unit: &str, (better, worse): (&'static str, &'static str)) -> Verdict {
    let (sa, sb) = (spread(a), spread(b));
    let change = if sa.median != 0.0 { (sb.median / sa.median - 1.0) * 100.0 } else { f64::NAN };
    if a.len() < 2 || b.len() < 2 {
        return Verdict {
            text: format!("{:+.1}% ({} → {} {unit}): no noise estimate (one run on a side); repeat to get a verdict", change, fmt(sa.median), fmt(sb.median)),
            a: sa,
            b: sb,
            change_pct: change,
            ratio_interval: None,
            p_value: None,
            kind: "no noise estimate",
        };
    }
    let p = mann_whitney(a, b);
    let (lo, hi) = bootstrap_ratio(a, b);
    let outside = p < ALPHA && (hi < 1.0 || lo > 1.0);
    let (kind, text) = if outside && change < 0.0 {
        (better, format!("{better} by {:.1}% (outside noise: Mann-Whitney p = {p:.3} < {ALPHA}, 95% interval of the ratio of medians {lo:.3}..{hi:.3})", -change))
    } else if outside {
        (worse, format!("{worse} by {change:.1}% (outside noise: Mann-Whitney p = {p:.3} < {ALPHA}, 95% interval of the ratio of medians {lo:.3}..{hi:.3})"))
    } else {
        ("inside noise", format!("{change:+.1}%: inside run-to-run noise (Mann-Whitney p = {p:.3}, 95% interval of the ratio of medians {lo:.3}..{hi:.3})"))
    };
    Verdict { a: sa, b: sb, change_pct: change, ratio_interval: Some((lo, hi)), p_value: Some(p), kind, text }
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 { format!("{x:.0}") } else { format!("{x:.3}") }
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
        assert_eq!(compare(&[1.0], &[2.0, 2.1], "s").kind, "no noise estimate");
    }
}
