//! The report's sections, one function each, in the seed's order.

use std::collections::HashMap;
use std::fmt::Write;

use evalbench_analyze::span_stats;
use evalbench_bundle::layout;
use serde_json::Value;

use super::esc::{esc, href};
use super::model::{read_json, Pass};
use super::svg::{self, ms, Item};
use super::Page;

fn missing(page: &mut Page, pass: &Pass, file: &str) {
    let _ =
        write!(page.body, "<p class=\"missing\">Not captured in this pass: <code>{}</code> is missing.</p>", esc(&format!("{}/{file}", pass.name)));
}

fn mode(p: &Pass) -> String {
    format!("{}, {}", if p.cold { "cold" } else { "warm" }, if p.clean { "clean" } else { "instrumented (timings distorted)" })
}

fn offset_line(p: &Pass) -> String {
    match p.align.main() {
        Some(h) if h.aligned => format!(
            "Worker clock offset {:+} µs ± {} µs ({} upstream, {} downstream pairs).",
            h.offset_us,
            h.bound_us.unwrap_or(0),
            h.upstream_pairs,
            h.downstream_pairs
        ),
        Some(h) => format!("Worker clock unaligned: {}.", h.note.clone().unwrap_or_default()),
        None => "No worker spans: nothing to align.".into(),
    }
}

