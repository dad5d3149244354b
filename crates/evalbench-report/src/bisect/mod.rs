//! `evalbench bisect`: what it found, as bisect.json has it (one model for
//! the counters' bisect, one for the time bisect) and as bisect.txt and
//! bisect.md say it. The search is `evalbench_analyze::bisect`; the binary
//! probes the commits and fills these in.

use std::fmt::Write;

use evalbench_analyze::bisect::{Class, Commit, Moved, Probed};
use serde::Serialize;

use crate::figures::grouped;

/// A commit as people read it: its first 12 hex digits.
pub fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

/// bisect.json of a counters' bisect: the commits, what was found, and
/// every probe in order.
#[derive(Serialize)]
pub struct Counted<'a> {
    pub flake: String,
    pub good: &'a Commit,
    pub bad: &'a Commit,
    pub commits: usize,
    pub counters: &'a [String],
    /// The counters the probes were judged on: those that moved past the threshold from GOOD to BAD.
    pub judged: &'a [String],
    pub threshold_pct: f64,
    /// false: GOOD and BAD count alike (within the threshold): nothing to find.
    pub differ: bool,
    pub found: Vec<Found<'a>>,
    /// Exact changes under the threshold the probes met: listed, never searched for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub minor: Vec<MinorFound<'a>>,
    pub probes: Vec<Probe<'a>>,
}

#[derive(Serialize)]
pub struct Found<'a> {
    pub commit: &'a Commit,
    /// The last commit before it that counted as before.
    pub before: &'a Commit,
    /// Commits between them that could not be evaluated: any of them (or `commit`) made the step.
    pub among: Vec<&'a Commit>,
    pub moved: &'a [Moved],
}

/// A change under the threshold, between two commits a probe left apart.
#[derive(Serialize)]
pub struct MinorFound<'a> {
    pub from: &'a Commit,
    pub to: &'a Commit,
    pub moved: &'a [Moved],
}

#[derive(Serialize)]
pub struct Probe<'a> {
    pub commit: &'a Commit,
    #[serde(flatten)]
    pub probed: &'a Probed,
    pub seconds: f64,
}

/// The counters that moved, headline ones first, at most four named (all are in bisect.json).
fn moved_text(m: &[Moved]) -> String {
    let mut s = m
        .iter()
        .take(4)
        .map(|m| format!("{} {} → {} ({:+.1}%)", m.counter, grouped(m.before), grouped(m.after), m.change_pct))
        .collect::<Vec<_>>()
        .join(", ");
    if m.len() > 4 {
        s.push_str(&format!(", and {} more counters", m.len() - 4));
    }
    s
}

/// bisect.txt of a counters' bisect.
pub fn counted_text(d: &Counted) -> String {
    let mut t = String::new();
    let (commits, good, bad, pct) = (d.commits, short(&d.good.commit), short(&d.bad.commit), d.threshold_pct);
    let _ = match (d.counters.len(), d.judged) {
        (1, _) => {
            writeln!(t, "{commits} commits from GOOD {good} to BAD {bad}; {} judged, a move past {pct}%", d.counters[0])
        }
        (n, []) => writeln!(
            t,
            "{commits} commits from GOOD {good} to BAD {bad}; {n} exact counters judged, a move past {pct}%"
        ),
        (n, judged) => writeln!(
            t,
            "{commits} commits from GOOD {good} to BAD {bad}; of {n} exact counters, probes judged on the {} that \
                moved past {pct}% from GOOD to BAD ({})",
            judged.len(),
            judged.join(", ")
        ),
    };
    if !d.differ {
        let _ = writeln!(
            t,
            "nothing to find: GOOD and BAD count alike within {}% (a counter that moved and came back between them \
                cannot be seen by a bisect)",
            d.threshold_pct
        );
    } else if d.found.is_empty() {
        let _ = writeln!(
            t,
            "no single step: the counters drifted over the range, no commit moving them past {}%",
            d.threshold_pct
        );
    } else {
        let _ = writeln!(t, "found {} step{}:", d.found.len(), if d.found.len() == 1 { "" } else { "s" });
        for f in &d.found {
            let _ = writeln!(t, "  {} {} {}", short(&f.commit.commit), f.commit.date, f.commit.subject);
            if !f.among.is_empty() {
                let named: Vec<&str> = f.among.iter().map(|c| short(&c.commit)).collect();
                let _ = writeln!(
                    t,
                    "    or one of the commits before it that could not be evaluated: {}",
                    named.join(", ")
                );
            }
            let _ = writeln!(t, "    {}", moved_text(f.moved));
        }
    }
    if !d.minor.is_empty() {
        let _ = writeln!(t, "under the threshold, met on the way (not searched for):");
        for m in &d.minor {
            let _ =
                writeln!(t, "  between {} and {}: {}", short(&m.from.commit), short(&m.to.commit), moved_text(m.moved));
        }
    }
    let skipped: Vec<&str> =
        d.probes.iter().filter(|p| matches!(p.probed, Probed::Skipped(_))).map(|p| short(&p.commit.commit)).collect();
    if !skipped.is_empty() {
        let _ = writeln!(t, "skipped (could not be evaluated): {}", skipped.join(", "));
    }
    probes_text(&mut t, d);
    t
}

