//! summary.txt, answer first. A pass made many times is one measurement:
//! its median, spread, runs in order, median critical path and top spans
//! lead, and one run's own section is printed only for a pass that ran
//! once. Every run's section is `summarize --runs`; every figure of every
//! run is in summary.json. With 32 runs a pass, the old layout printed run
//! 1 first and the answer after 4,000 lines.

use std::fmt::Write as _;

use evalbench_bundle::layout;

use crate::summary::{ms, PassCounters, PassSummary, RepeatGroup, Summary};
use evalbench_analyze::over_runs::SpanSpread;

/// No line of summary.txt is wider: longer ones wrap (`fit`).
pub const WIDTH: usize = 160;
/// Span rows a pass made many times shows; summary.json has them all.
pub const GROUP_SPAN_ROWS: usize = 12;
/// Warnings the answer lists; `--runs` and summary.json have them all.
const ANSWER_WARNINGS: usize = 20;

/// The answer: first, per clean pass, its median evaluated time, the
/// largest steps on its critical path and what halving the largest would
/// buy (`head`, within the first 10 lines for the main job's two clean
/// passes); then each pass in detail, nix's counters, what was not
/// summarized, provenance and the warnings.
pub fn answer(s: &Summary) -> String {
    let mut t = String::new();
    crate::summary::answer::head(&mut t, s);
    for (base, runs) in layout::pass_groups(&s.passes, |p| &p.pass) {
        let answer = s.answers.iter().find(|a| a.pass == base);
        match s.repeats.iter().find(|g| g.pass == base) {
            Some(g) => group_section(&mut t, g, answer),
            None => runs.into_iter().for_each(|p| run_section(&mut t, p)),
        }
    }
    counters_text(&mut t, &s.nix_stats, &s.answers.iter().map(|a| a.pass.as_str()).collect::<Vec<_>>());
    crate::summary::instructions::section(&mut t, &s.instructions);
    provenance(&mut t, s);
    tail(&mut t, s, ANSWER_WARNINGS);
    if !s.repeats.is_empty() {
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "Each run's own section: `evalbench summarize --runs {}`; every figure of every run: summary.json.",
            s.bundle
        );
    }
    fit(&t)
}

/// Every run's own section, in the order they were made (`summarize --runs`).
pub fn runs(s: &Summary) -> String {
    let mut t = String::new();
    crate::summary::answer::head(&mut t, s);
    s.passes.iter().for_each(|p| run_section(&mut t, p));
    counters_text(&mut t, &s.nix_stats, &s.answers.iter().map(|a| a.pass.as_str()).collect::<Vec<_>>());
    crate::summary::instructions::section(&mut t, &s.instructions);
    provenance(&mut t, s);
    tail(&mut t, s, 50);
    fit(&t)
}

/// Provenance, after the answer: what ran where, and PostgreSQL's settings.
fn provenance(t: &mut String, s: &Summary) {
    let _ = writeln!(t);
    let _ = writeln!(t, "Provenance:");
    provenance_text(t, &s.provenance);
    // One line per distinct set of settings, with the passes that ran with it.
    let mut sets: Vec<(String, Vec<&str>)> = Vec::new();
    for p in &s.pg_settings {
        let set = crate::output::pg_settings(&p.settings, " ");
        match sets.iter_mut().find(|(x, _)| *x == set) {
            Some((_, passes)) => passes.push(&p.pass),
            None => sets.push((set, vec![&p.pass])),
        }
    }
    for (set, passes) in sets {
        let _ = writeln!(t, "PostgreSQL ran with {set} (--pg-setting) in {}.", runs_named(&passes));
    }
}

/// `cold-clean (32 runs), warm-clean`: a pass's repeats named once.
pub(crate) fn runs_named(passes: &[&str]) -> String {
    let named: Vec<String> = layout::runs_per_pass(passes.iter().copied())
        .iter()
        .map(|(b, n)| if *n > 1 { format!("{b} ({n} runs)") } else { b.to_string() })
        .collect();
    named.join(", ")
}