pub fn overview(page: &mut Page, passes: &[Pass]) {
    page.h2("passes", "All passes");
    page.body.push_str("<table><tr><th>pass</th><th>mode</th><th>evaluated</th><th>traced wall</th><th>worker clock</th><th>spans</th><th>evaluation_metric</th></tr>");
    for p in passes {
        let evaluated = p.run["evaluated_s"].as_f64().map(|s| format!("{s:.3} s")).unwrap_or_else(|| "unknown".into());
        let wall = p.extent().map(|(a, b)| format!("{:.3} s", (b - a) / 1e6)).unwrap_or_else(|| "no spans".into());
        let metric = match &p.run["evaluation_metric"] {
            Value::Object(m) => {
                m.iter().filter(|(k, _)| *k != "evaluation" && *k != "recorded_at").map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
            }
            _ => "none".into(),
        };
        let _ = write!(
            page.body,
            "<tr class=\"{}\"><td><a href=\"#pass-{}\">{}</a></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td><small>{}</small></td></tr>",
            if p.clean { "clean" } else { "distorted" },
            esc(&super::esc::file_safe(&p.name)),
            esc(&p.name),
            esc(&mode(p)),
            esc(&evaluated),
            esc(&wall),
            esc(&offset_line(p)),
            p.data.span_count(),
            esc(&metric)
        );
    }
    page.body.push_str("</table>");
    // Span totals side by side: the names that matter most in any pass.
    let stats: Vec<HashMap<(String, String), i64>> =
        passes.iter().map(|p| span_stats(&p.data.streams).into_iter().map(|s| ((s.process, s.name), s.total_us)).collect()).collect();
    let mut keys: Vec<((String, String), i64)> = HashMap::<(String, String), i64>::new().into_iter().collect();
    let mut best: HashMap<(String, String), i64> = HashMap::new();
    for m in &stats {
        for (k, v) in m {
            let e = best.entry(k.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }
    keys.extend(best);
    keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shown = keys.len().min(30);
    page.body.push_str("<h3>Span totals side by side</h3><table><tr><th>span</th><th>process</th>");
    for p in passes {
        let _ = write!(page.body, "<th>{}</th>", esc(&p.name));
    }
    page.body.push_str("</tr>");
    for ((process, name), _) in keys.iter().take(shown) {
        let _ = write!(page.body, "<tr><td>{}</td><td>{}</td>", esc(name), esc(process));
        for m in &stats {
            let v = m.get(&(process.clone(), name.clone())).map(|v| ms(*v as f64)).unwrap_or_else(|| "–".into());
            let _ = write!(page.body, "<td class=\"n\">{}</td>", esc(&v));
        }
        page.body.push_str("</tr>");
    }
    page.body.push_str("</table>");
    if keys.len() > shown {
        let _ = write!(page.body, "<p class=\"note\">{} more span names are in summary.json.</p>", keys.len() - shown);
    }
}

pub fn pass_header(page: &mut Page, p: &Pass) {
    page.h2(&format!("pass-{}", super::esc::file_safe(&p.name)), &format!("Pass {}", p.name));
    let _ = write!(page.body, "<p><b>{}</b>. {}</p>", esc(&mode(p)), esc(&offset_line(p)));
    if !p.clean {
        page.body.push_str(
            "<p class=\"warn\">Instrumented pass: perf, strace and auto_explain slow it down. Read its timings as shapes, not as durations.</p>",
        );
    }
    if let Some(off) = p.run["captures_off"].as_array().filter(|a| !a.is_empty()) {
        let names: Vec<String> = off.iter().filter_map(|v| v.as_str().map(String::from)).collect();
        let _ = write!(page.body, "<p class=\"note\">Switched off for this run: {}.</p>", esc(&names.join(", ")));
    }
    for w in p.data.warnings.iter().take(10) {
        let _ = write!(page.body, "<p class=\"note\">{}</p>", esc(&w.to_string()));
    }
}

/// The steps from the evaluate request to the worker's job span.
const PATH: &[(&str, &str)] = &[
    ("server", "assign_queued_evals"),
    ("server", "offer_jobs"),
    ("worker", "on_job_offer"),
    ("worker", "send_scores"),
    ("worker", "request_job"),
    ("server", "on_request_job"),
    ("server", "claim_dispatch"),
    ("server", "send_credentials"),
    ("server", "assign_job"),
];

pub fn assignment(page: &mut Page, p: &Pass) {
    page.h3(&p.name, "assignment", "Assignment");
    let names = p.by_name();
    let assigns = names.get(&("server", "assign_job")).map(|v| v.as_slice()).unwrap_or(&[]);
    if assigns.is_empty() {
        page.body.push_str("<p class=\"missing\">No assign_job span in this pass: the assignment path cannot be drawn.</p>");
        return;
    }
    let requested = p.run["requested_us"].as_f64();
    for a in assigns.iter().take(8) {
        let job = p.field(a.stream, a.idx, "job").map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string())).unwrap_or_default();
        // Walk back from assign_job: each step is the latest of its name that starts before the next.
        let mut steps: Vec<(String, f64, f64)> = vec![("server assign_job".into(), a.start, a.end)];
        let mut before = a.start;
        for (process, name) in PATH.iter().rev().skip(1) {
            if let Some(s) = names.get(&(*process, *name)).and_then(|v| v.iter().rev().find(|s| s.start <= before)) {
                if requested.is_some_and(|r| s.start < r - 1e6) {
                    continue;
                }
                steps.push((format!("{process} {name}"), s.start, s.end));
                before = s.start;
            }
        }
        if let Some(r) = requested {
            steps.push(("evaluate request (runner)".into(), r, r));
        }
        steps.reverse();
        let job_span = names.get(&("worker", "job")).and_then(|v| {
            v.iter().find(|s| p.field(s.stream, s.idx, "job").and_then(|j| j.as_str().map(String::from)).as_deref() == Some(job.as_str()))
        });
        if let Some(j) = job_span {
            steps.push(("worker job".into(), j.start, j.end.min(j.start + 1.0)));
        }
        let t0 = steps.first().map(|s| s.1).unwrap_or(0.0);
        let t1 = steps.iter().map(|s| s.2.max(s.1)).fold(t0, f64::max);
        let mut rows = Vec::new();
        let mut table = String::from("<table><tr><th>step</th><th>starts at</th><th>wait before</th><th>duration</th></tr>");
        let mut prev_end: Option<f64> = None;
        for (label, s, e) in &steps {
            let wait = prev_end.map(|pe| s - pe);
            let wait_s = match wait {
                Some(w) if w >= 0.0 => ms(w),
                Some(_) => "inside the previous step".into(),
                None => "–".into(),
            };
            let title = format!("{label}: at +{}, waited {wait_s}, took {}", ms(s - t0), ms(e - s));
            rows.push((label.clone(), vec![Item { start: *s, end: e.max(*s + 1.0), label: label.clone(), title }]));
            let _ = write!(
                table,
                "<tr><td>{}</td><td class=\"n\">+{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(label),
                esc(&ms(s - t0)),
                esc(&wait_s),
                esc(&ms(e - s))
            );
            prev_end = Some(prev_end.map_or(*e, |pe: f64| pe.max(*e)));
        }
        table.push_str("</table>");
        let _ = write!(page.body, "<h4>Job <code>{}</code></h4>", esc(&job));
        let chart = svg::lanes(&format!("{} assignment of job {job}", p.name), &rows, t0, t1);
        page.chart(&p.name, &format!("assignment-{}", super::esc::file_safe(&job)), chart);
        page.body.push_str(&table);
    }
    if assigns.len() > 8 {
        let _ = write!(page.body, "<p class=\"note\">{} more jobs not drawn.</p>", assigns.len() - 8);
    }
}

