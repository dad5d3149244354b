//! A verdict in words, from its grounds (`analyze::grounds`): the sentence
//! a terminal, a page or a pull request comment shows under a row, with
//! the tests that decided it. analyze decides; this says it. Every figure
//! is written from the exact values, as the verdict was made from them.

use evalbench_analyze::counters::{self, grouped, CounterGrounds, CounterVerdict};
use evalbench_analyze::grounds::{Grounds, Rule, Tested};
use evalbench_analyze::verdict::{fmt, pct, with_unit, Verdict};

/// The verdict's sentence: the change, then why it reads as it does.
pub fn verdict(v: &Verdict) -> String {
    sentence(&v.grounds)
}

fn sentence(g: &Grounds) -> String {
    let change = pct(g.change, g.a_median, g.b_median);
    let (better, worse) = g.words;
    let Some(t) = g.tested else {
        let why = match g.rule {
            Rule::UnderFloorUntested => format!("negligible, under the floor of {}", with_unit(g.floor, &g.unit)),
            _ => "no noise estimate".to_string(),
        };
        return format!("{change} ({} → {}): {why}", fmt(g.a_median), with_unit(g.b_median, &g.unit));
    };
    let Some((lo, hi)) = g.interval else {
        return format!("{change}: inside run-to-run noise ({})", p_values(&t));
    };
    let tests = format!("{}; 95% interval of the ratio of medians {lo:.3}..{hi:.3}", p_values(&t));
    let floor = format!("floor {}", with_unit(g.floor, &g.unit));
    match g.rule {
        Rule::Withheld => format!("{change}: not judged: the machine was busy beside a side's runs (the pass's machine note) ({tests})"),
        Rule::SideDrift { side, drift, p } => format!(
            "{change}: inside the machine's drift: the medians of {side}'s runs, taken in blocks in the order they ran, lie {:.1}% apart (Kruskal-Wallis p = {p:.4}), as far as the change ({tests})",
            drift * 100.0
        ),
        Rule::PassDrift { drift } => format!(
            "{change}: inside the machine's drift of {:.1}% measured in this pass (the pass's drift note): A and B come from two sessions ({tests})",
            drift * 100.0
        ),
        Rule::SessionFloor { moved, floor, allowance } => format!(
            "{change}: inside the drift between sessions: it moved by {}, under a hundredth of the pass's evaluated seconds ({}), and rows so small have differed between two sessions of one flake by more than {:.0}%; measure both in one session to judge it: run --baseline ({tests})",
            with_unit(moved, &g.unit),
            with_unit(floor, &g.unit),
            allowance * 100.0
        ),
        Rule::BetweenSessions { allowance } => format!(
            "{change}: inside the drift between sessions: A and B were measured in two sessions, and two sessions of one flake have differed by up to {:.0}% (compare --between-sessions); measure both in one session to judge it: run --baseline ({tests})",
            allowance * 100.0
        ),
        Rule::RealUnderFloor => format!("{change}: negligible, real but under the {floor} ({tests})"),
        Rule::Better => format!("{better} by {:.1}% (outside noise: {tests})", -g.change),
        Rule::Worse => format!("{worse} by {:.1}% (outside noise: {tests})", g.change),
        Rule::WithinFloor => format!("{change}: negligible, the interval lies within the {floor} ({tests})"),
        Rule::Noise | Rule::NoiseByP | Rule::NoEstimate | Rule::UnderFloorUntested => format!("{change}: inside run-to-run noise ({tests})"),
    }
}

/// A counter's sentence: an exact count's change in nix's words
/// ("nix did 20.3% more function calls (nrFunctionCalls, exact: 1,204,118
/// → 1,448,790)"), a noisy one's verdict with what it is.
pub fn counter(c: &CounterVerdict) -> String {
    let name = c.name.as_str();
    match &c.grounds {
        CounterGrounds::Exact { a, b, change } => {
            let pct = change.map(|c| format!("{:.1}% ", c.abs())).unwrap_or_default();
            let exact = format!("exact: {} → {}", grouped(*a), grouped(*b));
            let w = counters::words(name);
            // "function calls (nrFunctionCalls, exact: 1 → 2)"; a counter without words is its key.
            let label = if w == name { format!("{name} ({exact})") } else { format!("{w} ({name}, {exact})") };
            if a == b {
                format!("the same {label}")
            } else if b > a {
                format!("nix did {pct}more {label}")
            } else {
                format!("nix did {pct}fewer {label}")
            }
        }
        CounterGrounds::Noisy(g) => {
            let noisy = counters::NOISY.contains(&name);
            let note = match counters::unit(name) {
                Some(u) if noisy => format!("{u}; not an exact count"),
                None if noisy => "not an exact count".to_string(),
                _ => "differs between repeats of one input".to_string(),
            };
            format!("{name} ({note}): {}", sentence(g))
        }
    }
}

fn p_values(t: &Tested) -> String {
    format!("Mann-Whitney p = {:.4}, Holm-adjusted over {}: {:.4}", t.p, t.family, t.adjusted)
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