pub(crate) fn temperature(cold: bool) -> &'static str {
    if cold {
        "cold: empty eval cache"
    } else {
        "warm: eval cache from the previous pass"
    }
}

/// A pass made many times: the answer over its runs.
fn group_section(t: &mut String, g: &RepeatGroup, answer: Option<&evalbench_analyze::over_runs::PassAnswer>) {
    let w = &g.evaluated_s;
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "== {} ({}): {} runs, evaluated median {:.3} s (MAD {:.3} s, min {:.3} s, max {:.3} s)",
        g.pass,
        temperature(layout::is_cold(&g.pass)),
        g.runs,
        w.median,
        w.mad,
        w.min,
        w.max
    );
    if !g.runs_s.is_empty() {
        let _ = writeln!(
            t,
            "  runs in order    {}  ({:.3} s {} to {:.3} s {})",
            sparkline(&g.runs_drawn),
            w.min,
            BARS[0],
            w.max,
            BARS[7]
        );
    }
    conditions(t, g);
    if let Some(a) = answer {
        if !a.processes.is_empty() {
            let _ = writeln!(
                t,
                "  critical path    by process, median share over the runs: {}",
                crate::summary::path::processes_over_runs_text(&a.processes)
            );
        }
        crate::summary::path::over_runs_text(t, a);
    }
    group_spans(t, g);
}

/// How the runs were made: their trend, a warm-up left in, the machine
/// beside them, `.drv` files written unlike.
fn conditions(t: &mut String, g: &RepeatGroup) {
    match &g.trend {
        Some(tr) => {
            let _ =
                writeln!(t, "  trend            {}", crate::condition_notes::trend(tr, "the evaluated seconds", "s"));
        }
        None if g.runs >= evalbench_analyze::drift::TREND_MIN_RUNS => {
            let _ = writeln!(t, "  trend            none found in run order (Kendall's τ, p ≥ 0.05)");
        }
        None => {}
    }
    if g.warmup_runs > 0 {
        let _ = writeln!(
            t,
            "  warm-up          the first {} above the rest's spread: a warm-up `run --warmup` did not leave out",
            if g.warmup_runs == 1 { "run lay".to_string() } else { format!("{} runs lay", g.warmup_runs) }
        );
    }
    if let Some(m) = &g.machine {
        let busy = crate::condition_notes::machine(m).map(|s| format!("; {s}")).unwrap_or_default();
        let _ = writeln!(
            t,
            "  machine          other processes used {:.2} cores (median over {} runs, max {:.2}), steal at most \
                {:.2}{busy}",
            m.other_cores_median, m.recorded, m.other_cores_max, m.steal_cores_max
        );
    }
    if let Some(n) = &g.store_writes {
        let _ = writeln!(t, "  note             {n}");
    }
}

/// The top spans by median own time over the runs.
fn group_spans(t: &mut String, g: &RepeatGroup) {
    if !g.spans.is_empty() {
        let _ = writeln!(
            t,
            "  top spans by median own time ({} of {} span names; own = less its children, total = with them):",
            g.spans.len().min(GROUP_SPAN_ROWS),
            g.spans.len()
        );
        let _ = writeln!(
            t,
            "  {:<40} {:<8} {:>12} {:>12} {:>12} {:>12}",
            "span", "process", "own median", "own MAD", "total median", "total max"
        );
        for SpanSpread { process, name, own_us, total_us } in g.spans.iter().take(GROUP_SPAN_ROWS) {
            let _ = writeln!(
                t,
                "  {:<40} {:<8} {:>12} {:>12} {:>12} {:>12}",
                clip(name, 40),
                clip(process, 8),
                ms(own_us.median as i64),
                ms(own_us.mad as i64),
                ms(total_us.median as i64),
                ms(total_us.max as i64)
            );
        }
    }
}

/// One run in full: its alignment, window, path and span table.
fn run_section(t: &mut String, p: &PassSummary) {
    let _ = writeln!(t);
    let _ = writeln!(t, "== {} ({})", p.pass, temperature(p.cold));
    times(t, p);
    clocks(t, p);
    counts(t, p);
    crate::summary::path::text(t, &p.critical_path);
    if p.spans.is_empty() {
        return;
    }
    span_table(t, p);
}