pub fn jobs(page: &mut Page, p: &Pass) {
    page.h3(&p.name, "jobs", "Jobs");
    let Some(Value::Array(phases)) = read_json(&p.file(layout::JOB_PHASES)) else {
        return missing(page, p, layout::JOB_PHASES);
    };
    let mut totals: HashMap<String, f64> = HashMap::new();
    let mut per_job: Vec<(String, Vec<Item>)> = Vec::new();
    let (mut t0, mut t1) = (f64::MAX, f64::MIN);
    for ph in &phases {
        let (Some(s), Some(e)) = (ph["started_us"].as_f64(), ph["ended_us"].as_f64().or(ph["started_us"].as_f64())) else { continue };
        let phase = ph["phase"].as_str().unwrap_or("?").to_string();
        let job = ph["job"].as_str().unwrap_or("?").to_string();
        *totals.entry(phase.clone()).or_default() += e - s;
        t0 = t0.min(s);
        t1 = t1.max(e);
        let item = Item { start: s, end: e, label: phase.clone(), title: format!("job {job}: {phase} took {}", ms(e - s)) };
        match per_job.iter_mut().find(|(j, _)| *j == job) {
            Some((_, v)) => v.push(item),
            None => per_job.push((job, vec![item])),
        }
    }
    if per_job.is_empty() {
        page.body.push_str("<p class=\"missing\">job_phases.json holds no phases.</p>");
        return;
    }
    let mut rows: Vec<(String, f64, String)> = totals.into_iter().map(|(k, v)| (k.clone(), v, format!("{k}: {} over all jobs", ms(v)))).collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    page.chart(&p.name, "job-phase-totals", svg::hbars(&format!("{} job phase totals", p.name), &rows, &|v| ms(v)));
    per_job.truncate(50);
    page.chart(&p.name, "job-phases", svg::lanes(&format!("{} job phases", p.name), &per_job, t0, t1));
}