/// Every probe in the order made, with its first counters or why it was skipped.
fn probes_text(t: &mut String, d: &Counted) {
    let _ = writeln!(t, "probes, in the order made:");
    for (k, p) in d.probes.iter().enumerate() {
        let what = match p.probed {
            Probed::Counted(c) => d
                .counters
                .iter()
                .take(3)
                .filter_map(|n| c.get(n).map(|v| format!("{n} {}", grouped(*v))))
                .collect::<Vec<_>>()
                .join(", "),
            Probed::Skipped(why) => format!("skipped: {why}"),
        };
        let _ = writeln!(
            t,
            "  {:>2}. {} {:<40} {what}",
            k + 1,
            short(&p.commit.commit),
            crate::summary::text::clip(&p.commit.subject, 40)
        );
    }
}

/// bisect.md of a counters' bisect: for a pull request comment.
pub fn counted_markdown(d: &Counted) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut t = format!(
        "## evalbench bisect\n\n{} commits from `{}` to `{}`.\n\n",
        d.commits,
        short(&d.good.commit),
        short(&d.bad.commit)
    );
    if !d.differ {
        let _ = writeln!(t, "Nothing to find: GOOD and BAD count alike within {}%.\n", d.threshold_pct);
    }
    if !d.found.is_empty() {
        t.push_str("| commit | date | subject | moved |\n|---|---|---|---|\n");
        for f in &d.found {
            let _ = writeln!(
                t,
                "| `{}` | {} | {} | {} |",
                short(&f.commit.commit),
                cell(&f.commit.date),
                cell(&f.commit.subject),
                cell(&moved_text(f.moved))
            );
        }
        t.push('\n');
    }
    let _ = writeln!(t, "{}.", crate::output::count(d.probes.len(), "probe"));
    t
}

/// One measurement of a time bisect: a commit against the last good one
/// in one session, its verdict's words and figures.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub commit: String,
    pub against: String,
    pub class: Class,
    /// compare's verdict on the measure: its kind and change (None when the session gave none).
    pub kind: Option<String>,
    pub change_pct: Option<f64>,
    pub ratio_interval: Option<[f64; 2]>,
    pub seconds: f64,
}

/// bisect.json of a time bisect (`--measure`).
#[derive(Serialize)]
pub struct Timed<'a> {
    pub measure: &'a str,
    pub good: &'a Commit,
    pub bad: &'a Commit,
    pub commits: usize,
    pub repeat: u32,
    pub differ: bool,
    pub undecided_ends: bool,
    pub found: Option<&'a Commit>,
    pub before: Option<&'a Commit>,
    pub among: Vec<&'a Commit>,
    pub probes: &'a [Measured],
    /// Sessions BAD against GOOD was given (`--retries` + 1), for the text.
    #[serde(skip)]
    pub sessions_tried: u32,
}

