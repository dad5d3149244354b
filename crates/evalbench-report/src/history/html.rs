//! `evalbench history report`: one self-contained page (CSS and SVG inline,
//! no script, the same Content-Security-Policy as `inspect`): per pass, the
//! evaluated seconds along the commits with each point's spread and its
//! change points marked, hover titles with commit, runs and verdict; small
//! multiples of the spans that moved most; the changes as a table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalbench_history::{Change, History, Point};

use crate::html::{escape as esc, file_safe};
use crate::ReportError;

use evalbench_history::chart::{Mark, PassCharts, MARKS, MOVED_MS, MOVED_SHARE};

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:8px 24px \
    48px;color:#222}h1{font-size:20px}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid \
    #ddd;padding:3px \
    6px;vertical-align:top}th{background:#f0f0f4;text-align:left}td.n{text-align:right;\
    font-variant-numeric:tabular-nums}.note{color:#556;font-size:12px}.multiples{display:flex;flex-wrap:wrap;gap:8px}\
    .multiples figure{margin:0}figcaption{font-size:11px;color:#667;max-width:360px;overflow-wrap:anywhere}svg \
    circle.change{fill:#c33}svg circle{fill:#335}svg line.spread{stroke:#99a}svg \
    line.cp{stroke:#c33;stroke-dasharray:4 3}svg polyline.series{stroke:#335;stroke-width:1.2}svg \
    polygon.counter{fill:#d80}";

/// What was written.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    pub page: PathBuf,
    pub page_bytes: u64,
    pub commits: usize,
    pub points: usize,
}

/// The page of `h` and its charts (`evalbench_history::chart::charts`, in
/// the order of `h.passes`) into `out`.
pub fn render(h: &History, charts: &[PassCharts], db: &str, out: &Path) -> Result<Written, ReportError> {
    std::fs::create_dir_all(out).map_err(ReportError::io(out))?;
    let mut body = String::new();
    let title = format!("evalbench history: {db}");
    body.push_str(&crate::html::shell_head(&title, CSS));
    let _ = write!(
        body,
        "<h1>{}</h1><p class=\"note\">{}, ordered by commit time. Each commit was judged when it was added, against \
            the commits before it since the last change (at most {}), with compare's rules at {} a commit ({}% split \
            over a horizon of {} commits); commits with too few runs for that, by change points. Hover a point for its \
            commit, runs and verdict; past {MARKS} commits a point stands for a run of neighbours, and only changes \
            are drawn one by one.</p>",
        esc(&title),
        crate::output::count(h.commits.len(), "commit"),
        evalbench_history::BASELINE_COMMITS,
        evalbench_history::judge::STEP_ALPHA,
        evalbench_analyze::verdict::ALPHA * 100.0,
        evalbench_history::judge::HORIZON_COMMITS
    );
    for note in &h.power {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(note));
    }
    let mut points = 0;
    for ((pass, series), charts) in h.passes.iter().zip(charts) {
        points += series.len();
        let changes: Vec<&Change> = h.changes.iter().filter(|c| &c.pass == pass).collect();
        let _ = write!(body, "<h2 id=\"{}\">{}</h2>", esc(&file_safe(pass)), esc(pass));
        body.push_str(&evaluated_chart(h, pass, series, &charts.marks, &changes));
        small_multiples(&mut body, h, pass, charts, &changes);
        if changes.is_empty() {
            body.push_str("<p>No change along this series.</p>");
        } else {
            body.push_str(
                "<table><tr><th>commit</th><th>what</th><th>verdict</th><th>change</th><th>p \
                    (adjusted)</th><th>baseline</th></tr>",
            );
            for c in &changes {
                let _ = write!(
                    body,
                    "<tr><td><code>{}</code></td><td>{}</td><td title=\"{}\">{}</td><td class=\"n\">{}</td><td \
                        class=\"n\">{}</td><td>{}, {} against {}</td></tr>",
                    esc(&c.commit),
                    esc(&c.what),
                    esc(&crate::words::change(c)),
                    esc(c.kind.as_str()),
                    crate::output::signed_pct(c.change_pct),
                    c.p_adjusted.map(|p| format!("{p:.6}")).unwrap_or_else(|| "–".into()),
                    crate::output::count(c.baseline_commits, "commit"),
                    crate::output::count(c.runs_a, "run"),
                    c.runs_b
                );
            }
            body.push_str("</table>");
        }
    }
    body.push_str("</body></html>\n");
    let page = out.join("index.html");
    evalbench_bundle::write_atomic(&page, body.as_bytes())?;
    Ok(Written { page, page_bytes: body.len() as u64, commits: h.commits.len(), points })
}

fn verdict_of<'a>(changes: &'a [&Change], commit: &str, what: &str) -> Option<&'a Change> {
    changes.iter().copied().find(|c| c.commit == commit && c.what == what)
}

/// (x, y) of a value for a chart `w` × `h` over `n` commits and `lo..hi`.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    n: usize,
    lo: f64,
    hi: f64,
}

