//! Change points along a series with one run per commit: E-divisive means
//! (Matteson and James, "A Nonparametric Approach for Multiple Change Point
//! Analysis of Multivariate Data", JASA 2014), with the permutation test of
//! significance, as MongoDB's performance CI (Daly et al., "The Use of
//! Change Point Detection to Identify Software Performance Regressions in
//! a Continuous Integration System", ICPE 2020) and Apache Otava (formerly
//! Hunter) use it.
//!
//! Why: with one run a commit, no commit can be judged on its own (there is
//! no noise estimate), but the series as a whole can: a step shows as two
//! segments whose values lie further apart than the values within each.
//! The statistic for a split at τ of n values (α = 1, absolute distances):
//!
//!   Q(τ) = τ(n−τ)/n · [ 2·mean|Xᵢ−Yⱼ| − mean|Xᵢ−Xₖ| − mean|Yⱼ−Yₖ| ]
//!
//! The best split of the segment is tested against the best split of
//! random permutations of it; a significant split is kept and both halves
//! are searched again (bisection, as the paper's hierarchical procedure).
//! All of it on the logarithm of the values, so a step is relative.
//! Everything is seeded from the values: the same series, the same answer.

/// What the search is held to.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// A split is kept when its permutation p-value is below this.
    pub alpha: f64,
    /// Permutations per test.
    pub permutations: usize,
    /// The fewest values on each side of a split.
    pub min_size: usize,
}

impl Default for Params {
    /// Chosen by the seeded trials in `crates/evalbench-history/tests/changepoints.rs`.
    /// `history add` tests the series again as each commit arrives, so the
    /// level is far below 5%: with one run a commit and 3% noise, a +10%
    /// step is found within two commits in at least 90% of series once 5
    /// commits follow it, at most 5% of A/A series of 100 commits flag
    /// anything, and long A/A series flag about once in 30,000 commits
    /// (docs/history.md).
    fn default() -> Params {
        Params { alpha: 1e-4, permutations: 19_999, min_size: 4 }
    }
}

/// A change point: the index of the first value of the new segment, and
/// its permutation p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub at: usize,
    pub p_value: f64,
}

/// What no permutation of a segment changes: each value's distances to
/// all the others added up, and all pairs' distances. With them a split's
/// search needs only each value's distances to the values before it: half
/// the pairs, where it measured every pair one and a half times (the
/// permutation test searches up to 19,999 permutations of a segment).
#[derive(Clone)]
struct Rows {
    row: Vec<f64>,
    total: f64,
}

impl Rows {
    fn of(x: &[f64]) -> Rows {
        let row: Vec<f64> = x.iter().map(|&v| distances(x, v)).collect();
        // Each pair is in two rows.
        let total = row.iter().sum::<f64>() / 2.0;
        Rows { row, total }
    }
}

/// Σ |xᵢ − v|, in four running sums (which the compiler keeps in vector
/// registers: one sum would be a chain of dependent additions).
fn distances(xs: &[f64], v: f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let chunks = xs.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            acc[k] += (c[k] - v).abs();
        }
    }
    let mut sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for &r in rest {
        sum += (r - v).abs();
    }
    sum
}

/// The best split of `x` by Q(τ), as (τ, Q); only splits leaving `min`
/// values on each side. `rows` are `x`'s (in `x`'s order).
fn best_split(x: &[f64], rows: &Rows, min: usize) -> Option<(usize, f64)> {
    let n = x.len();
    if n < 2 * min {
        return None;
    }
    // Start with τ = 0: everything on the right.
    let (mut left_within, mut right_within, mut between) = (0.0, rows.total, 0.0);
    let mut best: Option<(usize, f64)> = None;
    for t in 0..n - 1 {
        // Move value t from the right to the left: τ becomes t + 1. Its
        // distances to the values after it are its row less those before.
        let to_left = distances(&x[..t], x[t]);
        let to_right = rows.row[t] - to_left;
        between += to_right - to_left;
        left_within += to_left;
        right_within -= to_right;
        let tau = t + 1;
        if tau < min || n - tau < min {
            continue;
        }
        let (l, r) = (tau as f64, (n - tau) as f64);
        let pairs = |k: f64| if k > 1.0 { k * (k - 1.0) / 2.0 } else { 1.0 };
        let e = 2.0 * between / (l * r) - left_within / pairs(l) - right_within / pairs(r);
        let q = l * r / n as f64 * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((tau, q));
        }
    }
    best
}

/// A seed from the values themselves (their bits, FNV-1a).
fn seed_of(x: &[f64]) -> u64 {
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
    evalbench_bundle::fnv::hash64(&bytes) | 1
}

/// Whether a permutation's best split is as large as the series' own. A
/// permutation that leaves the same values on each side of that split has
/// the same statistic, added up in another order: equal but for the last
/// bits of rounding, it counts (a short segment meets one often: 5 values
/// of 22 on one side, about one permutation in 26,000).
fn as_large_as(qp: f64, q: f64) -> bool {
    qp >= q - 1e-12 * q.abs()
}

