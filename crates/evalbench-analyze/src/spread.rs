//! The figures a verdict stands on: a sample's median and spread, and the
//! seeded bootstrap interval of the ratio of two medians (its inner loop is
//! most of a verdict's cost, so it selects instead of sorting).

use serde::{Deserialize, Serialize};

const BOOTSTRAP: usize = 2000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub n: usize,
    // An empty sample's figures are not numbers: JSON writes them as null.
    #[serde(deserialize_with = "null_is_nan")]
    pub median: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub min: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub max: f64,
    /// Median absolute deviation from the median.
    #[serde(deserialize_with = "null_is_nan")]
    pub mad: f64,
}

/// A float serde_json wrote as null (it was NaN or infinite) reads back as NaN.
pub fn null_is_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Spread {
    /// Every figure at `decimals` places, as the files write them.
    pub fn rounded(self, decimals: i32) -> Spread {
        let r = |x: f64| evalbench_bundle::num::round_to(x, decimals);
        Spread { n: self.n, median: r(self.median), min: r(self.min), max: r(self.max), mad: r(self.mad) }
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The median by selection, reordering `v`: the bootstrap's inner loop,
/// where sorting a copy per resample was most of a verdict's cost.
fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (lo, mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let mid = *mid;
    if n % 2 == 1 {
        mid
    } else {
        let below = lo.iter().copied().max_by(f64::total_cmp).unwrap_or(mid);
        (below + mid) / 2.0
    }
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
        let ma = median_in_place(&mut ra);
        if ma != 0.0 {
            ratios.push(median_in_place(&mut rb) / ma);
        }
    }
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| ratios[((q * ratios.len() as f64) as usize).min(ratios.len() - 1)];
    (at(0.025), at(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_by_selection_is_the_median() {
        for v in [vec![3.0, 1.0, 2.0], vec![4.0, 1.0, 3.0, 2.0], vec![5.0], vec![2.0, 2.0, 1.0, 9.0, 9.0, 0.5]] {
            assert_eq!(median_in_place(&mut v.clone()), median(&v), "{v:?}");
        }
    }
}
