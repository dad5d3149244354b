//! A verdict in words, from its grounds (`analyze::grounds`): the sentence
//! a terminal, a page or a pull request comment shows under a row, with
//! the tests that decided it. analyze decides; this says it. Every figure
//! is written from the exact values, as the verdict was made from them.
//! Here too what a comparison says around its verdicts: a family's word on
//! power, why a time got none, how A and B were measured in time, and the
//! changes history found.

use evalbench_analyze::comparison::{Comparison, NoVerdict};
use evalbench_analyze::counters::{CounterGrounds, CounterVerdict};
use evalbench_analyze::grounds::{Grounds, Rule, Tested};
use evalbench_analyze::verdict::{Family, Kind, Power, Verdict};
use evalbench_bundle::nix_stats as counters;

use crate::figures::{fmt, grouped, pct, with_unit};
use evalbench_history::{Change, Why};

/// The verdict's sentence: the change, then why it reads as it does.
pub fn verdict(v: &Verdict) -> String {
    sentence(&v.grounds)
}

/// A verdict's sentence from its grounds alone (as history stores them).
pub fn sentence(g: &Grounds) -> String {
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
        return match g.rule {
            Rule::TooFewRuns { best, threshold, need } => too_few(&change, (best, threshold, need), &p_values(&t)),
            _ => format!("{change}: inside run-to-run noise ({})", p_values(&t)),
        };
    };
    let tests = format!("{}; 95% interval of the ratio of medians {lo:.3}..{hi:.3}", p_values(&t));
    let floor = format!("floor {}", with_unit(g.floor, &g.unit));
    match g.rule {
        Rule::Withheld => format!(
            "{change}: not judged: the machine was busy beside a side's runs (the pass's machine note) ({tests})"
        ),
        Rule::SideDrift { side, drift, p } => format!(
            "{change}: inside the machine's drift: the medians of {side}'s runs, taken in blocks in the order they \
                ran, lie {:.1}% apart (Kruskal-Wallis p = {p:.4}), as far as the change ({tests})",
            drift * 100.0
        ),
        Rule::PassDrift { drift } => format!(
            "{change}: inside the machine's drift of {:.1}% measured in this pass (the pass's drift note): A and B \
                come from two sessions ({tests})",
            drift * 100.0
        ),
        Rule::SessionFloor { moved, floor, allowance } => format!(
            "{change}: inside the drift between sessions: it moved by {}, under a hundredth of the pass's evaluated \
                seconds ({}), and rows so small have differed between two sessions of one flake by more than {:.0}%; \
                measure both in one session to judge it: run --baseline ({tests})",
            with_unit(moved, &g.unit),
            with_unit(floor, &g.unit),
            allowance * 100.0
        ),
        Rule::BetweenSessions { allowance } => format!(
            "{change}: inside the drift between sessions: A and B were measured in two sessions, and two sessions of \
                one flake have differed by up to {:.0}% (compare --between-sessions); measure both in one session to \
                judge it: run --baseline ({tests})",
            allowance * 100.0
        ),
        Rule::RealUnderFloor => format!("{change}: negligible, real but under the {floor} ({tests})"),
        Rule::Better => format!("{better} by {:.1}% (outside noise: {tests})", -g.change),
        Rule::Worse => format!("{worse} by {:.1}% (outside noise: {tests})", g.change),
        Rule::WithinFloor => format!("{change}: negligible, the interval lies within the {floor} ({tests})"),
        Rule::Noise | Rule::NoiseByP | Rule::NoEstimate | Rule::UnderFloorUntested => {
            format!("{change}: inside run-to-run noise ({tests})")
        }
        Rule::TooFewRuns { best, threshold, need } => too_few(&change, (best, threshold, need), &tests),
    }
}

/// A change no run count like these could have called.
fn too_few(change: &str, (best, threshold, need): (f64, f64, usize), tests: &str) -> String {
    format!(
        "{change}: too few runs to call it: with these runs the test's smallest possible p is {best:.3}, not under \
            {threshold:.4}; about {need} runs a side would allow a verdict ({tests})"
    )
}

/// A counter's sentence: an exact count's change in nix's words
/// ("nix did 20.3% more function calls (nrFunctionCalls, exact: 1,204,118
/// → 1,448,790)"), a noisy one's verdict with what it is.
pub fn counter(c: &CounterVerdict) -> String {
    counter_sentence(&c.name, &c.grounds)
}