/// The permutation p-value of the best split of `x` (whose rows are `rows`).
fn significance(x: &[f64], rows: &Rows, q: f64, p: Params) -> f64 {
    let mut state = seed_of(x);
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut y = x.to_vec();
    // Each value's row goes with it through the shuffles.
    let mut rows = rows.clone();
    let mut as_large = 0usize;
    // Once this many permutations split as well, p cannot fall below
    // alpha: stop there. Most segments have no change, and most of their
    // tests end within a few dozen permutations instead of all of them.
    let enough = (p.alpha * (p.permutations + 1) as f64).ceil() as usize;
    for done in 1..=p.permutations {
        for i in (1..y.len()).rev() {
            let j = next(i + 1);
            y.swap(i, j);
            rows.row.swap(i, j);
        }
        if best_split(&y, &rows, p.min_size).is_some_and(|(_, qp)| as_large_as(qp, q)) {
            as_large += 1;
            if as_large >= enough {
                // An estimate from the permutations done, at least alpha.
                return ((as_large + 1) as f64 / (done + 1) as f64).max(p.alpha);
            }
        }
    }
    (as_large + 1) as f64 / (p.permutations + 1) as f64
}

/// Every significant change point of `values` (positive; their logarithms
/// are searched), in order.
pub fn e_divisive(values: &[f64], p: Params) -> Vec<ChangePoint> {
    let x: Vec<f64> = values.iter().map(|v| v.max(f64::MIN_POSITIVE).ln()).collect();
    let mut found = Vec::new();
    let mut segments = vec![(0usize, x.len())];
    while let Some((from, to)) = segments.pop() {
        let seg = &x[from..to];
        let rows = Rows::of(seg);
        let Some((tau, q)) = best_split(seg, &rows, p.min_size) else { continue };
        let pv = significance(seg, &rows, q, p);
        if pv < p.alpha {
            found.push(ChangePoint { at: from + tau, p_value: pv });
            segments.push((from, from + tau));
            segments.push((from + tau, to));
        }
    }
    found.sort_by_key(|c| c.at);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_step_is_found_where_it_is_and_a_flat_series_has_none() {
        let mut v: Vec<f64> = (0..40).map(|i| 1.0 + 0.001 * (i % 3) as f64).collect();
        for x in v.iter_mut().skip(25) {
            *x *= 1.2;
        }
        let c = e_divisive(&v, Params::default());
        assert_eq!(c.iter().map(|c| c.at).collect::<Vec<_>>(), vec![25], "{c:?}");
        assert!(c[0].p_value < 0.01);
        let flat: Vec<f64> = (0..40).map(|i| 1.0 + 0.001 * (i % 3) as f64).collect();
        assert!(e_divisive(&flat, Params::default()).is_empty());
        assert!(e_divisive(&[1.0, 2.0], Params::default()).is_empty(), "too short to split");
    }

    #[test]
    fn a_permutation_keeping_each_side_s_values_is_as_large() {
        // A step before the last 5 of 22 values: each side reversed keeps
        // the split's statistic, whatever order its sums are added in.
        for seed in 0..200u64 {
            let x: Vec<f64> = (0..22u64)
                .map(|i| {
                    let jitter = ((i * 7 + seed * 13) % 11) as f64 * 0.013 + (seed % 5) as f64 * 1e-3;
                    (1.0 + jitter + if i >= 17 { 0.1 } else { 0.0 }).ln()
                })
                .collect();
            let (tau, q) = best_split(&x, &Rows::of(&x), 4).unwrap();
            let mut y = x.clone();
            y[..tau].reverse();
            y[tau..].reverse();
            let (_, qy) = best_split(&y, &Rows::of(&y), 4).unwrap();
            assert!(as_large_as(qy, q), "seed {seed}: {qy} against {q}");
        }
    }

    #[test]
    fn the_statistic_matches_its_definition_by_brute_force() {
        let x = [0.1, 0.4, 0.2, 0.9, 1.1, 0.8, 1.0];
        let (tau, q) = best_split(&x, &Rows::of(&x), 2).unwrap();
        let brute = |t: usize| {
            let (a, b) = x.split_at(t);
            let mean = |s: &[f64], u: &[f64]| {
                let mut sum = 0.0;
                for p in s {
                    for r in u {
                        sum += (p - r).abs();
                    }
                }
                sum / (s.len() * u.len()) as f64
            };
            let within = |s: &[f64]| {
                let mut sum = 0.0;
                for i in 0..s.len() {
                    for j in i + 1..s.len() {
                        sum += (s[i] - s[j]).abs();
                    }
                }
                sum / (s.len() * (s.len() - 1) / 2) as f64
            };
            let (l, r) = (a.len() as f64, b.len() as f64);
            l * r / x.len() as f64 * (2.0 * mean(a, b) - within(a) - within(b))
        };
        let (bt, bq) = (2..=5).map(|t| (t, brute(t))).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
        assert_eq!(tau, bt);
        assert!((q - bq).abs() < 1e-12, "{q} {bq}");
    }
}
