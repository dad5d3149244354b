//! The report's words for a verdict are the sentence analyze has always
//! stored with it (`Verdict::text`, in compare.json and history), rule by
//! rule: seeded families of every shape, judged under every rule.

use std::collections::BTreeSet;

use evalbench_analyze::counters::{judge_exact, noisy_verdict, NOISY};
use evalbench_analyze::grounds::Rule;
use evalbench_analyze::verdict::{judge_each, Measured, Rules, AMOUNT, TIME};

/// xorshift64*: the same families every run.
struct Seeded(u64);
impl Seeded {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        of[(self.next() * of.len() as f64) as usize % of.len()]
    }
    /// `n` runs about `median`, with relative jitter and a drift over run order.
    fn runs(&mut self, n: usize, median: f64, jitter: f64, drift: f64) -> Vec<f64> {
        (0..n).map(|i| median * (1.0 + drift * i as f64 / n as f64 + jitter * (self.next() - 0.5))).collect()
    }
}

fn rule_name(r: Rule) -> &'static str {
    match r {
        Rule::UnderFloorUntested => "under floor, untested",
        Rule::NoEstimate => "no estimate",
        Rule::NoiseByP => "noise by p",
        Rule::Withheld => "withheld",
        Rule::SideDrift { .. } => "side drift",
        Rule::PassDrift { .. } => "pass drift",
        Rule::SessionFloor { .. } => "session floor",
        Rule::BetweenSessions { .. } => "between sessions",
        Rule::RealUnderFloor => "real under floor",
        Rule::Better => "better",
        Rule::Worse => "worse",
        Rule::WithinFloor => "within floor",
        Rule::Noise => "noise",
    }
}

#[test]
fn the_words_are_the_verdicts_own_sentence_under_every_rule() {
    let mut g = Seeded(0x005e_ed0f_7075);
    let mut seen = BTreeSet::new();
    for _ in 0..600 {
        let items: Vec<Measured> = (0..g.pick(&[1usize, 3, 6]))
            .map(|k| {
                let median = g.pick(&[0.0, 0.004, 0.35, 2.0, 450.0, 1_204_118.0]);
                let change = g.pick(&[0.0, 0.002, 0.03, 0.2, -0.2, 0.6]);
                let jitter = g.pick(&[0.0, 0.01, 0.1, 0.4]);
                let (na, nb) = (g.pick(&[1usize, 2, 5, 9, 16]), g.pick(&[1usize, 2, 5, 9, 16]));
                let drift = g.pick(&[0.0, 0.0, 0.3]);
                Measured {
                    what: format!("item {k}"),
                    a: g.runs(na, median, jitter, drift),
                    b: g.runs(nb, median * (1.0 + change), jitter, 0.0),
                    floor_abs: g.pick(&[0.0, 0.05, 50.0]),
                }
            })
            .collect();
        let rules = Rules {
            min_change_pct: g.pick(&[1.0, 5.0]),
            interval_only_when_significant: g.pick(&[false, true]),
            between_sessions: g.pick(&[None, Some(0.2)]),
            interleaved: g.pick(&[false, false, true]),
            pass_drift: g.pick(&[None, Some(0.25)]),
            withheld: g.pick(&[false, false, false, true]),
            session_floor: g.pick(&[None, Some(0.5), Some(1e6)]),
            ..Rules::default()
        };
        let unit = g.pick(&["s", "ms", ""]);
        let words = g.pick(&[TIME, AMOUNT]);
        for (_, v) in judge_each("family", items, unit, words, rules, &|_| rules).verdicts {
            assert_eq!(super::verdict(&v), v.text, "{:?}", v.grounds);
            seen.insert(rule_name(v.grounds.rule));
        }
    }
    let every = [
        "under floor, untested",
        "no estimate",
        "noise by p",
        "withheld",
        "side drift",
        "pass drift",
        "session floor",
        "between sessions",
        "real under floor",
        "better",
        "worse",
        "within floor",
        "noise",
    ];
    let missed: Vec<&str> = every.iter().copied().filter(|r| !seen.contains(r)).collect();
    assert!(missed.is_empty(), "rules no family reached: {missed:?}");
}

#[test]
fn a_counters_words_are_its_own_sentence_exact_or_not() {
    let mut g = Seeded(0x00c0_ffee_0042);
    let names = ["nrFunctionCalls", "nrThunks", "gc.totalBytes", "envs.number", "nrOpUpdates", "someNewCounter"];
    for _ in 0..300 {
        let name = g.pick(&names);
        let x = g.pick(&[0.0, 1.0, 10.0, 451_314.0, 1_204_118.0, 35_273_120.0]);
        let y = x * g.pick(&[0.0, 0.5, 1.0, 1.0, 1.0123, 2.0]) + g.pick(&[0.0, 0.0, 5.0]);
        let c = judge_exact(name, x, y);
        assert_eq!(super::counter(&c), c.text);
    }
    let noisy: Vec<&str> = NOISY.iter().copied().chain(["nrFunctionCalls"]).collect();
    for _ in 0..200 {
        let name = g.pick(&noisy);
        let median = g.pick(&[0.015, 2.0, 64_000_000.0]);
        let (na, nb) = (g.pick(&[1usize, 3, 8]), g.pick(&[1usize, 3, 8]));
        let m = Measured { what: name.to_string(), a: g.runs(na, median, 0.1, 0.0), b: g.runs(nb, median * 1.2, 0.1, 0.0), floor_abs: 0.0 };
        for (_, v) in judge_each("counters", vec![m], "", AMOUNT, Rules::default(), &|_| Rules::default()).verdicts {
            let c = noisy_verdict(name.to_string(), v);
            assert_eq!(super::counter(&c), c.text);
        }
    }
}
