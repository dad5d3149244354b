//! What a pass's conditions mean for its verdicts, in words: the notes
//! compare prints once per pass (the machine beside the runs, the pass's
//! drift, the labs crossed, a warm-up left in, a trend) and where an
//! evaluated time fell back to the spans' extent. analyze measures the
//! conditions (`analyze::conditions`); this says them.

use evalbench_analyze::conditions::Conditions;
use evalbench_analyze::drift::{DriftBound, Trend};
use evalbench_analyze::machine::SideMachine;

use crate::figures::ranges;

/// "other processes used 0.90 cores (median) during runs 17-32 (16 of 32)",
/// or None when no run was busy.
pub fn machine(m: &SideMachine) -> Option<String> {
    (!m.busy_runs.is_empty()).then(|| {
        format!(
            "other processes used {:.2} cores (median) during {} {} ({} of {})",
            m.busy_cores_median,
            if m.busy_runs.len() == 1 { "run" } else { "runs" },
            ranges(&m.busy_runs),
            m.busy_runs.len(),
            m.recorded
        )
    })
}

/// Why no time of the pass is judged, when a side was busy.
pub fn withheld(c: &Conditions) -> Option<String> {
    if !c.withheld {
        return None;
    }
    let busy: Vec<String> = [("A", &c.machine_a), ("B", &c.machine_b)]
        .iter()
        .filter_map(|(side, m)| m.as_ref().filter(|m| m.busy()).and_then(machine).map(|s| format!("{side}: {s}")))
        .collect();
    Some(format!(
        "no time of this pass is judged: the machine was busy beside its runs ({}); a busy run's times are the \
            machine's as much as the change's. nix's exact counters are still judged",
        busy.join("; ")
    ))
}

/// The pass's drift, and what it holds the verdicts to.
pub fn drift(d: &DriftBound) -> String {
    format!(
        "the runs drifted while they were made: the medians of {}'s runs of {}, taken in blocks in the order they ran, \
            lie {:.1}% apart (Kruskal-Wallis p = {:.4}); between two sessions no time of this pass is called faster or \
            slower within that",
        d.side,
        d.on,
        d.fraction * 100.0,
        d.p
    )
}

/// "A's evaluated seconds rose through its runs (Kendall's τ = 0.62, p =
/// 0.0001): 0.510 s in the first quarter, 0.850 s in the last".
pub fn trend(t: &Trend, subject: &str, unit: &str) -> String {
    format!(
        "{subject} {} through its runs (Kendall's τ = {:.2}, p = {:.4}): {:.3} {unit} in the first quarter, {:.3} \
            {unit} in the last",
        if t.tau > 0.0 { "rose" } else { "fell" },
        t.tau,
        t.p,
        t.first,
        t.last
    )
}

/// Which runs have no evaluated seconds and are left out of the evaluated
/// verdict, said beside the figure (`A: 1 run (cold-clean) had no evaluated time in run.json; ...`).
pub fn fallback(c: &Conditions) -> Option<String> {
    let parts: Vec<String> = c
        .no_evaluated
        .iter()
        .map(|(side, runs)| {
            let named = if runs.len() > 3 { format!("{}, ...", runs[..3].join(", ")) } else { runs.join(", ") };
            format!(
                "{side}: {} ({named})",
                if runs.len() == 1 { "1 run".to_string() } else { format!("{} runs", runs.len()) }
            )
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "{} had no evaluated time in run.json (none, or unreadable): left out of the evaluated seconds",
            parts.join("; ")
        )
    })
}

/// What the rows of the pass refer to, each said once.
pub fn notes(c: &Conditions) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = fallback(c) {
        out.push(format!("evaluated: {f}"));
    }
    if let Some(w) = withheld(c) {
        out.push(format!("machine: {w}"));
    } else {
        for (side, m) in [("A", &c.machine_a), ("B", &c.machine_b)] {
            if let Some(s) = m.as_ref().and_then(machine) {
                out.push(format!("machine: {side}: {s}, too few runs to withhold its times"));
            }
        }
    }
    if let Some(d) = &c.drift {
        out.push(format!("drift: {}", drift(d)));
    }
    if let Some([[a0, a1], [b0, b1]]) = c.crossed {
        out.push(format!(
            "labs: the sides crossed between the session's two labs round by round (runs on A's lab and on B's: A {a0} \
                and {a1}, B {b0} and {b1}): a difference between the labs falls on both sides"
        ));
    }
    for (side, n) in &c.warmup {
        out.push(format!(
            "warm-up: {side}'s first {} above the rest's spread: a warm-up the run did not leave out (raise `run \
                --warmup` by {})",
            if *n == 1 { "run lay".to_string() } else { format!("{n} runs lay") },
            n
        ));
    }
    for t in &c.trends {
        out.push(format!("trend: {}", trend(&t.trend, &format!("{}'s evaluated seconds", t.side), "s")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalbench_analyze::store_writes::{RunsApart, SidesApart};

    #[test]
    fn the_conditions_read_with_their_figures() {
        let m = SideMachine {
            runs: 32,
            recorded: 32,
            other_cores_median: 0.9,
            other_cores_max: 0.9,
            steal_cores_max: 0.0,
            busy_runs: std::iter::once(3).chain(17..=32).collect(),
            busy_cores_median: 0.9,
        };
        assert_eq!(machine(&m).unwrap(), "other processes used 0.90 cores (median) during runs 3, 17-32 (17 of 32)");
        assert_eq!(machine(&SideMachine { busy_runs: vec![], ..m.clone() }), None);
        let c = Conditions { machine_b: Some(m), withheld: true, ..Conditions::default() };
        assert!(withheld(&c).unwrap().starts_with(
            "no time of this pass is judged: the machine was busy beside its runs (B: other processes used 0.90 cores"
        ));
        let t = Trend { tau: -1.0, p: 0.00002, first: 0.99, last: 0.86 };
        assert_eq!(
            trend(&t, "B's evaluated seconds", "s"),
            "B's evaluated seconds fell through its runs (Kendall's τ = -1.00, p = 0.0000): 0.990 s in the first \
                quarter, 0.860 s in the last"
        );
        let r = RunsApart { runs: 10, usual: 0, apart: (1..=7).map(|k| (format!("p.{k}"), k)).collect() };
        assert!(
            r.to_string().contains("3 of 10 runs wrote 0, but p.1 1, p.2 2, p.3 3, p.4 4, p.5 5 and 2 more."),
            "{r}"
        );
        let s = SidesApart { a: vec![1; 10], b: vec![0] };
        assert!(s.to_string().contains("A's runs wrote 1, 1, 1, 1, 1, 1, 1, 1 and 2 more, B's 0."), "{s}");
    }
}