/// nix's instructions in a counted pass, A against B: "nix executed 1.02%
/// more instructions (413,347,277 → 417,563,912; the counts spread by up
/// to 0.25%, measured A/A)".
pub fn instructions(c: &evalbench_analyze::instructions::InstructionsComparison) -> String {
    use evalbench_analyze::instructions::Threshold;
    // A median of an even number of runs may end in .5: counts are read whole.
    let counts = format!("{} → {}", grouped(c.a.round()), grouped(c.b.round()));
    let held = match c.threshold {
        Threshold::Measured { pct } => format!("called past {pct}%, above the counts' spread measured A/A"),
        Threshold::Sides { pct, spread_pct } => format!(
            "a side's runs spread by {spread_pct:.3}%; called past {SPREAD_TIMES}x that, {pct:.3}%",
            SPREAD_TIMES = evalbench_analyze::instructions::SPREAD_TIMES
        ),
    };
    let runs = if c.runs_a == 1 && c.runs_b == 1 {
        String::new()
    } else {
        format!(", medians of {} and {} runs", c.runs_a, c.runs_b)
    };
    match c.kind {
        Kind::Same => format!("the same instructions ({counts}{runs})"),
        Kind::More => format!("nix executed {:.2}% more instructions ({counts}{runs}; {held})", c.change_pct),
        Kind::Less => format!("nix executed {:.2}% fewer instructions ({counts}{runs}; {held})", -c.change_pct),
        _ => {
            format!("no change in instructions: {:+.4}% is inside their spread ({counts}{runs}; {held})", c.change_pct)
        }
    }
}

