//! The report's words for what analyze decided: each rule's sentence as
//! users have read it (in compare's text, compare.json and history), pinned
//! on grounds made by hand; seeded families of every shape, judged under
//! every rule, worded from their grounds, and worded the same once history
//! has stored those grounds and read them back.

use std::collections::BTreeSet;

use evalbench_analyze::counters::{judge_counters, judge_exact, noisy_verdict, CounterGrounds, NOISY};
use evalbench_analyze::grounds::{Grounds, Rule, Side, Tested};
use evalbench_analyze::verdict::{judge, judge_each, Family, Kind, Measured, Power, Rules, AMOUNT, TIME};
use evalbench_history::{Change, Why};

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
        Rule::TooFewRuns { .. } => "too few runs",
    }
}

/// A tested verdict's grounds, in ms: +12.5% from 2 to 2.25 ms.
fn tested(rule: Rule) -> Grounds {
    Grounds {
        unit: "ms".into(),
        change: 12.5,
        a_median: 2.0,
        b_median: 2.25,
        floor: 0.05,
        tested: Some(Tested { p: 0.00123, adjusted: 0.0246, family: 20 }),
        interval: Some((1.05, 1.2)),
        words: TIME,
        rule,
    }
}

#[test]
fn each_rule_reads_as_users_have_read_it() {
    let tests =
        "Mann-Whitney p = 0.0012, Holm-adjusted over 20: 0.0246; 95% interval of the ratio of medians 1.050..1.200";
    let cases: Vec<(Grounds, String)> = [tested_rules(tests), drift_and_untested_rules(tests)].concat();
    let mut seen = BTreeSet::new();
    for (g, want) in cases {
        assert_eq!(crate::words::sentence(&g), want);
        seen.insert(rule_name(g.rule));
    }
    assert_eq!(seen.len(), 14, "a rule without its sentence pinned: {seen:?}");
}

/// The sentences of the tests' own rules.
fn tested_rules(tests: &str) -> Vec<(Grounds, String)> {
    vec![
        (tested(Rule::Worse), format!("slower by 12.5% (outside noise: {tests})")),
        (
            Grounds { change: -12.5, b_median: 1.75, ..tested(Rule::Better) },
            format!("faster by 12.5% (outside noise: {tests})"),
        ),
        (Grounds { words: AMOUNT, ..tested(Rule::Worse) }, format!("more by 12.5% (outside noise: {tests})")),
        (tested(Rule::Noise), format!("+12.5%: inside run-to-run noise ({tests})")),
        (
            tested(Rule::TooFewRuns { best: 0.1, threshold: 0.05, need: 4 }),
            format!(
                "+12.5%: too few runs to call it: with these runs the test's smallest possible p is 0.100, not under \
                    0.0500; about 4 runs a side would allow a verdict ({tests})"
            ),
        ),
        (tested(Rule::RealUnderFloor), format!("+12.5%: negligible, real but under the floor 0.050 ms ({tests})")),
        (
            tested(Rule::WithinFloor),
            format!("+12.5%: negligible, the interval lies within the floor 0.050 ms ({tests})"),
        ),
        (
            tested(Rule::Withheld),
            format!(
                "+12.5%: not judged: the machine was busy beside a side's runs (the pass's machine note) ({tests})"
            ),
        ),
        (
            tested(Rule::SideDrift { side: Side::B, drift: 0.2412, p: 0.0031 }),
            format!(
                "+12.5%: inside the machine's drift: the medians of B's runs, taken in blocks in the order they ran, \
                    lie 24.1% apart (Kruskal-Wallis p = 0.0031), as far as the change ({tests})"
            ),
        ),
    ]
}

