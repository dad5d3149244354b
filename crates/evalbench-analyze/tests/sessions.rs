//! Verdicts between two sessions: a time change inside the allowance for
//! the machine's drift between sessions is no verdict; past it, it is.
//! Seeded lognormal runs make it so by construction.

use evalbench_analyze::grounds::Rule;
use evalbench_analyze::verdict::{compare, Kind, Rules};

#[test]
fn between_sessions_a_change_inside_the_allowance_is_no_verdict() {
    // 32 runs a side, sigma 0.10; B 12% or 30% slower.
    let mut rng = evalbench_analyze::power::Rng::new(7);
    let mut side = |scale: f64| -> Vec<f64> { (0..32).map(|_| 0.45 * scale * (0.10 * rng.normal()).exp()).collect() };
    let (a, b12, b30) = (side(1.0), side(1.12), side(1.30));
    let two = Rules { between_sessions: Some(0.20), ..Rules::default() };
    // One session: a verdict. Two: the 12% lies inside what sessions differ by here.
    assert_eq!(compare(&a, &b12, "s", 1e-6, Rules::default()).kind, Kind::Slower);
    let v = compare(&a, &b12, "s", 1e-6, two);
    assert_eq!((v.kind, v.grounds.rule), (Kind::InsideNoise, Rule::BetweenSessions { allowance: 0.20 }), "{v:?}");
    // Past the allowance it is called; no change is run-to-run noise, not drift.
    assert_eq!(compare(&a, &b30, "s", 1e-6, two).kind, Kind::Slower);
    let same = compare(&a, &a, "s", 1e-6, two);
    assert_eq!((same.kind, same.grounds.rule), (Kind::InsideNoise, Rule::Noise), "{same:?}");
}