/// Lanes, a flame graph by nesting and totals.
pub fn spans(page: &mut Page, p: &Pass) {
    page.h3(&p.name, "spans", "Spans");
    let Some((t0, t1)) = p.extent() else {
        let _ = write!(page.body, "<p class=\"missing\">No spans: <code>{}/trace/*.jsonl</code> is missing or empty.</p>", esc(&p.name));
        return;
    };
    // Timeline: root spans per process, merged where narrower than a pixel.
    let px_us = (t1 - t0) / 880.0;
    let mut rows: Vec<(String, Vec<Item>)> = Vec::new();
    let mut merged_total = 0usize;
    for (si, st) in p.data.streams.iter().enumerate() {
        let off = p.align.offset_for(st) as f64;
        let ids: std::collections::HashSet<u64> = st.spans.iter().filter_map(|s| s.id).collect();
        let mut roots: Vec<(f64, f64, &str)> = st
            .spans
            .iter()
            .filter(|s| s.parent.is_none_or(|pa| !ids.contains(&pa)))
            .map(|s| (s.ts_us as f64 + off, s.end_us() as f64 + off, st.name(s)))
            .collect();
        roots.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.total_cmp(&b.1)).then_with(|| a.2.cmp(b.2)));
        let mut items: Vec<Item> = Vec::new();
        let mut group: Vec<(f64, f64, &str)> = Vec::new();
        let flush = |group: &mut Vec<(f64, f64, &str)>, items: &mut Vec<Item>, merged: &mut usize| {
            if group.is_empty() {
                return;
            }
            let s = group[0].0;
            let e = group.iter().map(|g| g.1).fold(s, f64::max);
            if group.len() == 1 {
                let g = group[0];
                items.push(Item {
                    start: g.0,
                    end: g.1,
                    label: g.2.to_string(),
                    title: format!("{}: at +{}, took {}", g.2, ms(g.0 - t0), ms(g.1 - g.0)),
                });
            } else {
                let mut counts: HashMap<&str, usize> = HashMap::new();
                for g in group.iter() {
                    *counts.entry(g.2).or_default() += 1;
                }
                let mut c: Vec<(&str, usize)> = counts.into_iter().collect();
                c.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
                let names: Vec<String> = c.iter().take(5).map(|(n, k)| format!("{n} ×{k}")).collect();
                *merged += group.len();
                items.push(Item {
                    start: s,
                    end: e,
                    label: c[0].0.to_string(),
                    title: format!("{} spans merged (narrower than a pixel): {}; +{}..+{}", group.len(), names.join(", "), ms(s - t0), ms(e - t0)),
                });
            }
            group.clear();
        };
        for r in roots {
            let joins = group.last().is_some_and(|g| r.0 - g.1 < px_us && (r.1 - r.0) < px_us && (g.1 - g.0) < px_us);
            if !joins {
                flush(&mut group, &mut items, &mut merged_total);
            }
            group.push(r);
        }
        flush(&mut group, &mut items, &mut merged_total);
        let label = format!("{} {}{}", st.process, st.pid, st.host.as_deref().map(|h| format!(" @{h}")).unwrap_or_default());
        rows.push((label, items));
        let _ = si;
    }
    rows.sort_by_key(|(l, _)| match l.split(' ').next() {
        Some("server") => 0,
        Some("worker") => 1,
        Some("eval") => 2,
        _ => 3,
    });
    page.chart(&p.name, "span-timeline", svg::lanes(&format!("{} spans per process (root spans)", p.name), &rows, t0, t1));
    if merged_total > 0 {
        let _ = write!(page.body, "<p class=\"note\">{merged_total} root spans narrower than a pixel were merged into shared bars; each bar's title says what it holds.</p>");
    }
    // Flame graph folded by nesting: self time of each path of span names.
    let mut folded: HashMap<Vec<String>, f64> = HashMap::new();
    for st in &p.data.streams {
        let by_id: HashMap<u64, usize> = st.spans.iter().enumerate().filter_map(|(i, s)| s.id.map(|id| (id, i))).collect();
        let mut child_sum = vec![0i64; st.spans.len()];
        for s in &st.spans {
            if let Some(&pi) = s.parent.and_then(|pa| by_id.get(&pa)) {
                child_sum[pi] += s.dur_us;
            }
        }
        let mut path_cache: HashMap<usize, Vec<u32>> = HashMap::new();
        for (i, s) in st.spans.iter().enumerate() {
            let path = path_of(st, i, &by_id, &mut path_cache);
            let mut frames = vec![st.process.clone()];
            frames.extend(path.iter().map(|&n| st.names[n as usize].clone()));
            *folded.entry(frames).or_default() += (s.dur_us - child_sum[i]).max(0) as f64;
        }
    }
    let mut stacks: Vec<(Vec<String>, f64)> = folded.into_iter().collect();
    // In path order, so sums and siblings come out the same on every render.
    stacks.sort_by(|a, b| a.0.cmp(&b.0));
    let (flame, merged) = svg::flame(&format!("{} span flame graph (self time, folded by nesting)", p.name), &stacks, &|v| ms(v));
    page.chart(&p.name, "span-flame", flame);
    if merged > 0 {
        let _ = write!(
            page.body,
            "<p class=\"note\">{merged} nesting paths narrower than half a pixel are not drawn; their time is inside their parents' bars.</p>"
        );
    }
    let stats = span_stats(&p.data.streams);
    let shown: Vec<(String, f64, String)> = stats
        .iter()
        .take(40)
        .map(|s| {
            (
                format!("{} ({})", s.name, s.process),
                s.total_us as f64,
                format!(
                    "{} {}: {} spans, total {}, mean {}, p50 {}, p95 {}, max {}",
                    s.process,
                    s.name,
                    s.count,
                    ms(s.total_us as f64),
                    ms(s.mean_us as f64),
                    ms(s.p50_us as f64),
                    ms(s.p95_us as f64),
                    ms(s.max_us as f64)
                ),
            )
        })
        .collect();
    page.chart(&p.name, "span-totals", svg::hbars(&format!("{} span totals", p.name), &shown, &|v| ms(v)));
    if stats.len() > 40 {
        let _ = write!(page.body, "<p class=\"note\">{} more span names (smaller totals) are in summary.json.</p>", stats.len() - 40);
    }
}