/// bisect.txt of a time bisect.
pub fn timed_text(d: &Timed) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} commits from GOOD {} to BAD {}; {} measured, {} runs a side a session",
        d.commits,
        short(&d.good.commit),
        short(&d.bad.commit),
        d.measure,
        d.repeat
    );
    match (d.found, d.before) {
        _ if d.undecided_ends => {
            let _ = writeln!(
                t,
                "undecided: BAD against GOOD gave no verdict after {} sessions; nothing is said of the commits between",
                d.sessions_tried
            );
        }
        (Some(c), Some(before)) => {
            let _ = writeln!(t, "found: {} {} {}", short(&c.commit), c.date, c.subject);
            let _ = writeln!(t, "    after {} ({}), the last measured as GOOD", short(&before.commit), before.subject);
            if !d.among.is_empty() {
                let named: Vec<&str> = d.among.iter().map(|c| short(&c.commit)).collect();
                let _ = writeln!(t, "    or one of the undecided commits between them: {}", named.join(", "));
            }
        }
        _ => {
            let _ = writeln!(t, "nothing to find: BAD is not slower than GOOD outside the noise");
        }
    }
    let _ = writeln!(t, "measurements, in the order made:");
    for (k, m) in d.probes.iter().enumerate() {
        let what = match (&m.kind, m.change_pct) {
            (Some(kind), Some(p)) => format!("{p:+.1}%, {kind}"),
            _ => "no verdict".into(),
        };
        let class = match &m.class {
            Class::Good => "good".to_string(),
            Class::Bad => "bad".to_string(),
            Class::Undecided(why) => format!("undecided ({why})"),
        };
        let _ = writeln!(t, "  {:>2}. {} against {}: {what}: {class}", k + 1, short(&m.commit), short(&m.against));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(k: usize) -> Commit {
        Commit {
            commit: format!("{k:x}").repeat(40)[..40].to_string(),
            subject: format!("commit {k}"),
            date: format!("2026-12-0{k}T00:00:00Z"),
        }
    }

    #[test]
    fn a_time_bisect_reads_with_its_step_and_every_measurement() {
        let c: Vec<Commit> = (1..=5).map(commit).collect();
        let m = |k: usize, against: usize, class: Class, kind: Option<(&str, f64)>| Measured {
            commit: c[k].commit.clone(),
            against: c[against].commit.clone(),
            class,
            kind: kind.map(|k| k.0.to_string()),
            change_pct: kind.map(|k| k.1),
            ratio_interval: kind.map(|_| [1.01, 1.2]),
            seconds: 30.0,
        };
        let probes = [
            m(4, 0, Class::Bad, Some(("slower", 9.96))),
            m(2, 0, Class::Undecided("no verdict: withheld".into()), Some(("withheld", 4.0))),
            m(3, 0, Class::Bad, Some(("slower", 10.2))),
            m(1, 0, Class::Good, None),
        ];
        let d = Timed {
            measure: "evaluated",
            good: &c[0],
            bad: &c[4],
            commits: 5,
            repeat: 5,
            differ: true,
            undecided_ends: false,
            found: Some(&c[2]),
            before: Some(&c[1]),
            among: vec![],
            probes: &probes,
            sessions_tried: 2,
        };
        assert_eq!(
            timed_text(&d),
            "5 commits from GOOD 111111111111 to BAD 555555555555; evaluated measured, 5 runs a side a session
found: 333333333333 2026-12-03T00:00:00Z commit 3
    after 222222222222 (commit 2), the last measured as GOOD
measurements, in the order made:
   1. 555555555555 against 111111111111: +10.0%, slower: bad
   2. 333333333333 against 111111111111: +4.0%, withheld: undecided (no verdict: withheld)
   3. 444444444444 against 111111111111: +10.2%, slower: bad
   4. 222222222222 against 111111111111: no verdict: good
"
        );
        let undecided = Timed { undecided_ends: true, found: None, before: None, probes: &probes[..1], ..d };
        assert!(timed_text(&undecided).contains("\nundecided: BAD against GOOD gave no verdict after 2 sessions;"));
        let nothing = Timed { undecided_ends: false, found: None, before: None, probes: &[], ..undecided };
        assert!(timed_text(&nothing).contains("\nnothing to find: BAD is not slower than GOOD outside the noise\n"));
    }

    #[test]
    fn a_counters_bisect_names_its_step_what_moved_and_what_was_skipped() {
        let c: Vec<Commit> = (1..=4).map(commit).collect();
        let counts = |calls: f64| Probed::Counted([("nrFunctionCalls".to_string(), calls)].into_iter().collect());
        let probed = [counts(9148.0), counts(9418.0), Probed::Skipped("no counters".into())];
        let moved = [Moved { counter: "nrFunctionCalls".into(), before: 9148.0, after: 9418.0, change_pct: 2.95 }];
        let d = Counted {
            flake: "repo".into(),
            good: &c[0],
            bad: &c[3],
            commits: 4,
            counters: &["nrFunctionCalls".to_string()],
            judged: &["nrFunctionCalls".to_string()],
            threshold_pct: 1.0,
            differ: true,
            found: vec![Found { commit: &c[2], before: &c[0], among: vec![&c[1]], moved: &moved }],
            minor: Vec::new(),
            probes: vec![
                Probe { commit: &c[0], probed: &probed[0], seconds: 6.0 },
                Probe { commit: &c[3], probed: &probed[1], seconds: 6.0 },
                Probe { commit: &c[1], probed: &probed[2], seconds: 2.0 },
            ],
        };
        assert_eq!(
            counted_text(&d),
            "4 commits from GOOD 111111111111 to BAD 444444444444; nrFunctionCalls judged, a move past 1%
found 1 step:
  333333333333 2026-12-03T00:00:00Z commit 3
    or one of the commits before it that could not be evaluated: 222222222222
    nrFunctionCalls 9,148 → 9,418 (+3.0%)
skipped (could not be evaluated): 222222222222
probes, in the order made:
   1. 111111111111 commit 1                                 nrFunctionCalls 9,148
   2. 444444444444 commit 4                                 nrFunctionCalls 9,418
   3. 222222222222 commit 2                                 skipped: no counters
"
        );
        assert!(counted_markdown(&d)
            .contains("| `333333333333` | 2026-12-03T00:00:00Z | commit 3 | nrFunctionCalls 9,148 → 9,418 (+3.0%) |"));
    }
}