impl Frame {
    fn x(&self, i: usize) -> f64 {
        let span = (self.n.max(2) - 1) as f64;
        self.left + (self.w - self.left - 10.0) * i as f64 / span
    }
    fn y(&self, v: f64) -> f64 {
        let r = (self.hi - self.lo).max(1e-12);
        10.0 + (self.h - 30.0) * (1.0 - (v - self.lo) / r)
    }
}

/// A commit's time as a person reads it (UTC), else its Unix seconds.
fn date(unix_s: i64) -> String {
    jiff::Timestamp::from_second(unix_s)
        .map_or_else(|_| format!("Unix time {unix_s}"), |t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
}

/// The pass's evaluated seconds along the commits that have a point in it
/// (a commit without one is not on this axis): the medians joined, each
/// with its spread, change points as dashed lines, changes of nix's
/// counters as diamonds, and commits labelled along the axis.
fn evaluated_chart(h: &History, pass: &str, series: &[Point], marks: &[Mark], changes: &[&Change]) -> String {
    let lo = series.iter().map(|p| p.evaluated_s.min).fold(f64::INFINITY, f64::min);
    let hi = series.iter().map(|p| p.evaluated_s.max).fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo * 0.95, hi * 1.05) } else { (0.0, 1.0) };
    let f = Frame { w: 1100.0, h: 280.0, left: 60.0, n: series.len(), lo, hi };
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" \
            role=\"img\"><title>{}</title>",
        f.w,
        f.h,
        f.w,
        f.h,
        esc(&format!("{pass}: evaluated seconds per commit"))
    );
    let _ = write!(
        s,
        "<text x=\"4\" y=\"16\" font-size=\"11\">{:.3} s</text><text x=\"4\" y=\"{}\" font-size=\"11\">{:.3} s</text>",
        hi,
        f.h - 20.0,
        lo
    );
    let line: Vec<String> = marks.iter().map(|m| format!("{:.1},{:.1}", f.x(m.middle()), f.y(m.median))).collect();
    let _ = write!(s, "<polyline class=\"series\" fill=\"none\" points=\"{}\"/>", line.join(" "));
    change_lines(&mut s, h, series, changes, &f);
    runs_of_commits(&mut s, h, series, marks, &f);
    points(&mut s, h, series, changes, &f);
    commit_labels(&mut s, h, series, &f);
    s.push_str("</svg>");
    s
}

/// A line at each commit where the evaluated seconds changed, a diamond at
/// each where a counter did.
fn change_lines(s: &mut String, h: &History, series: &[Point], changes: &[&Change], f: &Frame) {
    for (i, p) in series.iter().enumerate() {
        let commit = &h.commits[p.commit];
        let x = f.x(i);
        if verdict_of(changes, &commit.commit, "evaluated").is_some() {
            let _ = write!(s, "<line class=\"cp\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"8\" y2=\"{:.1}\"/>", f.h - 20.0);
        }
        for c in changes.iter().filter(|c| c.commit == commit.commit && c.what.starts_with("nix ")) {
            let _ = write!(
                s,
                "<polygon class=\"counter\" points=\"{x:.1},4 {:.1},9 {x:.1},14 {:.1},9\"><title>{}</title></polygon>",
                x + 5.0,
                x - 5.0,
                esc(&format!("commit {}: {}", commit.commit, crate::words::change(c)))
            );
        }
    }
}

