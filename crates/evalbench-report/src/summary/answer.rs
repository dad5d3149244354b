//! The answer's lines, first in summary.txt and in `whatif`: per clean pass
//! its median evaluated time with its spread and the run nearest it, the
//! three largest steps on its critical path, and what halving the largest
//! would buy (`analyze::over_runs`); then the passes not timed, the
//! warnings' count and where the rest is. For the main job's two clean
//! passes, nine lines.

use std::fmt::Write as _;

use evalbench_bundle::layout;

use crate::summary::text::{clip, runs_named, temperature};
use crate::summary::Summary;
use evalbench_analyze::outcomes::{PassRuns, PassStatus};

/// Step labels in the head are cut to this many characters.
const HEAD_STEP: usize = 44;

/// The first lines: the answer per clean pass, the passes left out, the
/// warnings' count, and where the rest is.
pub(crate) fn head(t: &mut String, s: &Summary) {
    let _ = writeln!(t, "evalbench summary of {}", s.bundle);
    let mut said: Vec<&str> = Vec::new();
    for st in &s.pass_status {
        match s.answers.iter().find(|a| a.pass == st.pass) {
            Some(a) => answer_head(t, a, Some(st)),
            None if st.status != PassStatus::Complete => status_head(t, st),
            None => continue,
        }
        said.push(&st.pass);
    }
    for a in s.answers.iter().filter(|a| !said.contains(&a.pass.as_str())) {
        answer_head(t, a, None);
    }
    if s.answers.is_empty() && !s.pass_status.iter().any(|st| layout::is_clean(&st.pass)) {
        let _ = writeln!(t, "No clean pass to time.");
    }
    for c in &s.instructions {
        let _ = writeln!(t, "{}", crate::summary::instructions::line(c));
    }
    let distorted: Vec<&str> = s
        .not_summarized
        .iter()
        .filter(|n| layout::PassKind::of(&n.pass) == layout::PassKind::Instrumented)
        .map(|n| n.pass.as_str())
        .collect();
    if !distorted.is_empty() {
        let _ = writeln!(
            t,
            "Not timed: {} (perf, strace and auto_explain distort their timings; their counters are below).",
            runs_named(&distorted)
        );
    }
    crate::summary::attributes::lines(t, &s.attributes);
    let counted: Vec<&str> =
        s.not_summarized.iter().filter(|n| layout::is_counted(&n.pass)).map(|n| n.pass.as_str()).collect();
    if !counted.is_empty() {
        let _ = writeln!(
            t,
            "Not timed: {} (Valgrind runs nix 15-30 times slower; their instructions are above).",
            runs_named(&counted)
        );
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(
            t,
            "{} (the first: {})",
            crate::output::count(s.warnings.len(), "warning"),
            clip(&s.warnings[0].to_string(), 100)
        );
    }
    let _ = writeln!(
        t,
        "Below: each pass in detail, nix's counters, provenance, warnings. Own time = a span less its children; total \
            includes them."
    );
}

/// A clean pass's first lines: how its runs ended where some did not, its
/// median evaluated time over the runs that completed, its path.
fn answer_head(t: &mut String, a: &evalbench_analyze::over_runs::PassAnswer, st: Option<&PassRuns>) {
    let e = &a.evaluated_s;
    let status = st.and_then(crate::words::pass_status).map(|s| format!("{s}: ")).unwrap_or_default();
    let over = st
        .map_or_else(|| if e.n == 1 { "one run".to_string() } else { format!("over {} runs", e.n) }, |st| st.over(e.n));
    let runs = if e.n > 1 {
        format!(
            " (MAD {:.3} s, {:.3}..{:.3} s {over}; run {} nearest the median)",
            e.mad, e.min, e.max, a.median_run_number
        )
    } else {
        format!(" ({over})")
    };
    if e.n == 0 {
        let _ = writeln!(
            t,
            "{:<11} {status}evaluated unknown: no run gave an evaluated time, {}",
            a.pass,
            temperature(layout::is_cold(&a.pass))
        );
    } else {
        let _ = writeln!(
            t,
            "{:<11} {status}evaluated median {:.3} s{runs}, {}",
            a.pass,
            e.median,
            temperature(layout::is_cold(&a.pass))
        );
    }
    if let Some(st) = st {
        ended_lines(t, st);
    }
    t.push_str(&answer_lines(a, "  "));
}

/// A pass with no figure: how its runs ended.
fn status_head(t: &mut String, st: &PassRuns) {
    let _ = writeln!(t, "{:<11} {}", st.pass, crate::words::pass_status_alone(st));
    ended_lines(t, st);
}

/// Each run that did not complete, and how.
fn ended_lines(t: &mut String, st: &PassRuns) {
    for r in &st.incomplete {
        let _ = writeln!(t, "  {}", clip(&crate::words::run_ended(r), 160));
    }
}

