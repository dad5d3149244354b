//! `evalbench history show`: text, Markdown and JSON.

use std::fmt::Write;

use evalbench_analyze::verdict::Kind;
use evalbench_history::{Change, History};
use serde::Serialize;

use crate::output::markdown::{cell, table};
use crate::output::Align::{Left, Right};

/// The series the runs hold, one line.
fn series_line(h: &History) -> String {
    let list: Vec<String> = h.series.iter().map(|(b, m)| format!("{b} @ {m}")).collect();
    format!("series (benchmark @ machine): {}", if list.is_empty() { "none".to_string() } else { list.join(", ") })
}

/// Which rule judged a pass's times.
fn rule_of<'a>(h: &'a History, pass: &str) -> Option<&'a str> {
    h.rules.iter().find(|r| r.pass == pass).map(|r| r.text.as_str())
}

/// A commit's time as a person reads it, in UTC to the minute (the history
/// keeps Unix seconds; `--json` gives those).
fn date(unix_s: i64) -> String {
    jiff::Timestamp::from_second(unix_s)
        .map_or_else(|_| format!("{unix_s} (Unix s)"), |t| t.strftime("%Y-%m-%d %H:%M").to_string())
}

/// `server record_one 91.1 ms (19.1%), ...`: as summary.txt's first lines write them.
fn path_steps(steps: &[evalbench_analyze::over_runs::StepOverRuns]) -> String {
    let parts: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{} {} ({:.1}%)",
                crate::summary::text::clip(&s.step, 44),
                crate::html::ms(s.median_on_path_us as f64),
                s.median_share * 100.0
            )
        })
        .collect();
    parts.join(", ")
}

/// A counted pass's series: nix's instructions per commit (its seconds are Valgrind's, not kept).
fn counted_rows(t: &mut String, h: &History, pass: &str, points: &[evalbench_history::Point]) {
    let _ = writeln!(
        t,
        "  {:<14} {:<17} {:<12} {:>5} {:>16} {:>12}",
        "commit", "time (UTC)", "branch", "runs", "instructions", "spread"
    );
    for p in points {
        let c = &h.commits[p.commit];
        let Some(i) = &p.instructions else { continue };
        let flag = if h.changes.iter().any(|x| x.commit == c.commit && x.pass == pass) { " *" } else { "" };
        let spread = if i.n > 1 { format!("{:.4}%", i.range_pct()) } else { "one run".into() };
        let _ = writeln!(
            t,
            "  {:<14} {:<17} {:<12} {:>5} {:>16} {:>12}{flag}",
            c.commit.chars().take(14).collect::<String>(),
            date(c.commit_time),
            c.branch.as_deref().unwrap_or("–").chars().take(12).collect::<String>(),
            i.n,
            crate::figures::grouped(i.median.round()),
            spread
        );
    }
}

/// A production evaluation's change, named by the report it came from
/// (` (from gradient-report-<evaluation>.db)`); nothing for a bundle's.
fn evaluation_of(h: &History, c: &Change) -> String {
    if c.pass != evalbench_history::production::PASS {
        return String::new();
    }
    let Some(commit) = h.commits.iter().find(|x| x.commit == c.commit) else { return String::new() };
    let names: Vec<String> = commit
        .sources
        .iter()
        .map(|s| std::path::Path::new(s).file_name().map_or(s.clone(), |n| n.to_string_lossy().into_owned()))
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (from {})", names.join(", "))
    }
}