/// When the run's evaluation ran, how it ended, and what was captured of it.
fn times(t: &mut String, p: &PassSummary) {
    match p.evaluated_s {
        Some(e) => {
            let _ = writeln!(t, "  evaluated        {e:.3} s (evaluate request until it left EvaluatingDerivation)");
        }
        None if p.wall_source == "spans" && p.status.is_none() && p.failure.is_none() => {
            let _ = writeln!(
                t,
                "  evaluated        unknown: no readable run.json (the traced wall below is no evaluated time, and \
                    stands in for none)"
            );
        }
        None => {
            let _ = writeln!(t, "  evaluated        unknown: the evaluation never left EvaluatingDerivation");
        }
    }
    if let Some(f) = &p.failure {
        let _ = writeln!(t, "  did not finish   {}", f.lines().next().unwrap_or(""));
        for l in f.lines().skip(1) {
            let _ = writeln!(t, "                   {}", l.trim_start());
        }
    }
    for d in &p.problems {
        let _ = writeln!(t, "  missing          {d}");
    }
    let _ =
        writeln!(t, "  traced wall      {:.3} s (first span start to last span end, server clock)", p.traced_wall_s);
    match p.window_s {
        Some(w) => {
            let _ = writeln!(
                t,
                "  capture window   {w:.3} s (arming the captures until the evaluation left EvaluatingDerivation); \
                    spans outside it, not counted: {}",
                p.outside_window_spans
            );
        }
        None => {
            let _ = writeln!(t, "  capture window   not recorded: every span counted");
        }
    }
    if let Some(s) = &p.status {
        let _ = writeln!(
            t,
            "  status           {s}{}",
            p.evaluation_id.as_ref().map(|i| format!(" (evaluation {i})")).unwrap_or_default()
        );
    }
}

/// Each worker host's clock against the server's.
fn clocks(t: &mut String, p: &PassSummary) {
    if p.hosts.is_empty() {
        let _ = writeln!(t, "  worker clock     unaligned: no worker spans");
    }
    for h in &p.hosts {
        let who = h.host.as_deref().map(|x| format!("worker host {x}")).unwrap_or_else(|| "worker clock".into());
        if h.aligned {
            let bound = h.bound_us.map(|b| format!(" ± {b} us")).unwrap_or_default();
            let drift = h.drift_us.map(|d| format!(", drift {d:+} us across the pass")).unwrap_or_default();
            let _ = writeln!(
                t,
                "  {who:<16} offset {:+} us{bound} ({} upstream, {} downstream pairs{drift})",
                h.offset_us, h.upstream_pairs, h.downstream_pairs
            );
        } else {
            let _ = writeln!(t, "  {who:<16} {}", h.note.as_deref().unwrap_or("unaligned"));
        }
        if let Some(n) = h.note.as_deref().filter(|_| h.aligned) {
            let _ = writeln!(t, "  {:<16} warning: {n}", "");
        }
    }
}

/// The CI's evaluation_metric and the spans read.
fn counts(t: &mut String, p: &PassSummary) {
    match &p.evaluation_metric {
        Some(serde_json::Value::Object(m)) => {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(t, "  evaluation_metric {}", parts.join(" "));
        }
        Some(other) => {
            let _ = writeln!(t, "  evaluation_metric {other}");
        }
        None => {
            let _ = writeln!(t, "  evaluation_metric none recorded");
        }
    }
    let _ = writeln!(
        t,
        "  spans            {} from {} processes{}{}",
        p.span_count,
        p.processes,
        if p.dropped_spans > 0 { format!(", {} dropped by the writers", p.dropped_spans) } else { String::new() },
        if p.malformed_lines > 0 {
            format!(", {} skipped", crate::output::count(p.malformed_lines as usize, "malformed line"))
        } else {
            String::new()
        },
    );
}

