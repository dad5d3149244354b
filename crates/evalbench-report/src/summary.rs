//! `summary.json` for scripts and `summary.txt` for people: the same numbers.

use std::fmt::Write as _;

use evalbench_analyze::{span_stats, Alignment, HostAlignment, PassData, SpanStat, Warning};
use evalbench_bundle::layout;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct PassSummary {
    pub pass: String,
    /// What the machine did beside the run (run.json's `machine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<evalbench_bundle::MachineState>,
    pub cold: bool,
    pub clean: bool,
    /// Seconds until the evaluation left EvaluatingDerivation (run.json), else the traced wall time.
    pub wall_s: f64,
    /// Where `wall_s` came from: "run.json" or "spans".
    pub wall_source: &'static str,
    pub evaluated_s: Option<f64>,
    /// First span start to last span end, on the server clock.
    pub traced_wall_s: f64,
    pub evaluation_id: Option<String>,
    pub status: Option<String>,
    pub worker_offset_us: i64,
    pub offset_bound_us: Option<i64>,
    pub aligned: bool,
    pub upstream_pairs: usize,
    pub downstream_pairs: usize,
    pub drift_us: Option<i64>,
    /// Every worker host's alignment (one entry per host).
    pub hosts: Vec<HostAlignment>,
    pub evaluation_metric: Option<serde_json::Value>,
    /// nix's counters, summed over the pass's nix evaluations (exact counts
    /// but for `cpuTime` and `gc.heapSize`).
    pub nix_stats: Option<serde_json::Value>,
    pub span_count: usize,
    pub processes: usize,
    pub dropped_spans: u64,
    pub malformed_lines: u64,
    /// The capture window's length (run.json), and the spans left out of
    /// every figure here for starting outside it.
    pub window_s: Option<f64>,
    pub outside_window_spans: u64,
    /// Why the pass did not finish (run.json), the target's processes that
    /// died in it, and the captures that could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dead: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    pub spans: Vec<SpanStat>,
    /// What the evaluated time waited on (`summary_path`), or why it is unknown.
    #[serde(serialize_with = "path_or_reason")]
    pub critical_path: Result<crate::summary_path::PathSummary, String>,
}

/// The path, or `{"none": why}`.
fn path_or_reason<S: serde::Serializer>(p: &Result<crate::summary_path::PathSummary, String>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Ok(p) => p.serialize(s),
        Err(why) => serde_json::json!({ "none": why }).serialize(s),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct NotSummarized {
    pub pass: String,
    pub reason: String,
}

/// A pass run several times (`run --repeat`): medians and spreads.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatGroup {
    pub pass: String,
    pub runs: usize,
    pub wall_s: evalbench_analyze::verdict::Spread,
    /// Per span: the spread of its total over the runs, in µs.
    pub spans: Vec<SpanSpread>,
    /// The median critical path, and how often each step was on it.
    pub critical_path: Vec<crate::summary_path::StepOverRuns>,
    /// Set when the runs wrote different numbers of `.drv` files to the
    /// nix store (`analyze::store_writes`): they did not evaluate alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_writes: Option<String>,
    /// The machine beside the runs: other processes' CPU, the busy runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<evalbench_analyze::machine::SideMachine>,
    /// The evaluated seconds' trend in run order, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trend: Option<evalbench_analyze::drift::Trend>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpanSpread {
    pub process: String,
    pub name: String,
    pub total_us: evalbench_analyze::verdict::Spread,
}

