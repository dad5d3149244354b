use evalbench_history::changepoint::{e_divisive, Params};
fn main() {
    let args: Vec<f64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (alpha, min, len) = (args[0], args[1] as usize, args[2] as usize);
    let p = Params { alpha, permutations: 499, min_size: min };
    let mut rng = evalbench_analyze::power::Rng::new(1);
    let (mut hit, mut aa) = (0, 0);
    for _ in 0..100 {
        let v: Vec<f64> = (0..len).map(|i| (if i >= 50 { 1.1 } else { 1.0 }) * (0.03 * rng.normal()).exp()).collect();
        let c = e_divisive(&v, p);
        if c.iter().any(|c| c.at.abs_diff(50) <= 2) {
            hit += 1;
        }
        let w: Vec<f64> = (0..len).map(|_| (0.03 * rng.normal()).exp()).collect();
        if !e_divisive(&w, p).is_empty() {
            aa += 1;
        }
    }
    println!("alpha {alpha} min {min} len {len}: found {hit}/100, A/A flagged {aa}/100");
}