/// The spans by own time, at most `TEXT_SPAN_ROWS`.
fn span_table(t: &mut String, p: &PassSummary) {
    let _ = writeln!(
        t,
        "  {:<28} {:<8} {:>8} {:>14} {:>14} {:>12} {:>12} {:>12} {:>12}",
        "span (by own time)", "process", "count", "own", "total", "mean", "p50", "p95", "max"
    );
    for s in p.by_own.iter().map(|&i| &p.spans[i as usize]).take(crate::summary::TEXT_SPAN_ROWS) {
        let _ = writeln!(
            t,
            "  {:<28} {:<8} {:>8} {:>14} {:>14} {:>12} {:>12} {:>12} {:>12}",
            clip(&s.name, 40),
            clip(&s.process, 8),
            s.count,
            ms(s.own_us),
            ms(s.total_us),
            ms(s.mean_us),
            ms(s.p50_us),
            ms(s.p95_us),
            ms(s.max_us)
        );
    }
    if p.spans.len() > crate::summary::TEXT_SPAN_ROWS {
        let _ = writeln!(t, "  ... {} more span names in summary.json", p.spans.len() - crate::summary::TEXT_SPAN_ROWS);
    }
}

/// What was not summarized, each reason once, and the first `warnings`.
fn tail(t: &mut String, s: &Summary, warnings: usize) {
    if !s.not_summarized.is_empty() {
        let _ = writeln!(t);
        let _ = writeln!(t, "Not summarized:");
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for n in &s.not_summarized {
            match reasons.iter_mut().find(|(r, _)| *r == n.reason) {
                Some((_, p)) => p.push(&n.pass),
                None => reasons.push((&n.reason, vec![&n.pass])),
            }
        }
        for (reason, passes) in reasons {
            let _ = writeln!(t, "  {}: {reason}", runs_named(&passes));
        }
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(t);
        let _ = writeln!(t, "Warnings ({}):", s.warnings.len());
        for w in s.warnings.iter().take(warnings) {
            let _ = writeln!(t, "  {w}");
        }
        if s.warnings.len() > warnings {
            let _ = writeln!(t, "  ... {} more in summary.json", s.warnings.len() - warnings);
        }
    }
}

/// The header's provenance: a line per group, `unknown` where not recorded.
fn provenance_text(t: &mut String, p: &evalbench_bundle::Provenance) {
    if p.is_unknown() {
        let _ = writeln!(t, "Provenance unknown (a bundle from before evalbench recorded it, or from another tool).");
        return;
    }
    let rows = p.rows();
    let mut groups: Vec<&str> = rows.iter().map(|r| r.0).collect();
    groups.dedup();
    for g in groups {
        let fields: Vec<String> = rows.iter().filter(|r| r.0 == g).map(|(_, f, v)| format!("{f} {v}")).collect();
        let _ = writeln!(t, "{g:<10} {}", fields.join("; "));
    }
}