/// A counter's sentence from its name and grounds alone (as history stores them).
pub fn counter_sentence(name: &str, grounds: &CounterGrounds) -> String {
    match grounds {
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

/// A change history found, as `history show` and its page say it.
pub fn change(c: &Change) -> String {
    match &c.why {
        Why::Tested(g) => sentence(g),
        Why::ChangePoint { found_when, before_s, after_s, p } => format!(
            "{} by {:.1}% from this commit on (change point found when commit {found_when} was added: median \
                {before_s:.3} s over {} commits before, {after_s:.3} s over {} from here; permutation p = {p:.4})",
            c.kind,
            ((after_s / before_s - 1.0) * 100.0).abs(),
            c.runs_a,
            c.runs_b
        ),
        Why::Counter { name, grounds } => counter_sentence(name, grounds),
        Why::Instructions { a, b, threshold_pct } => format!(
            "nix executed {:.2}% {} instructions than at the commit before ({} → {}; called past {threshold_pct:.3}%, \
                their spread)",
            c.change_pct.abs(),
            if b > a { "more" } else { "fewer" },
            grouped(a.round()),
            grouped(b.round())
        ),
    }
}

/// A family's word on power, said once for it: why none of its items can
/// be called a change with these runs, and what would allow it.
pub fn power(f: &Family) -> Option<String> {
    let name = &f.name;
    Some(match f.power? {
        Power::OneRun => format!(
            "{name}: one run on a side gives no noise estimate and no verdict; repeat the runs (run --repeat N) to get \
                one"
        ),
        Power::TooFewRuns { runs: (n1, n2), tests: m, best, alpha, need, words } => format!(
            "{name}: with {n1} and {n2} runs no single one of {m} can be called {}/{} after Holm's correction \
                (smallest possible p {best:.4} >= {alpha}/{m}); {need} runs a side would allow it",
            words.0, words.1
        ),
    })
}

/// Why a clean pass's time got no verdict.
pub fn no_verdict(why: NoVerdict) -> &'static str {
    match why {
        NoVerdict::OneRun => "one run on a side gives no noise estimate",
        NoVerdict::TooFewForFamily => "too few runs for any verdict after the correction",
    }
}

/// How A and B were measured in time: in one session, interleaved (`run
/// --baseline`), or in two; None when a side does not say.
/// What A and B were both seen to measure alike, said only of what both
/// recorded (a bundle without provenance, as Gradient's, records none).
pub fn alike(c: &Comparison) -> String {
    let both = c.both_recorded();
    let unknown: Vec<&str> =
        evalbench_bundle::provenance::GROUPS.iter().copied().filter(|g| !both.contains(g)).collect();
    let list = |v: &[&str]| match v {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    match (both.is_empty(), unknown.is_empty()) {
        (true, _) => "What A and B measured is not recorded on both sides (no provenance): whether they measured the \
            same is unknown."
            .into(),
        (false, true) => "A and B measured the same workload, system, evalbench, machine, plan and settings.".into(),
        (false, false) => format!(
            "A and B measured the same {} and settings; {} {} not recorded on both sides.",
            list(&both),
            list(&unknown),
            if unknown.len() == 1 { "is" } else { "are" }
        ),
    }
}

/// A pass whose runs did not all complete, as its first line opens:
/// `INTERRUPTED (10 of 40 runs completed)`; None for a complete pass.
pub fn pass_status(st: &evalbench_analyze::outcomes::PassRuns) -> Option<String> {
    let word = st.status.word()?;
    let done = match st.planned {
        Some(n) => format!("{} of {} completed", st.completed, crate::output::count(n, "run")),
        None => format!("{} completed, plan not recorded", crate::output::count(st.completed, "run")),
    };
    Some(format!("{word} ({done})"))
}

/// The line of a pass with no figure: its status and why there is none.
pub fn pass_status_alone(st: &evalbench_analyze::outcomes::PassRuns) -> String {
    let why = match st.status {
        evalbench_analyze::outcomes::PassStatus::NotRun => ": the run stopped before it",
        _ if st.completed == 0 => ": no figure",
        _ => "",
    };
    format!("{}{why}", pass_status(st).unwrap_or_default())
}

/// A run that did not complete: `cold-clean.11 interrupted`, with why where its words add to that.
pub fn run_ended(r: &evalbench_analyze::outcomes::RunEnd) -> String {
    let how = r.ended.map_or("did not complete", |e| e.key()).replace('_', " ");
    if r.detail == how {
        format!("{} {how}", r.run)
    } else {
        format!("{} {how}: {}", r.run, r.detail)
    }
}

/// Each side's passes whose runs did not all complete:
/// `A: cold-clean INTERRUPTED (10 of 40 runs completed): compared over those`.
pub fn sides_status(c: &Comparison) -> Vec<String> {
    [("A", &c.status_a), ("B", &c.status_b)]
        .into_iter()
        .flat_map(|(side, st)| {
            st.iter().filter_map(move |p| {
                let word = pass_status(p)?;
                let over = if p.completed > 0 { "compared over those" } else { "nothing to compare" };
                Some(format!("{side}: {} {word}: {over}", p.pass))
            })
        })
        .collect()
}

/// A measure the gate judges that one side lacks, in words.
pub fn missing(m: &evalbench_analyze::gate::Missing) -> String {
    let what = match &m.measure {
        Some(x) => format!("{} {x}", m.pass),
        None => m.pass.clone(),
    };
    format!("{what} missing in {}: {}", m.missing_in, m.why)
}

pub fn session_note(c: &Comparison) -> Option<String> {
    let (a, b) = (&c.provenance_a, &c.provenance_b);
    if c.one_bundle {
        return Some(
            "A and B are one bundle (the same runs): it is compared with itself, which says nothing about a change."
                .into(),
        );
    }
    if a.interleaved(b) {
        return Some(
            "A and B were measured in one session, interleaved pass by pass (run --baseline): what the machine did \
                meanwhile fell on both alike."
                .into(),
        );
    }
    if a.same_session(b) {
        return Some(
            "A and B are runs of one session (one `run`), not interleaved with each other: a drift over the session \
                falls on them unequally (each pass's drift note)."
                .into(),
        );
    }
    let (sa, sb) = (a.started.as_ref()?, b.started.as_ref()?);
    Some(format!(
        "A and B were measured in two sessions (started {sa} and {sb}): their times differ also by whatever the \
            machine did differently, so no time of a pass is called within the largest drift measured in it (each \
            pass's drift note); `run --baseline-rev REV` or `--baseline A_FLAKE` measures both in one."
    ))
}

/// The families' words on power and the passes' store-write notes, each
/// once: the primary and the exploratory family are shared by the passes in
/// them, so their word is said here, not under each list.
pub fn headline_notes(c: &Comparison) -> Vec<String> {
    let mut notes: Vec<String> =
        c.passes.iter().flat_map(|p| [power(&p.families.evaluated), power(&p.families.spans)]).flatten().collect();
    notes.extend(c.passes.iter().filter_map(store_writes));
    notes.sort();
    notes.dedup();
    notes
}

/// A pass's sides that wrote different numbers of `.drv` files, the pass named.
pub fn store_writes(p: &evalbench_analyze::comparison::PassComparison) -> Option<String> {
    p.store_writes.as_ref().map(|s| format!("{}: {s}", p.pass_a))
}

fn p_values(t: &Tested) -> String {
    format!("Mann-Whitney p = {:.4}, Holm-adjusted over {}: {:.4}", t.p, t.family, t.adjusted)
}