/// The sentences of the machine's and the sessions' rules, and of no test.
fn drift_and_untested_rules(tests: &str) -> Vec<(Grounds, String)> {
    vec![
        (
            tested(Rule::PassDrift { drift: 0.15 }),
            format!(
                "+12.5%: inside the machine's drift of 15.0% measured in this pass (the pass's drift note): A and B \
                    come from two sessions ({tests})"
            ),
        ),
        (
            tested(Rule::SessionFloor { moved: 0.25, floor: 3.3, allowance: 0.2 }),
            format!(
                "+12.5%: inside the drift between sessions: it moved by 0.250 ms, under a hundredth of the pass's \
                    evaluated seconds (3.300 ms), and rows so small have differed between two sessions of one flake by \
                    more than 20%; measure both in one session to judge it: run --baseline ({tests})"
            ),
        ),
        (
            tested(Rule::BetweenSessions { allowance: 0.2 }),
            format!(
                "+12.5%: inside the drift between sessions: A and B were measured in two sessions, and two sessions of \
                    one flake have differed by up to 20% (compare --between-sessions); measure both in one session to \
                    judge it: run --baseline ({tests})"
            ),
        ),
        (
            Grounds { interval: None, ..tested(Rule::NoiseByP) },
            "+12.5%: inside run-to-run noise (Mann-Whitney p = 0.0012, Holm-adjusted over 20: 0.0246)".into(),
        ),
        (
            Grounds { tested: None, interval: None, ..tested(Rule::NoEstimate) },
            "+12.5% (2.000 → 2.250 ms): no noise estimate".into(),
        ),
        (
            Grounds {
                tested: None,
                interval: None,
                change: f64::NAN,
                a_median: 0.0,
                b_median: 0.01,
                ..tested(Rule::UnderFloorUntested)
            },
            "from 0.000 to 0.010 (0.000 → 0.010 ms): negligible, under the floor of 0.050 ms".into(),
        ),
        (
            Grounds {
                unit: String::new(),
                tested: None,
                interval: None,
                a_median: 400.0,
                b_median: 450.0,
                ..tested(Rule::NoEstimate)
            },
            "+12.5% (400 → 450): no noise estimate".into(),
        ),
    ]
}

#[test]
fn every_rule_is_reached_and_worded_from_its_grounds() {
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
            let said = crate::words::verdict(&v);
            // A change is said by its word; anything else by its change first.
            match v.kind {
                k if k.is_change() => assert!(said.starts_with(&format!("{k} by ")), "{said}"),
                _ => assert!(
                    said.starts_with(&crate::figures::pct(v.grounds.change, v.grounds.a_median, v.grounds.b_median)),
                    "{said}"
                ),
            }
            // The tests' figures, as made, not as the verdict rounds them.
            if let Some(t) = v.grounds.tested {
                assert!(
                    said.contains(&format!(
                        "Mann-Whitney p = {:.4}, Holm-adjusted over {}: {:.4}",
                        t.p, t.family, t.adjusted
                    )),
                    "{said}"
                );
            }
            // History stores the grounds and words them when shown: the same sentence.
            let stored: Grounds = serde_json::from_str(&serde_json::to_string(&v.grounds).unwrap()).unwrap();
            assert_eq!(crate::words::sentence(&stored), said);
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
        "too few runs",
    ];
    let missed: Vec<&str> = every.iter().copied().filter(|r| !seen.contains(r)).collect();
    assert!(missed.is_empty(), "rules no family reached: {missed:?}");
}

