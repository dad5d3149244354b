//! PostgreSQL: in a clean pass pg_stat_statements, wait samples and the
//! latencies on the wire; in an instrumented pass the auto_explain plans.

use std::fmt::Write;

use evalbench_analyze::view::{Database, PassView};

use super::super::esc::esc;
use super::super::svg::{self, ms};
use super::super::Page;
use super::ready;

/// Statements drawn and listed; the rest stay in the capture files.
const STATEMENTS_SHOWN: usize = 25;

pub fn database(page: &mut Page, p: &PassView) {
    page.h3(&p.name, "database", "Database");
    match &p.database {
        Database::Clean { statements, wait_samples, latencies } => {
            if let Some(rows) = ready(page, p, statements) {
                pg_stat_statements(page, p, rows);
            }
            if let Some(cols) = ready(page, p, wait_samples) {
                page.body.push_str("<h4>Busy backends of the CI role, every 100 ms (state or wait event)</h4>");
                if let (Some(a), Some(b)) = (cols.first().map(|c| c.0), cols.last().map(|c| c.0)) {
                    page.chart(
                        &p.name,
                        "pg-wait-samples",
                        svg::stacked(&format!("{} wait samples", p.name), cols, a, b + 1.0, "backends"),
                    );
                } else {
                    page.body.push_str("<p class=\"note\">No samples.</p>");
                }
            }
            if let Some((s, rows)) = ready(page, p, latencies) {
                pg_latencies(page, p, s, rows);
            }
        }
        Database::Instrumented { auto_explain: ae } => {
            if let Some(s) = ready(page, p, ae) {
                auto_explain(page, p, s);
            }
        }
    }
}

fn pg_stat_statements(page: &mut Page, p: &PassView, rows: &[evalbench_analyze::view::records::Statement]) {
    let mut bars = Vec::new();
    let mut table = String::from(
        "<table class=\"sql\"><tr><th>total</th><th>calls</th><th>mean</th><th>planning</th><th>rows</th><th>\
            statement</th></tr>",
    );
    for r in rows.iter().take(STATEMENTS_SHOWN) {
        // Gradient's file has no planning time: "not recorded", never a 0.
        let plan = r.total_plan_time.map_or_else(|| "not recorded".to_string(), |t| format!("{t:.3} ms"));
        bars.push((
            r.query.clone(),
            r.total_exec_time * 1000.0,
            format!("{}\n{} calls, {:.3} ms executing, planning {plan}", r.query, r.calls, r.total_exec_time),
        ));
        let _ = write!(
            table,
            "<tr><td class=\"n\">{:.3} ms</td><td class=\"n\">{}</td><td class=\"n\">{:.3} ms</td><td \
                class=\"n\">{plan}</td><td class=\"n\">{}</td><td><code>{}</code></td></tr>",
            r.total_exec_time,
            r.calls,
            r.mean_exec_time,
            r.rows,
            esc(&r.query)
        );
    }
    table.push_str("</table>");
    page.body.push_str("<h4>pg_stat_statements (the CI role, by total time)</h4>");
    page.chart(
        &p.name,
        "pg-statements",
        svg::hbars(&format!("{} statements by total execution time", p.name), &bars, &|v| ms(v)),
    );
    page.body.push_str(&table);
    if rows.len() > STATEMENTS_SHOWN {
        let _ = write!(
            page.body,
            "<p class=\"note\">{} more statements in pg/pg_stat_statements.json.</p>",
            rows.len() - STATEMENTS_SHOWN
        );
    }
}