/// Past MARKS commits, a mark per run of commits: the range of their
/// spreads, and the median of their medians.
fn runs_of_commits(s: &mut String, h: &History, series: &[Point], marks: &[Mark], f: &Frame) {
    for m in marks {
        if m.points.len() > 1 {
            // A run of commits: the range of their spreads, and the median of their medians.
            let run = &series[m.points.clone()];
            let x = f.x(m.middle());
            let lo = run.iter().map(|p| p.evaluated_s.min).fold(f64::INFINITY, f64::min);
            let hi = run.iter().map(|p| p.evaluated_s.max).fold(f64::NEG_INFINITY, f64::max);
            let (first, last) = (&h.commits[run[0].commit], &h.commits[run[run.len() - 1].commit]);
            let (mlo, mhi) = run.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.evaluated_s.median), b.max(p.evaluated_s.median))
            });
            let _ = write!(
                s,
                "<line class=\"spread\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
                f.y(lo),
                f.y(hi)
            );
            let tip = format!(
                "{} commits, {} ({}) to {} ({}): medians {mlo:.3}..{mhi:.3} s, their median {:.3} s",
                run.len(),
                first.commit,
                date(first.commit_time),
                last.commit,
                date(last.commit_time),
                m.median
            );
            let _ = write!(
                s,
                "<circle class=\"point\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"2\"><title>{}</title></circle>",
                f.y(m.median),
                esc(&tip)
            );
        }
    }
}

/// Each commit's spread and median (past MARKS commits, only the changes).
fn points(s: &mut String, h: &History, series: &[Point], changes: &[&Change], f: &Frame) {
    for (i, p) in series.iter().enumerate() {
        let commit = &h.commits[p.commit];
        let change = verdict_of(changes, &commit.commit, "evaluated");
        // Past MARKS commits, only the changes are drawn one by one.
        if series.len() > MARKS && change.is_none() {
            continue;
        }
        let x = f.x(i);
        let e = &p.evaluated_s;
        let _ = write!(
            s,
            "<line class=\"spread\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/>",
            f.y(e.min),
            f.y(e.max)
        );
        let verdict = match change {
            Some(c) => crate::words::change(c),
            None => "no change against the baseline".into(),
        };
        let tip = format!(
            "commit {} ({}), {}: median {:.3} s, MAD {:.3} s, {:.3}..{:.3} s; {verdict}",
            commit.commit,
            date(commit.commit_time),
            crate::output::count(e.n, "run"),
            e.median,
            e.mad,
            e.min,
            e.max
        );
        let _ = write!(
            s,
            "<circle class=\"{}\" cx=\"{x:.1}\" cy=\"{:.1}\" r=\"{}\"><title>{}</title></circle>",
            if change.is_some() { "change" } else { "point" },
            f.y(e.median),
            if change.is_some() { 5 } else { 3 },
            esc(&tip)
        );
    }
}

/// Commits along the axis, as many as fit (about 80 px a label).
fn commit_labels(s: &mut String, h: &History, series: &[Point], f: &Frame) {
    let n = series.len();
    let step = n.div_ceil(12).max(1);
    let mut at: Vec<usize> = (0..n).step_by(step).collect();
    if let Some(&last) = at.last() {
        if last + 1 != n {
            // The last commit is always labelled; a label too close before it gives way.
            if (n - 1 - last) * 2 < step && at.len() > 1 {
                at.pop();
            }
            at.push(n - 1);
        }
    }
    for i in at {
        let anchor = if i == 0 {
            "start"
        } else if i + 1 == n {
            "end"
        } else {
            "middle"
        };
        let label: String = h.commits[series[i].commit].commit.chars().take(10).collect();
        let _ = write!(
            s,
            "<text class=\"commit\" x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"{anchor}\">{}</text>",
            f.x(i),
            f.h - 4.0,
            esc(&label)
        );
    }
}

