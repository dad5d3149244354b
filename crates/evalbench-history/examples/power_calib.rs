//! Prints the found rate and the A/A rate of the default-run trials per run
//! count (`evalbench_analyze::power`), for the README's table.
fn main() {
    use evalbench_analyze::power::*;
    let sigma: f64 = std::env::args().nth(1).map_or(LAB_NOISE_SIGMA, |s| s.parse().expect("a sigma"));
    for n in [2, 5, 10, 15, 20, 22, 24, 25, 26, 27, 28, 29, 30, 35, 40] {
        println!(
            "n {n:>2}: found {:.3}, A/A {:.3} ({TRIALS} trials each, seed 7)",
            found_rate(n, sigma, TARGET_SHIFT, TRIALS, 7),
            false_alarm_rate(n, sigma, TRIALS, 7)
        );
    }
}