/// nix's counters, one column per pass (its repeats in one column: the
/// value where they agree, as exact counts do, else min..max), the headline
/// counters first, then the rest by name.
fn counters_text(t: &mut String, passes: &[PassCounters], summarized: &[&str]) {
    use crate::figures::grouped;
    use evalbench_bundle::nix_stats::{in_headline_order, NOISY};
    if passes.is_empty() {
        return;
    }
    let mut names: Vec<String> =
        passes.iter().flat_map(|p| p.counters.as_object().into_iter().flat_map(|m| m.keys().cloned())).collect();
    in_headline_order(&mut names);
    let mut groups: Vec<(&str, Vec<&PassCounters>)> = Vec::new();
    for p in passes {
        let base = layout::base_name(&p.pass);
        match groups.iter_mut().find(|(b, _)| *b == base) {
            Some((_, v)) => v.push(p),
            None => groups.push((base, vec![p])),
        }
    }
    let _ = writeln!(t);
    let _ = writeln!(
        t,
        "nix's counters (NIX_SHOW_STATS, summed over each pass's nix evaluations; exact counts, * = a measure, its \
            unit beside it):"
    );
    let _ = write!(t, "  {:<32}", "counter");
    for (base, runs) in &groups {
        let head = if runs.len() > 1 { format!("{base} x{}", runs.len()) } else { base.to_string() };
        let _ = write!(t, " {head:>24}");
    }
    let _ = writeln!(t);
    for n in &names {
        let mark = if NOISY.contains(&n.as_str()) { "*" } else { "" };
        let unit = evalbench_bundle::nix_stats::unit(n).map(|u| format!(" ({u})")).unwrap_or_default();
        let _ = write!(t, "  {:<32}", format!("{n}{mark}{unit}"));
        for (_, runs) in &groups {
            let vals: Vec<f64> = runs.iter().filter_map(|p| p.counters.get(n).and_then(|v| v.as_f64())).collect();
            let (lo, hi) = vals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            let v = match vals.len() {
                0 => "-".to_string(),
                _ if lo == hi => grouped(lo),
                _ => format!("{}..{}", grouped(lo), grouped(hi)),
            };
            let _ = write!(t, " {v:>24}");
        }
        let _ = writeln!(t);
    }
    // A summarized pass without a column says why, rather than vanish.
    let without: Vec<&str> = summarized.iter().copied().filter(|b| !groups.iter().any(|(g, _)| g == b)).collect();
    if !without.is_empty() {
        let _ = writeln!(
            t,
            "  no column for {}: its runs hold no nix statistics (eval/nix-stats.*.json): nix wrote none",
            without.join(", ")
        );
    }
    for p in passes.iter().filter(|p| p.recycled_evaluators > 0) {
        let _ = writeln!(
            t,
            "  not counted in {}: the work of {} recycled past --eval-max-rss (killed; statistics any of them wrote \
                are not counted)",
            p.pass,
            crate::output::count(p.recycled_evaluators, "evaluator")
        );
    }
}

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The runs' values in order as one bar each, lowest to highest: a drift or
/// a warm-up is seen at a glance (analyze folded runs beyond a line's room).
pub fn sparkline(v: &[f64]) -> String {
    let (lo, hi) = v
        .iter()
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    v.iter()
        .map(|x| {
            if !x.is_finite() {
                return ' ';
            }
            let f = if hi > lo { (x - lo) / (hi - lo) } else { 0.0 };
            BARS[((f * 7.0).round() as usize).min(7)]
        })
        .collect()
}

/// `s` cut to `n` characters, the cut marked.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut c: String = s.chars().take(n.saturating_sub(1)).collect();
    c.push('…');
    c
}

/// Every line at most [`WIDTH`] characters: a longer one is wrapped at its
/// last space before the width (or cut there, without one), the rest
/// indented under it.
pub fn fit(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut rest = line;
        let mut first = true;
        loop {
            let indent = if first { "" } else { "      " };
            let room = WIDTH - indent.chars().count();
            if rest.chars().count() <= room {
                let _ = writeln!(out, "{indent}{rest}");
                break;
            }
            let cut = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
            let at = rest[..cut].rfind(' ').filter(|i| *i > room / 3).unwrap_or(cut);
            let _ = writeln!(out, "{indent}{}", rest[..at].trim_end());
            rest = rest[at..].trim_start();
            first = false;
            if rest.is_empty() {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_under_the_width_and_lose_nothing() {
        let long = format!(
            "postgres   settings {}",
            (0..80).map(|i| format!("name_{i}=value_{i}")).collect::<Vec<_>>().join(" ")
        );
        let unbroken = "x".repeat(400);
        let text = format!("short\n{long}\n{unbroken}\n");
        let out = fit(&text);
        assert!(out.lines().all(|l| l.chars().count() <= WIDTH), "{out}");
        let words = |s: &str| s.split_whitespace().collect::<String>();
        assert_eq!(words(&out), words(&text), "every character kept, in order");
        assert!(out.lines().count() > 6);
    }

    #[test]
    fn a_sparkline_has_a_bar_per_run_lowest_to_highest() {
        let s = sparkline(&[1.0, 2.0, 8.0, 1.0]);
        assert_eq!(s, "▁▂█▁");
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