/// The spans whose median moved most along the series (flagged ones first).
fn small_multiples(body: &mut String, h: &History, pass: &str, charts: &PassCharts, changes: &[&Change]) {
    if charts.moved.is_empty() {
        return;
    }
    let _ = write!(
        body,
        "<h3>Spans that moved most (median total per commit, ms)</h3><p class=\"note\">Flagged spans, then those whose \
            median moved by at least {MOVED_MS} ms and {:.0}% of its mean along the series; each drawn from 0, so that \
            a small move looks small.</p><div class=\"multiples\">",
        MOVED_SHARE * 100.0
    );
    for moved in &charts.moved {
        let (name, flagged, v) = (moved.name.as_str(), moved.flagged, &moved.line);
        let lo = v.iter().map(|x| x.1).fold(0.0, f64::min);
        let hi = v.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max).max(lo + 1e-9) * 1.05;
        let f = Frame { w: 360.0, h: 110.0, left: 8.0, n: v.len(), lo, hi };
        // Past MARKS commits a vertex is the median of a run of neighbours.
        let pts: Vec<String> =
            moved.marks.iter().map(|m| format!("{:.1},{:.1}", f.x(m.middle()), f.y(m.median))).collect();
        let _ = write!(
            body,
            "<figure><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"360\" height=\"110\" viewBox=\"0 0 360 110\" \
                role=\"img\"><title>{}</title><polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" \
                points=\"{}\"/>",
            esc(&format!("{pass}: {name}")),
            if flagged { "#c33" } else { "#335" },
            pts.join(" ")
        );
        for (i, (c, m)) in v.iter().enumerate() {
            if let Some(ch) = changes.iter().find(|x| x.what == name && x.commit == h.commits[*c].commit) {
                let _ = write!(
                    body,
                    "<circle class=\"change\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\"><title>{}</title></circle>",
                    f.x(i),
                    f.y(*m),
                    esc(&crate::words::change(ch))
                );
            }
        }
        let _ = write!(
            body,
            "</svg><figcaption>{} ({:.3}..{:.3} ms)</figcaption></figure>",
            esc(name),
            lo / 0.95,
            hi / 1.05
        );
    }
    body.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalbench_history::{build, Select, Stored};

    /// A series of `n` commits, one run each, 30% slower from `step` on.
    fn history(n: usize, step: usize) -> History {
        let rows = (0..n)
            .map(|i| Stored {
                run_id: i as i64,
                commit: format!("c{i}"),
                commit_time: 1_700_000_000 + i as i64,
                added_us: i as i64,
                branch: None,
                machine: None,
                benchmark: None,
                source: format!("bundle-{i}"),
                pass: "cold-clean".into(),
                repeat: 1,
                // A deterministic wobble of ±1%.
                evaluated_s: Some(
                    if i >= step { 1.3 } else { 1.0 } * (1.0 + 0.01 * ((i * 7919 % 13) as f64 / 6.0 - 1.0)),
                ),
                spans: [("eval resolve".to_string(), 10.0 + (i % 5) as f64)].into(),
                counters: Default::default(),
            })
            .collect();
        build(rows, &Select::default())
    }

    #[test]
    fn marks_stand_for_runs_of_commits_past_the_limit_and_changes_stay_one_by_one() {
        let h = history(2000, 1500);
        assert_eq!(h.changes.iter().map(|c| c.commit.as_str()).collect::<Vec<_>>(), vec!["c1500"]);
        let dir = tempfile::tempdir().unwrap();
        let w = render(&h, &evalbench_history::chart::charts(&h), "test.sqlite", dir.path()).unwrap();
        let html = std::fs::read_to_string(&w.page).unwrap();
        assert_eq!(html.matches("<circle class=\"point\"").count(), MARKS, "a mark per run of commits");
        assert_eq!(html.matches("<circle class=\"change\"").count(), 1, "the change on its own");
        assert!(html.contains("5 commits, c0 ("), "a mark names its commits");
        let line =
            html.split("<polyline class=\"series\" fill=\"none\" points=\"").nth(1).unwrap().split('"').next().unwrap();
        assert_eq!(line.split_whitespace().count(), MARKS);
        let small = history(50, 30);
        let html = std::fs::read_to_string(
            render(&small, &evalbench_history::chart::charts(&small), "t", dir.path()).unwrap().page,
        )
        .unwrap();
        assert_eq!(
            html.matches("<circle class=\"point\"").count() + html.matches("<circle class=\"change\"").count(),
            50,
            "a mark per commit"
        );
    }
}