/// For each commit where a production evaluation's counter stepped: the
/// `evalbench bisect` that narrows it between the commit before and it
/// (the flake's checkout is the user's; the counter is the one that moved most).
pub fn bisect_hints(h: &History) -> Vec<String> {
    let pass = evalbench_history::production::PASS;
    let Some(points) = h.passes.get(pass) else { return Vec::new() };
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate().skip(1) {
        let commit = &h.commits[p.commit].commit;
        let moved = h.changes.iter().filter(|c| &c.commit == commit && c.pass == pass && c.what.starts_with("nix "));
        let Some(top) = moved.max_by(|a, b| a.change_pct.abs().total_cmp(&b.change_pct.abs())) else { continue };
        let before = &h.commits[points[i - 1].commit].commit;
        let counter = top.what.trim_start_matches("nix ");
        out.push(format!(
            "narrow the step at {}: evalbench bisect <your checkout of the flake> {before} {commit} --counter \
             {counter}",
            commit.chars().take(14).collect::<String>()
        ));
    }
    out
}

pub fn text(h: &History) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{}", series_line(h));
    for (pass, points) in &h.passes {
        let _ = writeln!(t, "== {pass}");
        if let Some(r) = rule_of(h, pass) {
            let _ = writeln!(t, "  judged by: {r}");
        }
        if points.iter().any(|p| p.instructions.is_some()) {
            counted_rows(&mut t, h, pass, points);
            continue;
        }
        let _ = writeln!(
            t,
            "  {:<14} {:<17} {:<12} {:>5} {:>12} {:>10}  top spans by total (median ms, children included)",
            "commit", "time (UTC)", "branch", "runs", "evaluated s", "MAD"
        );
        for p in points {
            let c = &h.commits[p.commit];
            let spans: Vec<String> = p.top_spans.iter().take(3).map(|(k, v)| format!("{k} {v:.1}")).collect();
            let flag = if h.changes.iter().any(|x| x.commit == c.commit && &x.pass == pass) { " *" } else { "" };
            let _ = writeln!(
                t,
                "  {:<14} {:<17} {:<12} {:>5} {:>12.3} {:>10.3}  {}{flag}",
                c.commit.chars().take(14).collect::<String>(),
                date(c.commit_time),
                c.branch.as_deref().unwrap_or("–").chars().take(12).collect::<String>(),
                p.evaluated_s.n,
                p.evaluated_s.median,
                p.evaluated_s.mad,
                spans.join(", ")
            );
            // The commit's largest path steps, as summary.txt gives them (runs added before paths were kept have none).
            if !p.top_path.is_empty() {
                let _ = writeln!(t, "  {:<14} critical path (median): {}", "", path_steps(&p.top_path));
            }
        }
    }
    let _ = writeln!(t, "changes: {}", if h.changes.is_empty() { "none" } else { "" });
    for c in &h.changes {
        let _ = writeln!(t, "  {} {} {}: {}{}", c.commit, c.pass, c.what, crate::words::change(c), evaluation_of(h, c));
    }
    for line in bisect_hints(h) {
        let _ = writeln!(t, "  {line}");
    }
    for p in &h.power {
        let _ = writeln!(t, "note: {p}");
    }
    crate::summary::text::fit(&t)
}

/// A counted pass's series in Markdown: nix's instructions per commit.
fn counted_table(t: &mut String, h: &History, pass: &str, points: &[evalbench_history::Point]) {
    let rows: Vec<Vec<String>> = points
        .iter()
        .filter_map(|p| {
            let i = p.instructions.as_ref()?;
            let c = &h.commits[p.commit];
            let changed = h.changes.iter().any(|x| x.commit == c.commit && x.pass == pass);
            Some(vec![
                format!("{}{}", c.commit.chars().take(14).collect::<String>(), if changed { " (change)" } else { "" }),
                date(c.commit_time),
                c.branch.clone().unwrap_or_else(|| "–".into()),
                i.n.to_string(),
                crate::figures::grouped(i.median.round()),
            ])
        })
        .collect();
    table(
        t,
        &["commit", "time (UTC)", "branch", "runs", "nix's instructions (median)"],
        &[Left, Left, Left, Right, Right],
        &rows,
    );
}

