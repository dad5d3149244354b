//! The summary of a production evaluation: the answer in its first lines
//! (stages with seconds and shares, longest first; nix's counts and times;
//! each job's wait in the queue, its phases with nested ones inside their
//! parent, the worker's load; what was counted; the messages; what the
//! report left out), then the details.

use std::fmt::Write;

use evalbench_analyze::production::{JobView, Production};
use evalbench_bundle::contract::EVALUATION_METRIC_COUNTS;

use super::{load_words, opt_secs, secs};
use crate::figures::grouped;

/// Jobs shown one by one below the answer; the rest are counted.
const JOBS_SHOWN: usize = 20;

/// summary.json: the model as it is, tagged as a production evaluation.
pub fn summary_json(p: &Production) -> String {
    let mut v = serde_json::to_value(p).expect("serializes");
    v["kind"] = "gradient-diagnostic-report".into();
    serde_json::to_string_pretty(&v).expect("serializes")
}

/// summary.txt of a production evaluation.
pub fn summary_text(p: &Production) -> String {
    let mut s = String::new();
    head(&mut s, p);
    answer(&mut s, p);
    for k in &p.kinds {
        match (k.jobs, p.jobs.iter().find(|j| j.kind == k.kind)) {
            (1, Some(j)) => job_lines(&mut s, j),
            _ => kind_lines(&mut s, k),
        }
    }
    tail(&mut s, p);
    details(&mut s, p);
    s
}

fn head(s: &mut String, p: &Production) {
    let _ = writeln!(s, "evalbench summary of a Gradient diagnostic report: {}", p.file);
    let created = p.created_at.as_deref().map(|c| format!(", created {c} UTC")).unwrap_or_default();
    let end = if p.finished { "finished" } else { "its last update (not finished)" };
    let _ = writeln!(s, "evaluation {}: {}{created}, {} to {end}", p.evaluation, p.status, opt_secs(p.total_s));
    let mut who = vec![format!("commit {}", p.commit.as_deref().unwrap_or("unknown"))];
    who.extend(p.task.as_ref().map(|t| format!("task {t}")));
    who.extend(p.wildcard.as_ref().map(|w| format!("wildcard {w}")));
    let _ = writeln!(s, "{}", who.join(", "));
    let mut report =
        format!("report: schema {}, Gradient {}, made {}", p.schema_version, p.gradient_version, p.generated_at);
    if p.anonymized_identities {
        report.push_str("; identities pseudonymised");
    }
    if p.anonymized_packages {
        report.push_str("; package names pseudonymised");
    }
    let _ = writeln!(s, "{report}");
}

fn answer(s: &mut String, p: &Production) {
    let mut longest: Vec<_> = p.stages.iter().collect();
    longest.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.from_us.cmp(&b.from_us)));
    match longest.first() {
        Some(top) => {
            let _ = writeln!(
                s,
                "answer: {} took longest, {} ({:.1}% of the evaluation); one evaluation, so every time here is a \
                 single \
                 measurement, shown and never judged",
                top.name,
                secs(top.seconds),
                top.share * 100.0
            );
        }
        None => {
            let _ = writeln!(s, "answer: the evaluation's timeline has no stage (no *_started_at in evaluation)");
        }
    }
    let stages: Vec<String> = longest
        .iter()
        .map(|x| {
            format!("{} {} ({:.1}%){}", x.name, secs(x.seconds), x.share * 100.0, if x.open { ", open" } else { "" })
        })
        .collect();
    if !stages.is_empty() {
        let _ = writeln!(s, "stages: {}", stages.join(", "));
    }
    counters(s, p);
    let waits: Vec<String> = p
        .kinds
        .iter()
        .map(|k| match k.jobs {
            1 => format!(
                "{} job {} to ready, {} to dispatch",
                k.kind,
                opt_secs(k.to_ready_median_s),
                opt_secs(k.to_dispatch_median_s)
            ),
            n => format!(
                "{} {} jobs {} to ready, {} to dispatch at the median ({} at most)",
                grouped(n as f64),
                k.kind,
                opt_secs(k.to_ready_median_s),
                opt_secs(k.to_dispatch_median_s),
                opt_secs(k.to_dispatch_max_s)
            ),
        })
        .collect();
    if !waits.is_empty() {
        let _ = writeln!(s, "queue: {}", waits.join("; "));
    }
}

fn counters(s: &mut String, p: &Production) {
    let counts: Vec<String> = EVALUATION_METRIC_COUNTS
        .iter()
        .filter_map(|(column, nix)| p.counters.get(*nix).map(|v| format!("{column} {}", grouped(*v))))
        .collect();
    if counts.is_empty() {
        let _ = writeln!(s, "nix: evaluation_metric holds no counts for this evaluation");
        return;
    }
    let _ = writeln!(s, "nix (evaluation_metric, exact): {}", counts.join(", "));
    let measure = |c: &str| p.counters.get(&format!("evaluation_metric.{c}")).copied();
    let times: Vec<String> = ["fetch_ms", "eval_flake_ms", "eval_drv_ms", "total_eval_ms"]
        .iter()
        .filter_map(|c| measure(c).map(|v| format!("{} {}", c.trim_end_matches("_ms"), secs(v / 1000.0))))
        .collect();
    let peaks: Vec<String> = ["peak_heap_mb", "peak_rss_mb"]
        .iter()
        .filter_map(|c| {
            measure(c).map(|v| format!("{} {v:.0} MiB", c.trim_start_matches("peak_").trim_end_matches("_mb")))
        })
        .collect();
    let _ = writeln!(s, "  its times: {}; peaks: {}", or_none(&times), or_none(&peaks));
}