impl RepeatGroup {
    /// Groups summarized passes by base name; only groups of two or more.
    pub fn group(passes: &[PassSummary]) -> Vec<RepeatGroup> {
        let mut names: Vec<String> = passes.iter().map(|p| layout::base_name(&p.pass).to_string()).collect();
        names.dedup();
        let mut out = Vec::new();
        for base in names {
            let runs: Vec<&PassSummary> = passes.iter().filter(|p| layout::base_name(&p.pass) == base).collect();
            if runs.len() < 2 {
                continue;
            }
            let mut keys: Vec<(String, String)> = runs.iter().flat_map(|r| r.spans.iter().map(|s| (s.process.clone(), s.name.clone()))).collect();
            keys.sort();
            keys.dedup();
            let mut spans: Vec<SpanSpread> = keys
                .into_iter()
                .map(|(process, name)| {
                    let v: Vec<f64> = runs
                        .iter()
                        .map(|r| r.spans.iter().find(|s| s.process == process && s.name == name).map_or(0.0, |s| s.total_us as f64))
                        .collect();
                    SpanSpread { process, name, total_us: evalbench_analyze::verdict::spread(&v).rounded(0) }
                })
                .collect();
            spans.sort_by(|a, b| b.total_us.median.total_cmp(&a.total_us.median));
            let paths: Vec<&crate::summary_path::PathSummary> = runs.iter().filter_map(|r| r.critical_path.as_ref().ok()).collect();
            out.push(RepeatGroup {
                critical_path: crate::summary_path::over_runs(&paths),
                store_writes: {
                    use evalbench_analyze::store_writes::{drvs_written, note};
                    note(&runs.iter().map(|r| (r.pass.as_str(), drvs_written(r.evaluation_metric.as_ref()))).collect::<Vec<_>>())
                },
                machine: evalbench_analyze::machine::SideMachine::of(&runs.iter().map(|r| r.machine).collect::<Vec<_>>()),
                trend: evalbench_analyze::drift::trend(&runs.iter().map(|r| r.wall_s).collect::<Vec<_>>()),
                pass: base,
                runs: runs.len(),
                wall_s: evalbench_analyze::verdict::spread(&runs.iter().map(|r| r.wall_s).collect::<Vec<_>>()).rounded(6),
                spans,
            });
        }
        out
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub evalbench_version: &'static str,
    pub bundle: String,
    /// What the bundle measured and where (its first pass's run.json); all unknown for older bundles.
    pub provenance: evalbench_bundle::Provenance,
    pub passes: Vec<PassSummary>,
    /// Passes run more than once, with medians and spreads.
    pub repeats: Vec<RepeatGroup>,
    pub not_summarized: Vec<NotSummarized>,
    /// nix's counters of every pass that has them, instrumented ones too:
    /// counts are not distorted by the captures that distort times.
    pub nix_stats: Vec<PassCounters>,
    /// The PostgreSQL settings of every pass given some (`--pg-setting`), as the server showed them.
    pub pg_settings: Vec<PassSettings>,
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassSettings {
    pub pass: String,
    pub settings: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassCounters {
    pub pass: String,
    pub counters: serde_json::Value,
    /// Evaluators recycled past `--eval-max-rss`: killed, they wrote no
    /// statistics, so their work is not in `counters`.
    #[serde(skip_serializing_if = "is_zero")]
    pub recycled_evaluators: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl PassSummary {
    pub fn new(pass: &PassData, alignment: &Alignment) -> PassSummary {
        PassSummary::with_path(pass, alignment, crate::summary_path::of(pass, alignment))
    }

    /// With its critical path computed already.
    pub fn with_path(pass: &PassData, alignment: &Alignment, critical_path: Result<crate::summary_path::PathSummary, String>) -> PassSummary {
        let traced_wall_s = pass.extent(alignment).map(|(first, last)| (last - first) as f64 / 1e6).unwrap_or(0.0);
        let evaluated_s = pass.run.as_ref().and_then(|r| r.evaluated_s);
        let runner = pass.run.as_ref().and_then(|r| r.runner.as_ref());
        let main = alignment.main();
        PassSummary {
            machine: runner.and_then(|r| r.machine),
            pass: pass.name.clone(),
            cold: layout::is_cold(&pass.name),
            clean: layout::is_clean(&pass.name),
            wall_s: evalbench_bundle::num::s(evaluated_s.unwrap_or(traced_wall_s)),
            wall_source: if evaluated_s.is_some() { "run.json" } else { "spans" },
            evaluated_s: evaluated_s.map(evalbench_bundle::num::s),
            traced_wall_s: evalbench_bundle::num::s(traced_wall_s),
            evaluation_id: pass.run.as_ref().and_then(|r| r.evaluation_id.clone()),
            status: pass.run.as_ref().and_then(|r| r.status.clone()),
            worker_offset_us: main.map_or(0, |h| h.offset_us),
            offset_bound_us: main.and_then(|h| h.bound_us),
            aligned: !alignment.hosts.is_empty() && alignment.hosts.iter().all(|h| h.aligned),
            upstream_pairs: main.map_or(0, |h| h.upstream_pairs),
            downstream_pairs: main.map_or(0, |h| h.downstream_pairs),
            drift_us: main.and_then(|h| h.drift_us),
            hosts: alignment.hosts.clone(),
            evaluation_metric: pass.run.as_ref().and_then(|r| r.evaluation_metric.clone()),
            nix_stats: evalbench_analyze::counters::of_pass(pass).map(|c| evalbench_bundle::nix_stats::to_json(&c)),
            span_count: pass.span_count(),
            processes: pass.streams.len(),
            dropped_spans: pass.dropped,
            malformed_lines: pass.malformed_total,
            window_s: evalbench_analyze::window(pass.run.as_ref()).map(|(a, b)| evalbench_bundle::num::s((b - a) as f64 / 1e6)),
            outside_window_spans: pass.outside_window,
            failure: runner.and_then(|r| r.failure.clone()),
            dead: runner.map(|r| r.dead.clone()).unwrap_or_default(),
            problems: runner.map(|r| r.problems.clone()).unwrap_or_default(),
            spans: span_stats(&pass.streams),
            critical_path,
        }
    }
}

/// µs as milliseconds to three places, with the unit.
pub(crate) fn ms(us: i64) -> String {
    format!("{:.3} ms", us as f64 / 1000.0)
}

/// How many span rows summary.txt shows per pass; summary.json has them all.
pub const TEXT_SPAN_ROWS: usize = 40;

impl Summary {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("summary serializes")
    }

    pub fn to_text(&self) -> String {
        let mut t = String::new();
        let _ = writeln!(t, "evalbench summary of {}", self.bundle);
        provenance_text(&mut t, &self.provenance);
        let _ = writeln!(t, "Clean passes only: perf, strace and auto_explain distort the timings of instrumented passes.");
        // One line per distinct set of settings, with the passes that ran with it.
        let mut sets: Vec<(String, Vec<&str>)> = Vec::new();
        for p in &self.pg_settings {
            let set = crate::output::pg_settings(&p.settings, " ");
            match sets.iter_mut().find(|(s, _)| *s == set) {
                Some((_, passes)) => passes.push(&p.pass),
                None => sets.push((set, vec![&p.pass])),
            }
        }
        for (set, passes) in sets {
            let _ = writeln!(t, "PostgreSQL ran with {set} (--pg-setting) in {}.", passes.join(", "));
        }
        for p in &self.passes {
            let _ = writeln!(t);
            let temp = if p.cold { "cold: empty eval cache" } else { "warm: eval cache from the previous pass" };
            let _ = writeln!(t, "== {} ({temp})", p.pass);
            match p.evaluated_s {
                Some(e) => {
                    let _ = writeln!(t, "  evaluated        {e:.3} s (evaluate request until it left EvaluatingDerivation)");
                }
                None if p.wall_source == "spans" && p.status.is_none() && p.failure.is_none() => {
                    let _ = writeln!(t, "  evaluated        unknown (no run.json); wall time below is from the spans");
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
            let _ = writeln!(t, "  traced wall      {:.3} s (first span start to last span end, server clock)", p.traced_wall_s);
            match p.window_s {
                Some(w) => {
                    let _ = writeln!(
                        t,
                        "  capture window   {w:.3} s (arming the captures until the evaluation left EvaluatingDerivation); spans outside it, not counted: {}",
                        p.outside_window_spans
                    );
                }
                None => {
                    let _ = writeln!(t, "  capture window   not recorded: every span counted");
                }
            }
            if let Some(s) = &p.status {
                let _ = writeln!(t, "  status           {s}{}", p.evaluation_id.as_ref().map(|i| format!(" (evaluation {i})")).unwrap_or_default());
            }
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
                if p.malformed_lines > 0 { format!(", {} malformed lines skipped", p.malformed_lines) } else { String::new() },
            );
            crate::summary_path::text(&mut t, &p.critical_path);
            if !p.spans.is_empty() {
                let _ = writeln!(
                    t,
                    "  {:<28} {:<8} {:>8} {:>14} {:>12} {:>12} {:>12} {:>12}",
                    "span (by total time)", "process", "count", "total", "mean", "p50", "p95", "max"
                );
                for s in p.spans.iter().take(TEXT_SPAN_ROWS) {
                    let _ = writeln!(
                        t,
                        "  {:<28} {:<8} {:>8} {:>14} {:>12} {:>12} {:>12} {:>12}",
                        s.name,
                        s.process,
                        s.count,
                        ms(s.total_us),
                        ms(s.mean_us),
                        ms(s.p50_us),
                        ms(s.p95_us),
                        ms(s.max_us)
                    );
                }
                if p.spans.len() > TEXT_SPAN_ROWS {
                    let _ = writeln!(t, "  ... {} more span names in summary.json", p.spans.len() - TEXT_SPAN_ROWS);
                }
            }
        }
        for g in &self.repeats {
            let _ = writeln!(t);
            let _ = writeln!(
                t,
                "== {} x{} runs: evaluated median {:.3} s (min {:.3}, max {:.3}, MAD {:.3})",
                g.pass, g.runs, g.wall_s.median, g.wall_s.min, g.wall_s.max, g.wall_s.mad
            );
            if let Some(n) = &g.store_writes {
                let _ = writeln!(t, "  note: {n}");
            }
            if let Some(m) = &g.machine {
                let busy = m.sentence().map(|s| format!("; {s}")).unwrap_or_default();
                let _ = writeln!(
                    t,
                    "  machine: other processes used {:.2} cores (median over {} runs, max {:.2}), steal at most {:.2}{busy}",
                    m.other_cores_median, m.recorded, m.other_cores_max, m.steal_cores_max
                );
            }
            if let Some(tr) = &g.trend {
                let _ = writeln!(t, "  trend: {}", tr.sentence("the evaluated seconds", "s"));
            }
            for SpanSpread { process, name, total_us: sp } in g.spans.iter().take(15) {
                let _ = writeln!(
                    t,
                    "  {name:<28} {process:<8} median {:>12} MAD {:>10} (min {}, max {})",
                    ms(sp.median as i64),
                    ms(sp.mad as i64),
                    ms(sp.min as i64),
                    ms(sp.max as i64)
                );
            }
            crate::summary_path::over_runs_text(&mut t, &g.critical_path);
        }
        counters_text(&mut t, &self.nix_stats);
        if !self.not_summarized.is_empty() {
            let _ = writeln!(t);
            let _ = writeln!(t, "Not summarized:");
            for n in &self.not_summarized {
                let _ = writeln!(t, "  {}: {}", n.pass, n.reason);
            }
        }
        if !self.warnings.is_empty() {
            let _ = writeln!(t);
            let _ = writeln!(t, "Warnings ({}):", self.warnings.len());
            for w in self.warnings.iter().take(50) {
                let _ = writeln!(t, "  {w}");
            }
            if self.warnings.len() > 50 {
                let _ = writeln!(t, "  ... {} more in summary.json", self.warnings.len() - 50);
            }
        }
        t
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
fn counters_text(t: &mut String, passes: &[PassCounters]) {
    use evalbench_analyze::counters::{grouped, in_headline_order, NOISY};
    if passes.is_empty() {
        return;
    }
    let mut names: Vec<String> = passes.iter().flat_map(|p| p.counters.as_object().into_iter().flat_map(|m| m.keys().cloned())).collect();
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
    let _ = writeln!(t, "nix's counters (NIX_SHOW_STATS, summed over each pass's nix evaluations; exact counts, * = a time or the heap's size):");
    let _ = write!(t, "  {:<32}", "counter");
    for (base, runs) in &groups {
        let head = if runs.len() > 1 { format!("{base} x{}", runs.len()) } else { base.to_string() };
        let _ = write!(t, " {head:>24}");
    }
    let _ = writeln!(t);
    for n in &names {
        let mark = if NOISY.contains(&n.as_str()) { "*" } else { "" };
        let _ = write!(t, "  {:<32}", format!("{n}{mark}"));
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
    for p in passes.iter().filter(|p| p.recycled_evaluators > 0) {
        let _ = writeln!(
            t,
            "  not counted in {}: the work of {} recycled past --eval-max-rss (killed; statistics any of them wrote are not counted)",
            p.pass,
            crate::output::count(p.recycled_evaluators, "evaluator")
        );
    }
}
