//! The exact Mann-Whitney U test: the permutation distribution of the rank
//! sum, mid-ranks for ties, counted over the smaller side; the normal
//! approximation beyond the sizes where counting is cheap.

/// The smallest two-sided p-value the exact Mann-Whitney test can give for
/// samples of n1 and n2 without ties: both orders fully separated.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    // 2 / C(n1 + n2, n1), in floating point (no overflow for large n).
    let (k, n) = (n1.min(n2), n1 + n2);
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// Samples up to this many values in all get the exact test (when the
/// smaller has at most 30); above it, the normal approximation.
const EXACT_UP_TO: usize = 400;

/// Ways to pick `k` of the doubled ranks whose sum is s, for every s.
fn rank_sum_counts(ranks2: &[usize], k: usize, n: usize) -> Vec<f64> {
    // No pick of k doubled ranks sums to more than k × 2n.
    let total: usize = ranks2.iter().sum::<usize>().min(2 * n * k);
    let mut counts = vec![vec![0.0f64; total + 1]; k + 1];
    counts[0][0] = 1.0;
    // The ranks come in ascending order, so j picks among those seen so far
    // sum to at most j × r: the rows fill from the left.
    for (seen, &r) in ranks2.iter().enumerate() {
        for j in (1..=k.min(seen + 1)).rev() {
            let (lower, upper) = counts.split_at_mut(j);
            let top = (j * r).min(total);
            for s in (r..=top).rev() {
                upper[0][s] += lower[j - 1][s - r];
            }
        }
    }
    counts.swap_remove(k)
}

/// Rank-sum distributions without ties, by (picks, values).
type UntiedCache = std::cell::RefCell<std::collections::HashMap<(usize, usize), std::rc::Rc<Vec<f64>>>>;

thread_local! {
    static UNTIED: UntiedCache = Default::default();
}

fn untied_distribution(k: usize, n: usize) -> std::rc::Rc<Vec<f64>> {
    UNTIED.with(|c| {
        c.borrow_mut()
            .entry((k, n))
            .or_insert_with(|| {
                let ranks2: Vec<usize> = (1..=n).map(|i| 2 * i).collect();
                std::rc::Rc::new(rank_sum_counts(&ranks2, k, n))
            })
            .clone()
    })
}

/// Two-sided p-value of the Mann-Whitney U test: exact (the permutation
/// distribution of the rank sum, mid-ranks for ties) when the smaller sample
/// has at most 30 values and both at most 400 together, normal approximation with tie correction otherwise.
/// Exact with ties matters: span totals are whole microseconds, and two runs
/// of a short span often tie, where the approximation would cost power.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    let mut all: Vec<(f64, usize)> = a.iter().map(|&x| (x, 0)).chain(b.iter().map(|&x| (x, 1))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Doubled mid-ranks, so ties stay integers.
    let mut ranks2 = vec![0usize; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        for r in ranks2.iter_mut().take(j + 1).skip(i) {
            *r = i + j + 2;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let n = n1 + n2;
    let r1: usize = all.iter().zip(&ranks2).filter(|(x, _)| x.1 == 0).map(|(_, r)| r).sum();
    if n1.min(n2) <= 30 && n <= EXACT_UP_TO {
        // Count picks of the smaller side: the two-sided p is the same for
        // either side's rank sum (one is the other's complement), and the
        // table is k × sum, so 30 runs against 3 costs a tenth.
        let (k_side, r_side) = if n2 < n1 { (n2, ranks2.iter().sum::<usize>() - r1) } else { (n1, r1) };
        let (n1, r1) = (k_side, r_side);
        // Without ties the distribution depends on (n1, n) alone: a history
        // judges thousands of spans at the same run counts.
        let dist =
            if ties == 0.0 { untied_distribution(n1, n) } else { std::rc::Rc::new(rank_sum_counts(&ranks2, n1, n)) };
        // r1 is a doubled rank sum, whose mean is n1 (n + 1): count the
        // arrangements at least as far from it, on either side.
        let mean2 = (n1 * (n + 1)) as i64;
        let dev = (r1 as i64 - mean2).abs();
        let (mut extreme, mut all_ways) = (0.0, 0.0);
        for (s, &c) in dist.iter().enumerate() {
            if c == 0.0 {
                continue;
            }
            all_ways += c;
            if (s as i64 - mean2).abs() >= dev {
                extreme += c;
            }
        }
        return (extreme / all_ways).min(1.0);
    }
    let u1 = r1 as f64 / 2.0 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u = u1.min((n1 * n2) as f64 - u1);
    let n = n as f64;
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
    let y = 1.0
        - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592)
            * t
            * (-x * x).exp();
    0.5 * (1.0 + if x >= 0.0 { y } else { -y })
}