fn path_of(st: &evalbench_bundle::Stream, i: usize, by_id: &HashMap<u64, usize>, cache: &mut HashMap<usize, Vec<u32>>) -> Vec<u32> {
    if let Some(p) = cache.get(&i) {
        return p.clone();
    }
    // Iterative walk up, guarding against cycles in hostile files.
    let mut chain = vec![i];
    let mut cur = i;
    while let Some(&pi) = st.spans[cur].parent.and_then(|pa| by_id.get(&pa)) {
        if chain.len() > 256 || chain.contains(&pi) {
            break;
        }
        if cache.contains_key(&pi) {
            break;
        }
        chain.push(pi);
        cur = pi;
    }
    let top = *chain.last().expect("non-empty");
    let mut base: Vec<u32> = match st.spans[top].parent.and_then(|pa| by_id.get(&pa)).and_then(|pi| cache.get(pi)) {
        Some(p) => p.clone(),
        None => Vec::new(),
    };
    for &k in chain.iter().rev() {
        base.push(st.spans[k].name);
        cache.insert(k, base.clone());
    }
    base
}

pub fn database(page: &mut Page, p: &Pass) {
    page.h3(&p.name, "database", "Database");
    if p.clean {
        match evalbench_decode::stats::statements(&p.file(layout::PG_STAT_STATEMENTS)) {
            Ok(rows) => {
                let mut bars = Vec::new();
                let mut table = String::from(
                    "<table class=\"sql\"><tr><th>total</th><th>calls</th><th>mean</th><th>planning</th><th>rows</th><th>statement</th></tr>",
                );
                for r in rows.iter().take(25) {
                    let plan = r.total_plan_time.unwrap_or(0.0);
                    bars.push((
                        r.query.clone(),
                        r.total_exec_time * 1000.0,
                        format!("{}\n{} calls, {:.3} ms executing, {:.3} ms planning", r.query, r.calls, r.total_exec_time, plan),
                    ));
                    let _ = write!(
                        table,
                        "<tr><td class=\"n\">{:.3} ms</td><td class=\"n\">{}</td><td class=\"n\">{:.3} ms</td><td class=\"n\">{plan:.3} ms</td><td class=\"n\">{}</td><td><code>{}</code></td></tr>",
                        r.total_exec_time,
                        r.calls,
                        r.mean_exec_time,
                        r.rows,
                        esc(&r.query)
                    );
                }
                table.push_str("</table>");
                page.body.push_str("<h4>pg_stat_statements (the CI role, by total time)</h4>");
                page.chart(&p.name, "pg-statements", svg::hbars(&format!("{} statements by total execution time", p.name), &bars, &|v| ms(v)));
                page.body.push_str(&table);
                if rows.len() > 25 {
                    let _ = write!(page.body, "<p class=\"note\">{} more statements in pg/pg_stat_statements.json.</p>", rows.len() - 25);
                }
            }
            Err(_) if !p.file(layout::PG_STAT_STATEMENTS).exists() => missing(page, p, layout::PG_STAT_STATEMENTS),
            Err(e) => {
                let _ = write!(page.body, "<p class=\"missing\">{}</p>", esc(&e));
            }
        }
        match read_json(&p.file(layout::WAIT_SAMPLES)) {
            Some(v) => {
                let samples = v["samples"].as_array().cloned().unwrap_or_default();
                let cols: Vec<(f64, Vec<(String, f64)>)> = samples
                    .iter()
                    .filter_map(|s| {
                        let t = s["ts_us"].as_f64()?;
                        let mut m: HashMap<String, f64> = HashMap::new();
                        for b in s["backends"].as_array().into_iter().flatten() {
                            let k = match (b["wait_event_type"].as_str(), b["wait_event"].as_str()) {
                                (Some(t), Some(e)) => format!("{t}:{e}"),
                                _ => b["state"].as_str().unwrap_or("?").to_string(),
                            };
                            *m.entry(k).or_default() += 1.0;
                        }
                        let mut ks: Vec<(String, f64)> = m.into_iter().collect();
                        ks.sort_by(|a, b| a.0.cmp(&b.0));
                        Some((t, ks))
                    })
                    .collect();
                page.body.push_str("<h4>Busy backends of the CI role, every 100 ms (state or wait event)</h4>");
                if let (Some(a), Some(b)) = (cols.first().map(|c| c.0), cols.last().map(|c| c.0)) {
                    page.chart(&p.name, "pg-wait-samples", svg::stacked(&format!("{} wait samples", p.name), &cols, a, b + 1.0, "backends"));
                } else {
                    page.body.push_str("<p class=\"note\">No samples.</p>");
                }
            }
            None => missing(page, p, layout::WAIT_SAMPLES),
        }
        if p.file(layout::PG_PCAP).exists() {
            pg_latencies(page, p);
        } else {
            missing(page, p, layout::PG_PCAP);
        }
    } else if p.file(layout::AUTO_EXPLAIN).exists() {
        auto_explain(page, p);
    } else {
        missing(page, p, layout::AUTO_EXPLAIN);
    }
}

