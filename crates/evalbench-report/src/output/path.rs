//! The critical path and `whatif` as text: steps on the path with their
//! share, and the prediction with its assumption.

use std::fmt::Write as _;

use evalbench_analyze::path::whatif::WhatIf;
use evalbench_analyze::path::CriticalPath;
use evalbench_analyze::path::OverRuns;

use crate::summary::ms;

/// The path's steps, largest first, `top` of them and the rest counted.
/// The pass's answer over its runs, as summary.txt's first lines give it.
pub fn answer_text(a: &evalbench_analyze::over_runs::PassAnswer) -> String {
    let e = &a.evaluated_s;
    let mut t = if e.n == 0 {
        format!("{}: evaluated unknown (no run.json gave an evaluated time)\n", a.pass)
    } else if e.n > 1 {
        format!(
            "{}: evaluated median {:.3} s (MAD {:.3} s, {:.3}..{:.3} s over {} runs; run {} nearest the median)\n",
            a.pass, e.median, e.mad, e.min, e.max, e.n, a.median_run_number
        )
    } else {
        format!("{}: evaluated {:.3} s (one run)\n", a.median_run, e.median)
    };
    t.push_str(&crate::summary::answer::answer_lines(a, "  "));
    t
}

pub fn path_text(pass: &str, p: &CriticalPath, top: usize) -> String {
    let mut t = String::new();
    let bound = p
        .bound_us
        .map_or_else(|| "clocks not aligned across hosts".to_string(), |b| format!("cross-host edges within ±{b} µs"));
    let _ = writeln!(
        t,
        "{pass}: critical path of {:.6} s evaluated (request → left EvaluatingDerivation), {} steps in {} stretches; \
            {bound}",
        p.to_us.saturating_sub(p.from_us) as f64 / 1e6,
        p.steps.len(),
        p.segments.len()
    );
    let _ = writeln!(t, "  by process: {}", crate::summary::path::processes_text(&p.by_process()));
    let _ = writeln!(t, "  {:>12}  {:>6}  {:>12}  {:>12}  step", "on path", "share", "own", "off path");
    for s in p.steps.iter().take(top) {
        let own = s.own_us.map_or_else(|| "–".into(), ms);
        let off = s.off_path_us.map_or_else(|| "–".into(), ms);
        let _ = writeln!(
            t,
            "  {:>12}  {:>5.1}%  {:>12}  {:>12}  {}",
            ms(s.on_path_us),
            s.share * 100.0,
            own,
            off,
            s.label()
        );
    }
    if p.steps.len() > top {
        let rest: i64 = p.steps[top..].iter().map(|s| s.on_path_us).sum();
        let _ = writeln!(
            t,
            "  {:>12}  {:>5.1}%  {} more steps",
            ms(rest),
            rest as f64 / p.to_us.saturating_sub(p.from_us).max(1) as f64 * 100.0,
            p.steps.len() - top
        );
    }
    t
}

pub fn whatif_text(pass: &str, w: &WhatIf, measured: &CriticalPath, over: Option<&OverRuns>, top: usize) -> String {
    let mut t = String::new();
    let asked: Vec<String> =
        w.faster.iter().map(|f| format!("{} {}% faster ({})", f.name, f.pct, f.matched.join(", "))).collect();
    let _ = writeln!(t, "{pass}: what if {}", asked.join(" and "));
    // What is shortened is the step's time as the table counts it: a span's
    // own time less the PostgreSQL round trips inside it (booked under
    // postgres), everywhere in the run. Only its time on the path can come
    // off the evaluated time; both, said.
    for f in &w.faster {
        for label in &f.matched {
            if let Some(s) = measured.steps.iter().find(|s| s.label() == *label) {
                let own = s.own_us.map_or_else(|| "–".into(), ms);
                let _ = writeln!(
                    t,
                    "  {label}: {} on the path of {own} own time in this run (less its children, the spans it waited \
                        on and its PostgreSQL round trips); {}% of each is taken off, so at most {} while the path \
                        stays",
                    ms(s.on_path_us),
                    f.pct,
                    ms((s.on_path_us as f64 * f.pct / 100.0).round() as i64)
                );
            }
        }
    }
    if let Some(o) = over {
        let _ = writeln!(
            t,
            "  over the pass's {} runs, each on its own path: saves {} median ({}..{}), predicted {:.3} s median \
                against {:.3} s measured ({:+.1}%)",
            o.runs,
            ms((o.saved_ms.median * 1e3).round() as i64),
            ms((o.saved_ms.min * 1e3).round() as i64),
            ms((o.saved_ms.max * 1e3).round() as i64),
            o.predicted_s.median,
            o.measured_s.median,
            if o.measured_s.median > 0.0 { (o.predicted_s.median / o.measured_s.median - 1.0) * 100.0 } else { 0.0 }
        );
    }
    let _ = writeln!(
        t,
        "  this run: predicted evaluated {:.6} s against {:.6} s measured ({:+.1}%)",
        w.predicted_s, w.measured_s, w.change_pct
    );
    if let Some(n) = &w.critical_next {
        let _ = writeln!(t, "  the predicted path is led by: {n}");
    }
    let _ = writeln!(t, "  predicted path, largest first:");
    for s in w.predicted.iter().take(top) {
        let _ = writeln!(t, "  {:>12}  {:>5.1}%  {}", ms(s.on_path_us), s.share * 100.0, s.label());
    }
    let _ = writeln!(t, "  ({})", w.assumption);
    t
}
