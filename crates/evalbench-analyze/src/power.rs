//! How many runs of each clean pass a default `run` makes: the smallest
//! count at which `compare` finds a 10% change in evaluated seconds in at
//! least 80% of seeded trials, at the noise measured on the lab, with the
//! verdict rules unchanged (so an A/A pair still flags at most 5%).
//!
//! A trial is what `compare` sees of two default bundles: the family of the
//! clean passes' evaluated seconds (cold-clean and warm-clean, corrected
//! together with Holm), each side `n` runs drawn from a lognormal around
//! the pass's median. In a shifted trial only cold-clean moves (by
//! [`TARGET_SHIFT`]): the warm pass, answered from the eval cache, may not
//! move with the change, and one moved pass in a family of two is the
//! harder case. It is found when its verdict is "slower".
//!
//! The noise is the spread of the lab's evaluated seconds as measured here
//! (README, "How many runs"): the larger of the two clean passes'
//! robust relative spreads, as a lognormal sigma.

use crate::verdict::{judge, Kind, Measured, Rules, TIME};

/// The lab's measured noise of evaluated seconds, as a lognormal sigma
/// (1.4826 × MAD / median, the larger of cold-clean and warm-clean).
pub const LAB_NOISE_SIGMA: f64 = 0.05;
/// The change a default run must be able to find.
pub const TARGET_SHIFT: f64 = 0.10;
/// The share of trials in which it must be found.
pub const TARGET_POWER: f64 = 0.80;
/// The result of [`smallest_runs`] at the constants above, checked by a test.
pub const DEFAULT_CLEAN_RUNS: u32 = 5;

/// A seeded xorshift generator with normal draws: the same seed, the same trials.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    /// `n` lognormal draws around `median` with this sigma.
    pub fn lognormal(&mut self, n: usize, median: f64, sigma: f64) -> Vec<f64> {
        (0..n).map(|_| median * (sigma * self.normal()).exp()).collect()
    }
}

/// Outcome of one trial of the clean passes' family: (cold-clean found
/// slower, any verdict of faster/slower in the family).
fn trial(rng: &mut Rng, n: usize, sigma: f64, shift: f64) -> (bool, bool) {
    let items = vec![
        Measured { what: "cold-clean".into(), a: rng.lognormal(n, 0.5, sigma), b: rng.lognormal(n, 0.5 * (1.0 + shift), sigma), floor_abs: 1e-6 },
        Measured { what: "warm-clean".into(), a: rng.lognormal(n, 0.1, sigma), b: rng.lognormal(n, 0.1, sigma), floor_abs: 1e-6 },
    ];
    let f = judge("evaluated", items, "s", TIME, Rules::default());
    (f.verdicts[0].1.kind == Kind::Slower, f.verdicts.iter().any(|(_, v)| v.kind.is_change()))
}

/// The share of `trials` seeded trials at `n` runs a side in which the
/// shifted pass is found slower, and the share of A/A trials (no shift)
/// with any verdict.
pub fn rates(n: usize, sigma: f64, shift: f64, trials: usize, seed: u64) -> (f64, f64) {
    let mut rng = Rng::new(seed);
    let found = (0..trials).filter(|_| trial(&mut rng, n, sigma, shift).0).count();
    let false_alarms = (0..trials).filter(|_| trial(&mut rng, n, sigma, 0.0).1).count();
    (found as f64 / trials as f64, false_alarms as f64 / trials as f64)
}

/// The smallest runs a side (up to 30) at which the shift is found in `power` of the trials.
pub fn smallest_runs(sigma: f64, shift: f64, power: f64, trials: usize, seed: u64) -> Option<usize> {
    (2..=30).find(|&n| rates(n, sigma, shift, trials, seed).0 >= power)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_smallest_count_that_finds_ten_percent_and_keeps_a_over_a() {
        let n = smallest_runs(LAB_NOISE_SIGMA, TARGET_SHIFT, TARGET_POWER, 400, 7).unwrap();
        assert_eq!(n, DEFAULT_CLEAN_RUNS as usize, "the measured default moved: update DEFAULT_CLEAN_RUNS and the README");
        let (found, aa) = rates(n, LAB_NOISE_SIGMA, TARGET_SHIFT, 1000, 11);
        assert!(found >= TARGET_POWER, "{found}");
        assert!(aa <= 0.05, "A/A at the default: {aa}");
        let (fewer, _) = rates(n - 1, LAB_NOISE_SIGMA, TARGET_SHIFT, 1000, 11);
        assert!(fewer < TARGET_POWER, "one run fewer would do: {fewer}");
    }

    #[test]
    fn the_generator_is_lognormal_around_its_median() {
        let mut r = Rng::new(3);
        let v = r.lognormal(20001, 2.0, 0.05);
        let m = crate::verdict::median(&v);
        assert!((m / 2.0 - 1.0).abs() < 0.005, "{m}");
        let logs: Vec<f64> = v.iter().map(|x| (x / 2.0).ln()).collect();
        let sd = (logs.iter().map(|x| x * x).sum::<f64>() / logs.len() as f64).sqrt();
        assert!((sd / 0.05 - 1.0).abs() < 0.03, "{sd}");
    }
}