#[test]
fn a_counter_reads_in_nixs_words_exact_or_not() {
    let side = |v: &[(&str, &[f64])]| -> std::collections::BTreeMap<String, Vec<f64>> {
        v.iter().map(|(k, x)| (k.to_string(), x.to_vec())).collect()
    };
    let a = side(&[
        ("nrFunctionCalls", &[1_204_118.0]),
        ("nrThunks", &[8057.0]),
        ("cpuTime", &[0.015]),
        ("gc.heapSize", &[4.0e8]),
    ]);
    let b = side(&[
        ("nrFunctionCalls", &[1_448_790.0]),
        ("nrThunks", &[8057.0]),
        ("cpuTime", &[0.017]),
        ("gc.heapSize", &[4.0e8]),
    ]);
    let (v, _) = judge_counters("cold-clean", &a, &b, Rules::default());
    let said = |name: &str| crate::words::counter(v.iter().find(|c| c.name == name).unwrap());
    assert_eq!(
        said("nrFunctionCalls"),
        "nix did 20.3% more function calls (nrFunctionCalls, exact: 1,204,118 → 1,448,790)"
    );
    assert_eq!(said("nrThunks"), "the same thunks (nrThunks, exact: 8,057 → 8,057)");
    // Each with its unit, and no stray space where a family has none.
    assert_eq!(said("cpuTime"), "cpuTime (seconds; not an exact count): +13.3% (0.015 → 0.017): no noise estimate");
    assert!(said("gc.heapSize").starts_with("gc.heapSize (bytes; not an exact count): "), "{}", said("gc.heapSize"));
    assert!(v.iter().map(crate::words::counter).all(|c| !c.contains(" )") && !c.contains("  ")), "{v:?}");
    assert_eq!(crate::words::counter(&judge_exact("nrOpUpdates", 0.0, 5.0)), "nix did more nrOpUpdates (exact: 0 → 5)");
    assert_eq!(
        crate::words::counter(&judge_exact("nrThunks", 10.0, 5.0)),
        "nix did 50.0% fewer thunks (nrThunks, exact: 10 → 5)"
    );
}

#[test]
fn a_counters_words_follow_its_kind_and_survive_history() {
    let mut g = Seeded(0x00c0_ffee_0042);
    let names = ["nrFunctionCalls", "nrThunks", "gc.totalBytes", "envs.number", "nrOpUpdates", "someNewCounter"];
    let stored =
        |c: &CounterGrounds| -> CounterGrounds { serde_json::from_str(&serde_json::to_string(c).unwrap()).unwrap() };
    for _ in 0..300 {
        let name = g.pick(&names);
        let x = g.pick(&[0.0, 1.0, 10.0, 451_314.0, 1_204_118.0, 35_273_120.0]);
        let y = x * g.pick(&[0.0, 0.5, 1.0, 1.0, 1.0123, 2.0]) + g.pick(&[0.0, 0.0, 5.0]);
        let c = judge_exact(name, x, y);
        let said = crate::words::counter(&c);
        let lead = match c.kind {
            Kind::Same => "the same ",
            Kind::More => "nix did ",
            _ => "nix did ",
        };
        assert!(
            said.starts_with(lead)
                && said.contains(&format!("exact: {} → {}", crate::figures::grouped(x), crate::figures::grouped(y))),
            "{said}"
        );
        assert!(c.kind != Kind::Less || said.contains(" fewer "), "{said}");
        assert_eq!(crate::words::counter_sentence(name, &stored(&c.grounds)), said);
    }
    let noisy: Vec<&str> = NOISY.iter().copied().chain(["nrFunctionCalls"]).collect();
    for _ in 0..200 {
        let name = g.pick(&noisy);
        let median = g.pick(&[0.015, 2.0, 64_000_000.0]);
        let (na, nb) = (g.pick(&[1usize, 3, 8]), g.pick(&[1usize, 3, 8]));
        let m = Measured {
            what: name.to_string(),
            a: g.runs(na, median, 0.1, 0.0),
            b: g.runs(nb, median * 1.2, 0.1, 0.0),
            floor_abs: 0.0,
        };
        for (_, v) in judge_each("counters", vec![m], "", AMOUNT, Rules::default(), &|_| Rules::default()).verdicts {
            let verdict = crate::words::verdict(&v);
            let c = noisy_verdict(name.to_string(), v);
            let said = crate::words::counter(&c);
            assert!(said.starts_with(&format!("{name} (")) && said.ends_with(&format!("): {verdict}")), "{said}");
            assert_eq!(crate::words::counter_sentence(name, &stored(&c.grounds)), said);
        }
    }
}

