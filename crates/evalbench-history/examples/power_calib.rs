//! Prints the found rate and the A/A rate of the default-run trials per run
//! count (`evalbench_analyze::power`), for docs/how-many-runs.md's table. With an
//! argument TRIALS, the same at that many trials and another seed.
fn main() {
    use evalbench_analyze::power::*;
    let sigma = LAB_NOISE_SIGMA;
    let trials: Option<usize> = std::env::args().nth(1).map(|s| s.parse().expect("a trial count"));
    let (counts, trials, seed): (&[usize], usize, u64) = match trials {
        None => (&[5, 10, 20, 26, 29, 30, 31, 32, 33, 35, 38], TRIALS, SEED),
        Some(t) => (&[5, 10, 20, 26, 29, 30, 31, 32, 33, 35, 38], t, 7),
    };
    for &n in counts {
        println!(
            "n {n:>2}: found {:.3}, A/A {:.3} ({trials} trials each, seed {seed})",
            found_rate(n, sigma, TARGET_SHIFT, trials, seed),
            false_alarm_rate(n, sigma, trials, seed)
        );
    }
}