/// The Kruskal-Wallis test of `k` groups (ties averaged, the statistic
/// corrected for them), with the chi-square approximation for k − 1 of 1
/// to 3 degrees of freedom: the p that the groups come from one
/// distribution. 1.0 for fewer than two groups or no spread at all.
pub fn kruskal_wallis(groups: &[&[f64]]) -> f64 {
    let mut all: Vec<(f64, usize)> =
        groups.iter().enumerate().flat_map(|(g, v)| v.iter().map(move |&x| (x, g))).collect();
    let n = all.len() as f64;
    if groups.len() < 2 || groups.iter().any(|g| g.is_empty()) {
        return 1.0;
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sums = vec![0.0; groups.len()];
    let (mut i, mut ties) = (0, 0.0);
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for item in &all[i..=j] {
            sums[item.1] += rank;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    let correction = 1.0 - ties / (n * n * n - n);
    if correction <= 0.0 {
        return 1.0;
    }
    let h = (12.0 / (n * (n + 1.0)) * groups.iter().zip(&sums).map(|(g, s)| s * s / g.len() as f64).sum::<f64>()
        - 3.0 * (n + 1.0))
        / correction;
    chi2_sf(h.max(0.0), groups.len() - 1)
}

/// The chi-square survival function for 1 to 3 degrees of freedom (closed
/// forms), 4 or more bounded by 3's (conservative).
fn chi2_sf(x: f64, df: usize) -> f64 {
    match df {
        0 => 1.0,
        1 => erfc((x / 2.0).sqrt()),
        2 => (-x / 2.0).exp(),
        _ => (erfc((x / 2.0).sqrt()) + (2.0 * x / std::f64::consts::PI).sqrt() * (-x / 2.0).exp()).min(1.0),
    }
}

/// erfc by Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7),
/// enough for a p-value read against 0.05.
fn erfc(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = t
        * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))))
        * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        2.0 - y
    }
}

#[cfg(test)]
mod kruskal {
    use super::*;

    #[test]
    fn kruskal_wallis_matches_known_values() {
        // Three groups fully apart, 5 each: H = 12.5, p = exp(-6.25) (df 2).
        let (a, b, c) = ([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0]);
        let p = kruskal_wallis(&[&a, &b, &c]);
        assert!((p - (-6.25f64).exp()).abs() < 1e-9, "{p}");
        // Two groups: H = z^2 of the rank-sum test, p = erfc(sqrt(H/2)); known erfc(1) = 0.157299.
        assert!((erfc(1.0) - 0.157_299_207).abs() < 2e-7);
        // Interleaved: no evidence; all equal: none at all.
        assert!(kruskal_wallis(&[&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]]) > 0.5);
        assert_eq!(kruskal_wallis(&[&[2.0, 2.0], &[2.0, 2.0]]), 1.0);
        // Four groups (df 3): chi-square 7.815 is the 5% point.
        assert!((chi2_sf(7.815, 3) - 0.05).abs() < 1e-3, "{}", chi2_sf(7.815, 3));
    }
}