/// GitHub-flavoured Markdown: per pass its series, then the changes.
pub fn markdown(h: &History) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "## evalbench history\n\n{}\n", cell(&series_line(h)));
    for (pass, points) in &h.passes {
        let _ = writeln!(t, "### {}\n", cell(pass));
        if let Some(r) = rule_of(h, pass) {
            let _ = writeln!(t, "Judged by: {}\n", cell(r));
        }
        if points.iter().any(|p| p.instructions.is_some()) {
            counted_table(&mut t, h, pass, points);
            continue;
        }
        let rows: Vec<Vec<String>> = points
            .iter()
            .map(|p| {
                let c = &h.commits[p.commit];
                let changed = h.changes.iter().any(|x| x.commit == c.commit && &x.pass == pass);
                vec![
                    format!(
                        "{}{}",
                        c.commit.chars().take(14).collect::<String>(),
                        if changed { " (change)" } else { "" }
                    ),
                    date(c.commit_time),
                    c.branch.clone().unwrap_or_else(|| "–".into()),
                    p.evaluated_s.n.to_string(),
                    format!("{:.3}", p.evaluated_s.median),
                    format!("{:.3}", p.evaluated_s.mad),
                    path_steps(&p.top_path),
                ]
            })
            .collect();
        table(
            &mut t,
            &[
                "commit",
                "time (UTC)",
                "branch",
                "runs",
                "evaluated s (median)",
                "MAD",
                "largest on the critical path (median)",
            ],
            &[Left, Left, Left, Right, Right, Right, Left],
            &rows,
        );
    }
    let _ = writeln!(t, "### Changes\n");
    if h.changes.is_empty() {
        let _ = writeln!(t, "None along the series.\n");
    } else {
        let rows: Vec<Vec<String>> = h
            .changes
            .iter()
            .map(|c| {
                vec![
                    c.commit.clone(),
                    c.pass.clone(),
                    c.what.clone(),
                    c.kind.as_str().to_string(),
                    crate::output::signed_pct(c.change_pct),
                    crate::words::change(c),
                ]
            })
            .collect();
        table(
            &mut t,
            &["commit", "pass", "what", "kind", "change", "verdict"],
            &[Left, Left, Left, Left, Right, Left],
            &rows,
        );
    }
    for p in &h.power {
        let _ = writeln!(t, "> {}\n", cell(p));
    }
    t
}

/// A change as `history show --json` has it: its figures and its sentence.
#[derive(Serialize)]
struct ChangeOut<'a> {
    commit: &'a str,
    pass: &'a str,
    what: &'a str,
    kind: Kind,
    change_pct: f64,
    p_adjusted: Option<f64>,
    baseline_commits: usize,
    runs_a: usize,
    runs_b: usize,
    text: String,
}

fn change_out(c: &Change) -> ChangeOut<'_> {
    ChangeOut {
        commit: &c.commit,
        pass: &c.pass,
        what: &c.what,
        kind: c.kind,
        change_pct: c.change_pct,
        p_adjusted: c.p_adjusted,
        baseline_commits: c.baseline_commits,
        runs_a: c.runs_a,
        runs_b: c.runs_b,
        text: crate::words::change(c),
    }
}

/// `history show --json`. Written straight from the history: at 10,000
/// commits a detour through serde_json::Value was most of show's time.
pub fn json(h: &History) -> String {
    #[derive(Serialize)]
    struct Series<'a> {
        benchmark: &'a str,
        machine: &'a str,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        commits: &'a [evalbench_history::Commit],
        series: &'a std::collections::BTreeMap<String, Vec<evalbench_history::Point>>,
        changes: Vec<ChangeOut<'a>>,
        power: &'a [String],
        rules: &'a [evalbench_history::PassRule],
        benchmarks: Vec<Series<'a>>,
    }
    let doc = Doc {
        commits: &h.commits,
        series: &h.passes,
        changes: h.changes.iter().map(change_out).collect(),
        power: &h.power,
        rules: &h.rules,
        benchmarks: h.series.iter().map(|(b, m)| Series { benchmark: b, machine: m }).collect(),
    };
    format!("{}\n", serde_json::to_string_pretty(&doc).expect("serializes"))
}
