//! The verdict rules, tested by construction.

use crate::grounds::{Rule, Side};
use crate::verdict::*;

mod holm_and_drift {
    use super::*;

    #[test]
    fn exact_mann_whitney_matches_known_values() {
        // Completely separated samples of 5 and 5: p = 2/252.
        let p = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        let p = mann_whitney(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]);
        assert!(p > 0.5, "{p}");
    }

    #[test]
    fn one_run_gives_no_verdict() {
        assert_eq!(compare(&[1.0], &[2.0, 2.1], "s", 1e-6, Rules::default()).kind, Kind::NoNoiseEstimate);
    }

    #[test]
    fn exact_with_ties() {
        // Separated with ties inside each side: still the smallest p, 2/C(16,8).
        let a = [1.0, 1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0];
        let b = [6.0, 6.0, 7.0, 8.0, 9.0, 9.0, 9.0, 10.0];
        assert!((mann_whitney(&a, &b) - 2.0 / 12870.0).abs() < 1e-12);
        // All equal: no evidence at all.
        assert_eq!(mann_whitney(&[3.0; 4], &[3.0; 4]), 1.0);
        // A tie across the sides, by hand: doubled ranks 2 4 7 7 10 12, A's
        // sum 13 against a mean of 21; 2 of the C(6,3) = 20 picks sum to 13
        // or less and 2 to 29 or more.
        let p = mann_whitney(&[1.0, 2.0, 3.0], &[3.0, 4.0, 5.0]);
        assert!((p - 0.2).abs() < 1e-12, "{p}");
    }

    #[test]
    fn a_change_no_larger_than_a_sides_drift_is_inside_noise() {
        // A's runs climb in steps, 0.40 → 0.46 → 0.52 s (a block median 24%
        // of its median apart); B lies below nearly all of A, 16% under its median.
        let step = |level: f64, n: usize| (0..n).map(move |k| level + 0.001 * k as f64);
        let a: Vec<f64> = step(0.40, 7).chain(step(0.46, 7)).chain(step(0.52, 7)).chain(step(0.52, 8)).collect();
        let b: Vec<f64> = (0..29).map(|k| 0.405 + 0.0005 * k as f64).collect();
        let d = drift(&a).unwrap();
        assert!(d.0 > 0.2 && d.0 < 0.3 && d.1 < 0.001, "{d:?}");
        let v = compare(&a, &b, "s", 1e-6, Rules::default());
        assert_eq!(v.kind, Kind::InsideNoise, "{v:?}");
        assert!(
            matches!(v.grounds.rule, Rule::SideDrift { side: Side::A, drift, .. } if drift > 0.2 && drift < 0.3),
            "{v:?}"
        );
        // Interleaved with B in one session, A's drift was B's too: the change is called.
        let one_session = Rules { interleaved: true, ..Rules::default() };
        assert_eq!(compare(&a, &b, "s", 1e-6, one_session).kind, Kind::Faster);
        // Steady sides: the same change is called.
        let a: Vec<f64> = (0..29).map(|k| 0.49 + 0.001 * (k % 7) as f64).collect();
        assert_eq!(drift(&a), None);
        assert_eq!(compare(&a, &b, "s", 1e-6, Rules::default()).kind, Kind::Faster);
    }

    #[test]
    fn holm_adjusts_step_down() {
        let q = holm(&[0.01, 0.04, 0.03, 0.2]);
        assert_eq!(q, vec![0.04, 0.09, 0.09, 0.2]);
    }

    #[test]
    fn smallest_p_and_runs_needed() {
        assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((smallest_p(6, 6) - 2.0 / 924.0).abs() < 1e-12);
        // 60 spans: 2/924 > 0.05/60 at 6 a side; 2/3432 < 0.05/60 at 7.
        assert_eq!(runs_needed(60, 0.05), 7);
        assert_eq!(runs_needed(1, 0.05), 4);
    }

    #[test]
    fn a_family_too_small_to_decide_says_so_once() {
        let items: Vec<Measured> = (0..60)
            .map(|i| Measured {
                what: format!("s{i}"),
                a: (0..6).map(|k| 10.0 + k as f64).collect(),
                b: (0..6).map(|k| 30.0 + k as f64).collect(),
                floor_abs: 0.05,
            })
            .collect();
        let f = judge("spans", items, "ms", TIME, Rules::default());
        assert!(matches!(f.power, Some(Power::TooFewRuns { runs: (6, 6), tests: 60, need: 7, .. })), "{:?}", f.power);
        assert!(
            f.verdicts.iter().all(|(_, v)| v.kind == Kind::InsideNoise),
            "fully separated, yet not significant after the correction"
        );
    }

    #[test]
    fn a_real_but_tiny_change_is_negligible() {
        let a: Vec<f64> = (0..8).map(|k| 100.0 + k as f64 * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let v = compare(&a, &b, "ms", 0.05, Rules::default());
        assert_eq!((v.kind, v.grounds.rule), (Kind::Negligible, Rule::RealUnderFloor), "{v:?}");
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        assert_eq!(compare(&a, &b, "ms", 0.05, Rules::default()).kind, Kind::Slower);
    }
}

mod one_run {
    use super::*;

    #[test]
    fn one_run_a_side_is_said_once_per_family_and_nothing_is_nan() {
        let items = vec![
            Measured { what: "zero".into(), a: vec![0.0], b: vec![0.0], floor_abs: 0.05 },
            Measured { what: "new".into(), a: vec![0.0], b: vec![2.0], floor_abs: 0.05 },
            Measured { what: "up".into(), a: vec![1.0], b: vec![2.0], floor_abs: 0.05 },
        ];
        let f = judge("spans", items, "ms", TIME, Rules::default());
        assert_eq!(f.power, Some(Power::OneRun));
        for (what, v) in &f.verdicts {
            // 0 to 0 lies under the floor: negligible even with one run a side.
            let want = if what == "zero" { Kind::Negligible } else { Kind::NoNoiseEstimate };
            assert_eq!(v.kind, want, "{what}");
        }
        assert_eq!(f.verdicts[0].1.change_pct, 0.0);
        assert!(
            f.verdicts[1].1.change_pct.is_nan() && f.verdicts[1].1.grounds.rule == Rule::NoEstimate,
            "{:?}",
            f.verdicts[1].1
        );
        let json = serde_json::to_string(&f.verdicts.iter().map(|(_, v)| v).collect::<Vec<_>>()).unwrap();
        assert!(!json.contains("NaN"), "{json}");
    }
}