/// A pass's critical path in two lines: its largest steps, and what
/// halving the largest would buy. Also `whatif`'s first lines.
pub fn answer_lines(a: &evalbench_analyze::over_runs::PassAnswer, indent: &str) -> String {
    let mut t = String::new();
    // A figure that fell back says so where it is printed.
    if !a.no_evaluated.is_empty() {
        let n = a.no_evaluated.len();
        let _ = writeln!(
            t,
            "{indent}({} of {} had no evaluated time in run.json, left out of the evaluated figure: {})",
            if n == 1 { "1 run".to_string() } else { format!("{n} runs") },
            a.runs,
            clip(&a.no_evaluated.join(", "), 60)
        );
    }
    if a.steps.is_empty() {
        let _ = writeln!(t, "{indent}no critical path (summary.json says why, per run)");
        return t;
    }
    if !a.no_path.is_empty() {
        let _ = writeln!(
            t,
            "{indent}(the path's figures are over {} of {}: {} without one, summary.json says why: {})",
            a.with_path,
            crate::output::count(a.runs, "run"),
            if a.no_path.len() == 1 { "1 run".to_string() } else { format!("{} runs", a.no_path.len()) },
            clip(&a.no_path.join(", "), 60)
        );
    }
    // Short, so that three steps fit in one line of summary.txt.
    let over = if a.runs > 1 { "median" } else { "its run" };
    let top: Vec<String> = a
        .steps
        .iter()
        .take(3)
        .map(|s| {
            format!("{} {} ({:.1}%)", clip(&s.step, HEAD_STEP), ms_short(s.median_on_path_us), s.median_share * 100.0)
        })
        .collect();
    let _ = writeln!(t, "{indent}critical path ({over}): {}", top.join(", "));
    match &a.lever {
        Some(l) => {
            let saved = &l.saved_50_us;
            let range = if l.counted > 1 && saved.min != saved.max {
                format!(
                    " (median over {} runs, {}..{})",
                    l.counted,
                    ms_short(saved.min as i64),
                    ms_short(saved.max as i64)
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                t,
                "{indent}halving {} would save {}{range}: predicted, `whatif --faster '{}=50'`",
                clip(&l.step, HEAD_STEP),
                ms_short(saved.median as i64),
                l.step
            );
        }
        None => {
            let _ =
                writeln!(t, "{indent}what halving a step would buy: not predicted (no span or statement on the path)");
        }
    }
    t
}

/// µs as milliseconds, as the page writes them (`html::ms`): the answer's
/// figures read alike in summary.txt, on the page and from whatif.
pub fn ms_short(us: i64) -> String {
    crate::html::ms(us as f64)
}

#[cfg(test)]
mod tests {
    /// The answer's lines (summary.txt's head, whatif's first lines) for a
    /// pass of three runs and for one run, against a golden file
    /// (`UPDATE_GOLDEN=1` rewrites it; a change to it is a change users see).
    #[test]
    fn the_answer_reads_as_its_golden_file() {
        use evalbench_analyze::over_runs::{answer, RunPath};
        use evalbench_analyze::path::{whatif::Buys, PathStep};
        let step = |p: Option<&str>, n: &str, on: i64, share: f64| PathStep {
            process: p.map(String::from),
            name: n.into(),
            on_path_us: on,
            share,
            own_us: p.map(|_| on),
            off_path_us: p.map(|_| 0),
            segments: 3,
        };
        let paths: Vec<Vec<PathStep>> = [(91_077, 51_604), (95_000, 50_100), (88_400, 52_900)]
            .iter()
            .map(|&(a, b)| {
                vec![
                    step(Some("server"), "record_one", a, a as f64 / 481_000.0),
                    step(None, "network (assign_job → job)", 60_000, 0.12),
                    step(
                        Some("postgres"),
                        "WITH named AS (INSERT INTO derivation (drv_path) SELECT unnest(?::text[]) ON CONFLICT DO \
                            NOTHING",
                        b,
                        0.1,
                    ),
                    step(Some("eval"), "resolve", 48_000, 0.1),
                ]
            })
            .collect();
        let buys: Vec<Vec<Buys>> = paths
            .iter()
            .map(|p| {
                vec![Buys {
                    step: p[0].label(),
                    on_path_us: p[0].on_path_us,
                    saved_10_us: 9_000,
                    saved_50_us: p[0].on_path_us / 2,
                }]
            })
            .collect();
        let names = ["cold-clean", "cold-clean.2", "cold-clean.3"];
        let evaluated = [0.481, 0.502, 0.470];
        let runs: Vec<RunPath> = (0..3)
            .map(|i| RunPath {
                name: names[i],
                evaluated_s: Some(evaluated[i]),
                path: Some((&paths[i], &[], &buys[i])),
            })
            .collect();
        let mut text = crate::output::path::answer_text(&answer("cold-clean", &runs));
        text.push_str(&crate::output::path::answer_text(&answer("warm-clean", &runs[..1])));
        text.push_str(&crate::output::path::answer_text(&answer(
            "warm-instrumented",
            &[RunPath { name: "warm-instrumented", evaluated_s: None, path: None }],
        )));
        let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/answer.txt");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &text).unwrap();
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_default();
        assert_eq!(
            text, want,
            "the answer's text changed: check it, then UPDATE_GOLDEN=1 cargo test -p evalbench-report"
        );
    }
}
