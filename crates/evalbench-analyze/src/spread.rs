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

impl Spread {
    /// (max - min) / median, percent; 0 for fewer than two or a median not above 0.
    pub fn range_pct(&self) -> f64 {
        if self.n < 2 || self.median <= 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median * 100.0
        }
    }
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

/// The median by selection, reordering `v`: the bootstrap's inner loop
/// until [`Resample`] counted its draws instead; the reference its tests
/// hold it to.
#[cfg(test)]
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
    let (mut ra, mut rb) = (Resample::of(a), Resample::of(b));
    for _ in 0..BOOTSTRAP {
        for _ in 0..a.len() {
            ra.draw(next(a.len()));
        }
        for _ in 0..b.len() {
            rb.draw(next(b.len()));
        }
        let ma = ra.median();
        let mb = rb.median();
        if ma != 0.0 {
            ratios.push(mb / ma);
        }
    }
    ratios.sort_by(f64::total_cmp);
    if ratios.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let at = |q: f64| ratios[((q * ratios.len() as f64) as usize).min(ratios.len() - 1)];
    (at(0.025), at(0.975))
}

/// A resample of `v` as how often each of its values was drawn, by rank:
/// its median is then a scan of the counts, where selecting it among the
/// drawn values (partitioning them) was nine tenths of a verdict's cost
/// (the seeded power trials: 2,000 bootstraps of 2,000 resamples each).
/// The same multiset, so the same median to the bit.
struct Resample {
    /// `v`'s values in `total_cmp` order, and each value's rank there.
    sorted: Vec<f64>,
    rank: Vec<u32>,
    counts: Vec<u32>,
}

impl Resample {
    fn of(v: &[f64]) -> Resample {
        let mut order: Vec<usize> = (0..v.len()).collect();
        order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
        let mut rank = vec![0u32; v.len()];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r as u32;
        }
        Resample { sorted: order.iter().map(|&i| v[i]).collect(), rank, counts: vec![0; v.len()] }
    }

    /// Draws `v[i]` once more.
    fn draw(&mut self, i: usize) {
        self.counts[self.rank[i] as usize] += 1;
    }

    /// The median of what was drawn since the last median (as
    /// [`median_in_place`] gives it: the mean of the two middle values of
    /// an even count); the counts start over.
    fn median(&mut self) -> f64 {
        let n: usize = self.counts.iter().map(|&c| c as usize).sum();
        if n == 0 {
            return f64::NAN;
        }
        // The k-th smallest drawn value (from 0), for k = n/2 and n/2 - 1.
        let (mut below, mut mid) = (None, None);
        let mut seen = 0usize;
        for (r, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            if below.is_none() && n.is_multiple_of(2) && seen > n / 2 - 1 {
                below = Some(self.sorted[r]);
            }
            if seen > n / 2 {
                mid = Some(self.sorted[r]);
                break;
            }
        }
        self.counts.iter_mut().for_each(|c| *c = 0);
        let mid = mid.unwrap_or(f64::NAN);
        match below {
            Some(below) => (below + mid) / 2.0,
            None => mid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counted resample's median is the selected one, to the bit, on
    /// seeded draws with ties, zeros, negative zero and NaN among them.
    #[test]
    fn the_median_of_counted_draws_is_the_median_by_selection() {
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        for round in 0..2000 {
            let len = 1 + next(40) as usize;
            let pool = [0.0, -0.0, 1.5, 2.25, 1e-9, f64::NAN, 3.0, 3.0, 7.75];
            let v: Vec<f64> =
                (0..len).map(|_| if next(3) == 0 { pool[next(9) as usize] } else { next(1000) as f64 / 7.0 }).collect();
            let mut r = Resample::of(&v);
            let draws: Vec<usize> = (0..1 + next(60)).map(|_| next(len as u64) as usize).collect();
            let mut drawn: Vec<f64> = draws.iter().map(|&i| v[i]).collect();
            for &i in &draws {
                r.draw(i);
            }
            let (ours, theirs) = (r.median(), median_in_place(&mut drawn));
            assert_eq!(ours.to_bits(), theirs.to_bits(), "round {round}: {v:?} drawn {draws:?}");
        }
    }

    #[test]
    fn the_median_by_selection_is_the_median() {
        for v in [vec![3.0, 1.0, 2.0], vec![4.0, 1.0, 3.0, 2.0], vec![5.0], vec![2.0, 2.0, 1.0, 9.0, 9.0, 0.5]] {
            assert_eq!(median_in_place(&mut v.clone()), median(&v), "{v:?}");
        }
    }
}