fn pg_latencies(
    page: &mut Page,
    p: &PassView,
    s: &evalbench_analyze::view::records::PgSummary,
    rows: &[evalbench_analyze::StatementLatency],
) {
    let _ = write!(
        page.body,
        "<h4>Statement latencies from pg.pcap (first request byte to completion)</h4><p>{} statements on {} \
            connections, {} errors, {} uncertain in text or start (on a connection the capture joined after it began, \
            where statements prepared before it show as such, or after a gap), {} unanswered, {} gaps.</p>",
        s.statements, s.connections, s.errors, s.partial, s.unanswered, s.gaps
    );
    let mut bars = Vec::new();
    let mut table = String::from(
        "<table class=\"sql\"><tr><th>total</th><th>count</th><th>p50</th><th>p95</th><th>max</th><th>errors</th><th>\
            statement</th></tr>",
    );
    for r in rows.iter().take(STATEMENTS_SHOWN) {
        let (sql, n, errors) = (&r.sql, r.count, r.errors);
        let (total, p50, p95, max) = (r.total_us as f64, r.p50_us as f64, r.p95_us as f64, r.max_us as f64);
        bars.push((
            sql.clone(),
            total,
            format!("{sql}\n{n} executions, total {}, p50 {}, p95 {}, max {}", ms(total), ms(p50), ms(p95), ms(max)),
        ));
        let _ = write!(
            table,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{n}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td \
                class=\"n\">{}</td><td class=\"n\">{errors}</td><td><code>{}</code></td></tr>",
            esc(&ms(total)),
            esc(&ms(p50)),
            esc(&ms(p95)),
            esc(&ms(max)),
            esc(sql)
        );
    }
    table.push_str("</table>");
    if !bars.is_empty() {
        page.chart(
            &p.name,
            "pg-latencies",
            svg::hbars(&format!("{} statements by total latency (pg.pcap)", p.name), &bars, &|v| ms(v)),
        );
    }
    page.body.push_str(&table);
}

fn auto_explain(page: &mut Page, p: &PassView, s: &evalbench_analyze::view::records::ExplainSummary) {
    let _ = write!(
        page.body,
        "<h4>auto_explain: statements by total plan time</h4><p>{} plans, {} malformed (ANALYZE on, per-node timing \
            off: the timings are the statements', not the nodes').</p>",
        s.plans, s.malformed
    );
    let bars: Vec<(String, f64, String)> = s
        .by_statement
        .iter()
        .take(STATEMENTS_SHOWN)
        .map(|b| {
            (
                b.statement.clone(),
                b.total_ms * 1000.0,
                format!(
                    "{}\n{}, total {:.3} ms, slowest {:.3} ms\n{}",
                    b.statement,
                    crate::output::count(b.count as usize, "run"),
                    b.total_ms,
                    b.max_ms,
                    b.plans
                        .iter()
                        .map(|q| format!("plan {}: {}", q.fingerprint, crate::output::count(q.count as usize, "run")))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            )
        })
        .collect();
    if !bars.is_empty() {
        page.chart(
            &p.name,
            "auto-explain",
            svg::hbars(&format!("{} auto_explain statements by total time", p.name), &bars, &|v| ms(v)),
        );
    }
    // Statements that ran with more than one plan: which plan a run gets depends on its parameters.
    let several: Vec<_> = s.by_statement.iter().filter(|b| b.plans.len() > 1).collect();
    if !several.is_empty() {
        page.body.push_str(
            "<h4>Statements with more than one plan</h4><table><tr><th>statement</th><th>plans: runs each</th></tr>",
        );
        for b in several.iter().take(STATEMENTS_SHOWN) {
            let plans: Vec<String> = b
                .plans
                .iter()
                .map(|q| {
                    format!(
                        "{} ({}): {}",
                        q.fingerprint,
                        crate::output::count(q.count as usize, "run"),
                        q.nodes.iter().map(|n| n.label()).collect::<Vec<_>>().join(" › ")
                    )
                })
                .collect();
            let _ = write!(
                page.body,
                "<tr><td><code>{}</code></td><td><small>{}</small></td></tr>",
                esc(&b.statement),
                esc(&plans.join("\n")).replace('\n', "<br>")
            );
        }
        page.body.push_str("</table>");
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