/// A decoder's result, or its error shown where the section would be.
fn decoded<T>(page: &mut Page, r: Result<T, String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            let _ = write!(page.body, "<p class=\"missing\">{}</p>", esc(&e));
            None
        }
    }
}

fn port(p: &Pass, which: &str) -> Option<u16> {
    p.run["capture_ports"][which].as_u64().map(|v| v as u16)
}

fn pg_latencies(page: &mut Page, p: &Pass) {
    let mut agg: HashMap<String, (Vec<i64>, u64)> = HashMap::new();
    let r = evalbench_decode::pg::decode_file(&p.file(layout::PG_PCAP), port(p, "pg"), &mut |x| {
        let e = agg.entry(evalbench_decode::normalize::normalize_sql(&x.sql)).or_default();
        e.0.push(x.latency_us);
        if x.error.is_some() {
            e.1 += 1;
        }
    });
    let Some(s) = decoded(page, r) else { return };
    let _ = write!(
        page.body,
        "<h4>Statement latencies from pg.pcap (first request byte to completion)</h4><p>{} statements on {} connections, {} errors, {} partial (began before the capture), {} unanswered, {} gaps.</p>",
        s.statements, s.connections, s.errors, s.partial, s.unanswered, s.gaps
    );
    let mut rows: Vec<(String, Vec<i64>, u64)> = agg.into_iter().map(|(k, (v, e))| (k, v, e)).collect();
    rows.sort_by(|a, b| b.1.iter().sum::<i64>().cmp(&a.1.iter().sum::<i64>()).then_with(|| a.0.cmp(&b.0)));
    let mut bars = Vec::new();
    let mut table = String::from(
        "<table class=\"sql\"><tr><th>total</th><th>count</th><th>p50</th><th>p95</th><th>max</th><th>errors</th><th>statement</th></tr>",
    );
    for (sql, mut v, errors) in rows.into_iter().take(25) {
        v.sort_unstable();
        let n = v.len();
        let total: i64 = v.iter().sum();
        let at = |q: f64| evalbench_analyze::stats::percentile(&v, q) as f64;
        bars.push((
            sql.clone(),
            total as f64,
            format!("{sql}\n{n} executions, total {}, p50 {}, p95 {}, max {}", ms(total as f64), ms(at(0.5)), ms(at(0.95)), ms(at(1.0))),
        ));
        let _ = write!(
            table,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{errors}</td><td><code>{}</code></td></tr>",
            esc(&ms(total as f64)),
            esc(&ms(at(0.5))),
            esc(&ms(at(0.95))),
            esc(&ms(at(1.0))),
            esc(&sql)
        );
    }
    table.push_str("</table>");
    if !bars.is_empty() {
        page.chart(&p.name, "pg-latencies", svg::hbars(&format!("{} statements by total latency (pg.pcap)", p.name), &bars, &|v| ms(v)));
    }
    page.body.push_str(&table);
}

