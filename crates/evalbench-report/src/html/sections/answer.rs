//! The answer, first on the page (above the fold at 1400x900): per clean
//! pass its median evaluated time and spread, the largest steps on its
//! critical path, and what halving the largest would buy, the figures
//! summary.txt's first lines and `whatif` give (`analyze::over_runs`).
//! Provenance and every detail follow.

use std::fmt::Write;

use evalbench_analyze::outcomes::PassRuns;
use evalbench_analyze::over_runs::PassAnswer;

use super::super::esc::{esc, file_safe};
use super::super::svg::ms;
use super::super::Page;

pub fn answers(
    page: &mut Page,
    (answers, status): (&[PassAnswer], &[PassRuns]),
    distorted: &[&str],
    warnings: &[String],
) {
    page.h2("answer", "The answer");
    before_figures(page, (answers, status), warnings);
    if answers.is_empty() {
        page.body.push_str(
            "<p class=\"missing\">No clean pass to time: every pass here was instrumented or counted, and its timings \
                are distorted.</p>",
        );
    }
    page.body.push_str(
        "<table class=\"answer\"><tr><th>pass</th><th>evaluated (median)</th><th>spread</th><th>largest on the \
            critical path (median over runs, share)</th><th>halving the largest would save (predicted)</th></tr>",
    );
    for a in answers {
        row(page, a, status);
    }
    page.body.push_str("</table>");
    if !distorted.is_empty() {
        let _ = write!(
            page.body,
            "<p class=\"note\">Not timed: {} (perf, strace and auto_explain distort their timings; their counts and \
                shapes are below).</p>",
            esc(&distorted.join(", "))
        );
    }
    page.body.push_str(
        "<p class=\"note\">Evaluated: from the evaluate request until the evaluation left EvaluatingDerivation. The \
            critical path: the chain of spans and waits the evaluated time waited on; a step's time on it is its own \
            time (less its children) there. A prediction re-walks each run's path with the step shortened; it is not a \
            measurement.</p>",
    );
}

/// What comes before any figure: a pass whose runs did not all complete
/// (its figures are over the rest), and what reading went past.
fn before_figures(page: &mut Page, (answers, status): (&[PassAnswer], &[PassRuns]), warnings: &[String]) {
    // A pass whose runs did not all complete, first: its figures are over the rest.
    for st in status {
        let Some(word) = crate::words::pass_status(st) else { continue };
        let figure =
            if answers.iter().any(|a| a.pass == st.pass) { "its figures below are over those" } else { "no figure" };
        let ended: Vec<String> = st.incomplete.iter().map(crate::words::run_ended).collect();
        let _ = write!(
            page.body,
            "<p class=\"warn\"><b>{}</b> {}: {figure}. {}</p>",
            esc(&st.pass),
            esc(&word),
            esc(&ended.join("; "))
        );
    }
    // What reading went past, before any figure that may rest on it.
    if let Some(first) = warnings.first() {
        let _ = write!(
            page.body,
            "<p class=\"warn\">{} reading the bundle; the first: {} (each under its run's section, all in \
                <code>inspect --json</code>).</p>",
            esc(&if warnings.len() == 1 { "1 warning".to_string() } else { format!("{} warnings", warnings.len()) }),
            esc(first)
        );
    }
}

/// One clean pass's row: its median, its spread, the largest steps on its
/// path and what halving the largest would save.
fn row(page: &mut Page, a: &PassAnswer, status: &[PassRuns]) {
    let e = &a.evaluated_s;
    // What the figure is over, as summary.txt says it (`over 6 of 40 runs`).
    let over = status.iter().find(|s| s.pass == a.pass).map_or_else(|| format!("over {} runs", e.n), |s| s.over(e.n));
    let spread = if e.n > 1 {
        format!(
            "MAD {:.3} s, {:.3}..{:.3} s {over}; run {} nearest the median",
            e.mad, e.min, e.max, a.median_run_number
        )
    } else {
        over
    };
    let steps: Vec<String> = a
        .steps
        .iter()
        .take(3)
        .map(|s| {
            format!(
                "<li>{} <b>{}</b> ({:.1}%)</li>",
                esc(&s.step),
                esc(&ms(s.median_on_path_us as f64)),
                s.median_share * 100.0
            )
        })
        .collect();
    let lever = match &a.lever {
        Some(l) => {
            let s = &l.saved_50_us;
            let range = if l.counted > 1 && s.min != s.max {
                format!(" (median over {} runs, {}..{})", l.counted, ms(s.min), ms(s.max))
            } else {
                String::new()
            };
            format!(
                "{}: <b>{}</b>{}<br><code>whatif --faster '{}=50'</code>",
                esc(&l.step),
                esc(&ms(s.median)),
                esc(&range),
                esc(&l.step)
            )
        }
        None => "not predicted (no span or statement on the path)".to_string(),
    };
    let _ = write!(
        page.body,
        "<tr><td><a href=\"#runs-{}\">{}</a></td><td class=\"n\"><b>{:.3} \
            s</b></td><td>{}</td><td><ol>{}</ol></td><td>{}</td></tr>",
        esc(&file_safe(&a.pass)),
        esc(&a.pass),
        e.median,
        esc(&spread),
        steps.join(""),
        lever
    );
}
