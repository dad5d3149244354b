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
//! (docs/how-many-runs.md): the larger of the two clean passes'
//! robust relative spreads, as a lognormal sigma.

use crate::verdict::{judge, Kind, Measured, Rules, TIME};

/// The lab's measured noise of evaluated seconds, as a lognormal sigma:
/// the standard deviation of ln(evaluated s) of cold-clean, 20 runs of the
/// hello flake on an otherwise idle machine (docs/how-many-runs.md).
pub const LAB_NOISE_SIGMA: f64 = 0.10;
/// The change a default run must be able to find.
pub const TARGET_SHIFT: f64 = 0.10;
/// The share of trials in which it must be found.
pub const TARGET_POWER: f64 = 0.80;
/// The smallest run count whose found rate reaches [`TARGET_POWER`] at the
/// constants above ([`TRIALS`] trials, seed [`SEED`]; the counts below it
/// were scanned with `cargo run --release --example power_calib -p
/// evalbench-history`), checked by a test. The curve is flat here (30 to
/// 33 runs: 78% to 80%), because the drift check of `verdict` costs power.
pub const DEFAULT_CLEAN_RUNS: u32 = 32;
/// Trials per run count: at 2,000 the rate is known to about ±1%.
pub const TRIALS: usize = 2000;
/// The trials' seed.
pub const SEED: u64 = 1234;

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
        Measured {
            what: "cold-clean".into(),
            a: rng.lognormal(n, 0.5, sigma),
            b: rng.lognormal(n, 0.5 * (1.0 + shift), sigma),
            floor_abs: 1e-6,
        },
        Measured {
            what: "warm-clean".into(),
            a: rng.lognormal(n, 0.1, sigma),
            b: rng.lognormal(n, 0.1, sigma),
            floor_abs: 1e-6,
        },
    ];
    let f = judge("evaluated", items, "s", TIME, Rules::default());
    (f.verdicts[0].1.kind == Kind::Slower, f.verdicts.iter().any(|(_, v)| v.kind.is_change()))
}

/// The share of `trials` seeded trials at `n` runs a side in which the
/// shifted pass is found slower.
pub fn found_rate(n: usize, sigma: f64, shift: f64, trials: usize, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    (0..trials).filter(|_| trial(&mut rng, n, sigma, shift).0).count() as f64 / trials as f64
}

/// The share of A/A trials (no shift) at `n` runs a side with any verdict.
pub fn false_alarm_rate(n: usize, sigma: f64, trials: usize, seed: u64) -> f64 {
    let mut rng = Rng::new(seed);
    (0..trials).filter(|_| trial(&mut rng, n, sigma, 0.0).1).count() as f64 / trials as f64
}

/// Warm-up runs of each clean pass that `run` makes and leaves out
/// (`--warmup`), as measured on the lab's default runs here with
/// `drift::warmup_runs` (docs/verdicts.md).
pub const DEFAULT_WARMUP_RUNS: u32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_where_ten_percent_is_first_found_in_four_of_five_and_a_over_a_holds() {
        let n = DEFAULT_CLEAN_RUNS as usize;
        let at = found_rate(n, LAB_NOISE_SIGMA, TARGET_SHIFT, TRIALS, SEED);
        let fewer = found_rate(n - 1, LAB_NOISE_SIGMA, TARGET_SHIFT, TRIALS, SEED);
        assert!(
            at >= TARGET_POWER && fewer < TARGET_POWER,
            "found {fewer} at {} runs, {at} at {n}: update DEFAULT_CLEAN_RUNS, the README and docs/how-many-runs.md",
            n - 1
        );
        let aa = false_alarm_rate(n, LAB_NOISE_SIGMA, TRIALS, 11);
        assert!(aa <= 0.05, "A/A at the default: {aa}");
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