fn or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// A job in two lines: its phases (nested ones in brackets after their
/// parent, not added to it twice), then its worker's load.
fn job_lines(s: &mut String, j: &JobView) {
    let mut phases = String::new();
    for (i, ph) in j.phases.iter().enumerate() {
        let prev_depth = if i == 0 { 0 } else { j.phases[i - 1].depth };
        let shown = format!("{} {}", ph.name, ph.ms.map_or("open".to_string(), |m| secs(m as f64 / 1000.0)));
        if ph.depth > prev_depth {
            phases.push_str(&format!(" [{shown}"));
        } else {
            phases.push_str(&"]".repeat(prev_depth - ph.depth));
            phases.push_str(if i == 0 {
                ""
            } else if ph.depth > 0 {
                ", "
            } else {
                " · "
            });
            phases.push_str(&shown);
        }
    }
    phases.push_str(&"]".repeat(j.phases.last().map_or(0, |p| p.depth)));
    let worker = j.worker.as_deref().unwrap_or("an unknown worker");
    let _ = writeln!(s, "{} job on {worker}, ran {}: {}", j.kind, opt_secs(j.run_s), phases.trim_start());
    match &j.load {
        Some(l) => {
            let _ = writeln!(s, "  worker while it ran: {}", load_words(l));
        }
        None => {
            let _ = writeln!(s, "  worker while it ran: no worker_sample (the report holds none for it)");
        }
    }
}

/// Many jobs of a kind in two lines: how many, their runs, each phase's
/// time added over them (nested ones in brackets); the busiest worker.
fn kind_lines(s: &mut String, k: &evalbench_analyze::production::KindView) {
    let phases: Vec<String> = k
        .phase_totals
        .iter()
        .map(|(n, t, nested)| if *nested { format!("[{n} {}]", secs(*t)) } else { format!("{n} {}", secs(*t)) })
        .collect();
    let _ = writeln!(
        s,
        "{} {} jobs on {} workers, ran {} at the median ({} at most); phases added over them: {}",
        grouped(k.jobs as f64),
        k.kind,
        k.workers,
        opt_secs(k.run_median_s),
        opt_secs(k.run_max_s),
        or_none(&phases)
    );
    match &k.busiest {
        Some((w, l)) => {
            let _ = writeln!(s, "  busiest worker, {w}, while its job ran: {}", load_words(l));
        }
        None => {
            let _ = writeln!(s, "  workers while they ran: no worker_sample (the report holds none for them)");
        }
    }
}

fn tail(s: &mut String, p: &Production) {
    let c = &p.counts;
    let _ = writeln!(
        s,
        "counted: {} derivations, {} dependency edges, {} outputs, {} cached paths, {} build jobs, {} entry points, {} \
         build attempts, {} build logs",
        c.derivations,
        c.dependencies,
        c.derivation_outputs,
        c.cached_paths,
        c.build_jobs,
        c.entry_points,
        c.build_attempts,
        c.build_logs
    );
    let mut levels: Vec<(String, usize)> = Vec::new();
    for m in &p.messages {
        match levels.iter_mut().find(|(l, _)| *l == m.level) {
            Some((_, n)) => *n += 1,
            None => levels.push((m.level.clone(), 1)),
        }
    }
    let said: Vec<String> = levels.iter().map(|(l, n)| format!("{n} {l}")).collect();
    let _ =
        writeln!(s, "messages: {}", if said.is_empty() { "none".to_string() } else { said.join(", ") + " (below)" });
    let left: Vec<String> = p
        .left_out
        .iter()
        .map(|l| format!("{} {} of {} rows ({})", l.table, l.included, l.available, l.filter))
        .collect();
    let instance = if p.include_instance { "" } else { "; the instance's tables (workers, samples) not included" };
    let _ = writeln!(s, "left out (report_manifest): {}{instance}", or_none(&left));
}

fn details(s: &mut String, p: &Production) {
    let _ = writeln!(s, "\nstages, in the order they ran");
    for x in &p.stages {
        let _ = writeln!(s, "  {:<24} {:>12} {:>6.1}%", x.name, secs(x.seconds), x.share * 100.0);
    }
    for j in &p.jobs {
        let _ = writeln!(
            s,
            "\n{} job {} (outcome {})",
            j.kind,
            j.id,
            j.outcome.map_or("unknown".into(), |o| o.to_string())
        );
        let _ = writeln!(s, "  {:<30} {:>10} {:>12} {:>8} {:>14}  worker", "phase", "start", "took", "paths", "bytes");
        for ph in &j.phases {
            let name = format!("{}{}", "  ".repeat(ph.depth), ph.name);
            let took = ph.ms.map_or("open".to_string(), |m| secs(m as f64 / 1000.0));
            let start = secs(ph.start_ms as f64 / 1000.0);
            let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| grouped(v as f64));
            let load = ph.load.as_ref().map(load_words).unwrap_or_else(|| "-".into());
            let _ =
                writeln!(s, "  {name:<30} {start:>10} {took:>12} {:>8} {:>14}  {load}", opt(ph.paths), opt(ph.bytes));
        }
    }
    if p.jobs.len() > JOBS_SHOWN {
        let _ = writeln!(s, "\nand {} more jobs (every one in summary.json)", p.jobs.len() - JOBS_SHOWN);
    }
    if !p.messages.is_empty() {
        let _ = writeln!(s, "\nmessages");
        for m in &p.messages {
            let source = m.source.as_deref().map(|x| format!(" ({x})")).unwrap_or_default();
            let _ = writeln!(s, "  {}{source}: {}", m.level, m.text);
        }
    }
    if !p.warnings.is_empty() {
        let _ = writeln!(s, "\nwarnings");
        for w in &p.warnings {
            let _ = writeln!(s, "  {w}");
        }
    }
}
