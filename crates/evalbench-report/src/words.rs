//! A verdict in words, from its grounds (`analyze::grounds`): the sentence
//! a terminal, a page or a pull request comment shows under a row, with
//! the tests that decided it. analyze decides; this says it. Every figure
//! is written from the exact values, as the verdict was made from them.

use evalbench_analyze::grounds::{Rule, Tested};
use evalbench_analyze::verdict::{fmt, pct, with_unit, Verdict};

/// The verdict's sentence: the change, then why it reads as it does.
pub fn verdict(v: &Verdict) -> String {
    let g = &v.grounds;
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

fn p_values(t: &Tested) -> String {
    format!("Mann-Whitney p = {:.4}, Holm-adjusted over {}: {:.4}", t.p, t.family, t.adjusted)
}

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