fn auto_explain(page: &mut Page, p: &Pass) {
    let r = evalbench_decode::explain::decode(&p.file(layout::AUTO_EXPLAIN), &mut |_| {});
    let Some(s) = decoded(page, r) else { return };
    let _ = write!(page.body, "<h4>auto_explain: statements by total plan time</h4><p>{} plans, {} malformed (ANALYZE on, per-node timing off: the timings are the statements', not the nodes').</p>", s.plans, s.malformed);
    let bars: Vec<(String, f64, String)> = s
        .by_statement
        .iter()
        .take(25)
        .map(|b| {
            (
                b.statement.clone(),
                b.total_ms * 1000.0,
                format!("{}\n{} plans, total {:.3} ms, slowest {:.3} ms", b.statement, b.count, b.total_ms, b.max_ms),
            )
        })
        .collect();
    if !bars.is_empty() {
        page.chart(&p.name, "auto-explain", svg::hbars(&format!("{} auto_explain statements by total time", p.name), &bars, &|v| ms(v)));
    }
    page.body.push_str("<h4>Slowest plans</h4>");
    for plan in s.slowest.iter().take(5) {
        let _ = write!(
            page.body,
            "<details><summary>{:.3} ms: <code>{}</code></summary><pre>{}</pre></details>",
            plan.duration_ms,
            esc(&plan.query.chars().take(200).collect::<String>()),
            esc(&plan.plan)
        );
    }
}

pub fn network(page: &mut Page, p: &Pass) {
    if !p.clean {
        return;
    }
    page.h3(&p.name, "network", "Network");
    if !p.file(layout::PROTO_PCAP).exists() {
        return missing(page, p, layout::PROTO_PCAP);
    }
    let Some(s) = decoded(page, evalbench_decode::ws::decode_file(&p.file(layout::PROTO_PCAP), port(p, "proto"), &mut |_| {})) else { return };
    let _ = write!(
        page.body,
        "<p>/proto: {} connection(s), {} frames from the worker, {} from the server, {} control frames, {} gaps.</p>",
        s.connections, s.frames_from_worker, s.frames_from_server, s.control_frames, s.gaps
    );
    page.body.push_str("<table><tr><th></th><th>count</th><th>min</th><th>p50</th><th>p95</th><th>max</th></tr>");
    let rows = [
        ("worker message size", &s.message_bytes_from_worker, false),
        ("server message size", &s.message_bytes_from_server, false),
        ("worker message, then server's", &s.round_trip_worker_to_server_us, true),
        ("server message, then worker's", &s.round_trip_server_to_worker_us, true),
    ];
    let mut bars = Vec::new();
    for (label, d, time) in rows {
        let f = |v: i64| if time { ms(v as f64) } else { format!("{v} B") };
        let _ = write!(page.body, "<tr><td>{label}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", d.count, esc(&f(d.min)), esc(&f(d.p50)), esc(&f(d.p95)), esc(&f(d.max)));
        if time {
            for (q, v) in [("p50", d.p50), ("p95", d.p95), ("max", d.max)] {
                bars.push((format!("{label} {q}"), v as f64, format!("{label}: {q} {} over {} round trips", ms(v as f64), d.count)));
            }
        }
    }
    page.body.push_str("</table>");
    page.chart(&p.name, "proto-round-trips", svg::hbars(&format!("{} /proto round trips", p.name), &bars, &|v| ms(v)));
}

pub fn cpu(page: &mut Page, p: &Pass) {
    if p.clean {
        return;
    }
    page.h3(&p.name, "cpu", "CPU");
    for (folded, svgf, what) in
        [("flame.folded", "flame.svg", "server host"), ("worker/flame.folded", "worker/flame.svg", "worker host, eval subprocess included")]
    {
        let Ok(text) = std::fs::read_to_string(p.file(folded)) else {
            missing(page, p, svgf);
            continue;
        };
        let stacks: Vec<(Vec<String>, f64)> = text
            .lines()
            .filter_map(|l| {
                let (stack, n) = l.rsplit_once(' ')?;
                Some((stack.split(';').map(String::from).collect(), n.trim().parse().ok()?))
            })
            .collect();
        let samples: f64 = stacks.iter().map(|s| s.1).sum();
        let _ = write!(page.body, "<h4>perf, {} ({samples:.0} samples at 999 Hz)</h4>", esc(what));
        let (chart, _) = svg::flame(&format!("{} CPU, {what}", p.name), &stacks, &|v| format!("{v:.0} samples"));
        page.chart(&p.name, &format!("cpu-{}", if folded.starts_with("worker") { "worker" } else { "server" }), chart);
        if p.file(svgf).exists() {
            page.copies.push((format!("{}/{svgf}", super::esc::file_safe(&p.name)), p.file(svgf)));
            let _ = write!(
                page.body,
                "<p><a href=\"{}\">Interactive flame graph (inferno)</a></p>",
                esc(&href(&format!("{}/{svgf}", super::esc::file_safe(&p.name))))
            );
        }
    }
}
