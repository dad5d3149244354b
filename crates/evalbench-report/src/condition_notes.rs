//! What a pass's conditions mean for its verdicts, in words: the notes
//! compare prints once per pass (the machine beside the runs, the pass's
//! drift, the labs crossed, a warm-up left in, a trend) and where an
//! evaluated time fell back to the spans' extent. analyze measures the
//! conditions (`analyze::conditions`); this says them.

use evalbench_analyze::conditions::Conditions;

/// Which runs' evaluated seconds fell back to their spans' extent, said
/// beside the figure (`A: 1 of its runs (cold-clean) had no evaluated time in run.json; ...`).
pub fn fallback(c: &Conditions) -> Option<String> {
    let parts: Vec<String> = c
        .wall_from_spans
        .iter()
        .map(|(side, runs)| {
            let named = if runs.len() > 3 { format!("{}, ...", runs[..3].join(", ")) } else { runs.join(", ") };
            format!("{side}: {} ({named})", if runs.len() == 1 { "1 run".to_string() } else { format!("{} runs", runs.len()) })
        })
        .collect();
    (!parts.is_empty())
        .then(|| format!("{} had no evaluated time in run.json (none, or unreadable): the spans' extent stands in for it", parts.join("; ")))
}

/// What the rows of the pass refer to, each said once.
pub fn notes(c: &Conditions) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(f) = fallback(c) {
        out.push(format!("evaluated: {f}"));
    }
    if let Some(w) = &c.withheld {
        out.push(format!("machine: {w}"));
    } else {
        for (side, m) in [("A", &c.machine_a), ("B", &c.machine_b)] {
            if let Some(s) = m.as_ref().and_then(|m| m.sentence()) {
                out.push(format!("machine: {side}: {s}, too few runs to withhold its times"));
            }
        }
    }
    if let Some(d) = &c.drift {
        out.push(format!("drift: {}", d.sentence()));
    }
    if let Some([[a0, a1], [b0, b1]]) = c.crossed {
        out.push(format!(
            "labs: the sides crossed between the session's two labs round by round (runs on A's lab and on B's: A {a0} and {a1}, B {b0} and {b1}): a difference between the labs falls on both sides"
        ));
    }
    for (side, n) in &c.warmup {
        out.push(format!(
            "warm-up: {side}'s first {} above the rest's spread: a warm-up the run did not leave out (raise `run --warmup` by {})",
            if *n == 1 { "run lay".to_string() } else { format!("{n} runs lay") },
            n
        ));
    }
    for t in &c.trends {
        out.push(format!("trend: {}", t.trend.sentence(&format!("{}'s evaluated seconds", t.side), "s")));
    }
    out
}