#[test]
fn a_familys_power_and_a_change_point_are_said_with_their_figures() {
    let family = |power| Family { name: "spans".into(), tests: 60, correction: "holm", power, verdicts: Vec::new() };
    let too_few = Power::TooFewRuns { runs: (6, 6), tests: 60, best: 2.0 / 924.0, alpha: 0.05, need: 7, words: TIME };
    assert_eq!(
        crate::words::power(&family(Some(too_few))).as_deref(),
        Some(
            "spans: with 6 and 6 runs no single one of 60 can be called faster/slower after Holm's correction \
                (smallest possible p 0.0022 >= 0.05/60); 7 runs a side would allow it"
        )
    );
    assert_eq!(crate::words::power(&family(None)), None);
    let one = vec![Measured { what: "x".into(), a: vec![1.0], b: vec![2.0], floor_abs: 0.0 }];
    assert_eq!(
        crate::words::power(&judge("spans", one, "ms", TIME, Rules::default())).as_deref(),
        Some(
            "spans: one run on a side gives no noise estimate and no verdict; repeat the runs (run --repeat N) to get \
                one"
        )
    );
    let change = Change {
        commit: "c40".into(),
        pass: "cold-clean".into(),
        what: "evaluated".into(),
        kind: Kind::Slower,
        change_pct: 10.0,
        p_adjusted: Some(0.001),
        baseline_commits: 40,
        runs_a: 40,
        runs_b: 6,
        why: Why::ChangePoint { found_when: "c45".into(), before_s: 0.4, after_s: 0.44, p: 0.0005 },
    };
    assert_eq!(
        crate::words::change(&change),
        "slower by 10.0% from this commit on (change point found when commit c45 was added: median 0.400 s over 40 \
            commits before, 0.440 s over 6 from here; permutation p = 0.0005)"
    );
}

/// nix's instructions as compare and history say them, each kind and both
/// thresholds, on counts judged by `analyze::instructions` itself.
#[test]
fn instructions_are_worded_with_their_threshold() {
    use evalbench_analyze::instructions::{judge as counts, InstructionsComparison};
    let said = |a: &[f64], b: &[f64]| {
        let (change_pct, threshold, kind) = counts(a, b);
        let (ma, mb) = (evalbench_analyze::spread::median(a), evalbench_analyze::spread::median(b));
        let c = InstructionsComparison {
            pass: "cold-counted".into(),
            runs_a: a.len(),
            runs_b: b.len(),
            a: ma,
            b: mb,
            change_pct,
            threshold,
            kind,
            phases: Vec::new(),
            moved: Vec::new(),
            moved_named_on_both: false,
        };
        crate::words::instructions(&c)
    };
    assert_eq!(
        said(&[413_347_277.0], &[417_480_750.0]),
        "nix executed 1.00% more instructions (413,347,277 → 417,480,750; called past 0.25%, above the counts' spread \
            measured A/A)"
    );
    assert_eq!(
        said(&[413_347_277.0], &[409_213_804.0]),
        "nix executed 1.00% fewer instructions (413,347,277 → 409,213,804; called past 0.25%, above the counts' spread \
            measured A/A)"
    );
    assert_eq!(said(&[5.0], &[5.0]), "the same instructions (5 → 5)");
    assert_eq!(
        said(&[557_334_204.0, 557_362_347.0], &[557_361_516.0, 557_361_654.0]),
        "no change in instructions: +0.0024% is inside their spread (557,348,276 → 557,361,585, medians of 2 and 2 \
            runs; called past 0.25%, above the counts' spread measured A/A)"
    );
    assert_eq!(
        said(&[4.00e8, 4.04e8, 4.02e8], &[4.06e8, 4.07e8, 4.065e8]),
        "no change in instructions: +1.1194% is inside their spread (402,000,000 → 406,500,000, medians of 3 and 3 \
            runs; a side's runs spread by 0.995%; called past 3x that, 2.985%)"
    );
    let change = Change {
        commit: "c2".into(),
        pass: "cold-counted".into(),
        what: "nix instructions".into(),
        kind: Kind::More,
        change_pct: 0.9513,
        p_adjusted: None,
        baseline_commits: 1,
        runs_a: 1,
        runs_b: 1,
        why: Why::Instructions { a: 559_200_725.0, b: 564_520_200.0, threshold_pct: 0.25 },
    };
    assert_eq!(
        crate::words::change(&change),
        "nix executed 0.95% more instructions than at the commit before (559,200,725 → 564,520,200; called past \
            0.250%, their spread)"
    );
}
