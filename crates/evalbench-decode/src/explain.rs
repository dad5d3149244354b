//! auto_explain in a PostgreSQL log (text or JSON plan format): each plan
//! with its statement, duration and plan tree; aggregated by statement.

use crate::error::DecodeError;
use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::normalize::normalize_sql;

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The log line's timestamp prefix, as written.
    pub at: String,
    pub line: u64,
    pub duration_ms: f64,
    pub planning_ms: Option<f64>,
    pub query: String,
    pub format: &'static str,
    pub plan: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatementPlans {
    pub statement: String,
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ExplainSummary {
    pub plans: u64,
    pub malformed: u64,
    pub by_statement: Vec<StatementPlans>,
    pub slowest: Vec<Plan>,
}

const MAX_PLAN: usize = 256 * 1024;

fn finish(at: String, line: u64, duration: f64, body: &[String], out: &mut dyn FnMut(Plan), malformed: &mut u64) {
    let text: String = body.join("\n");
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(v) => out(Plan {
                at,
                line,
                duration_ms: duration,
                planning_ms: v["Planning Time"].as_f64(),
                query: v["Query Text"].as_str().unwrap_or("").to_string(),
                format: "json",
                plan: serde_json::to_string_pretty(&v["Plan"]).unwrap_or_default(),
            }),
            Err(_) => *malformed += 1,
        }
        return;
    }
    let mut query = String::new();
    let mut plan = Vec::new();
    let mut in_query = false;
    let mut planning = None;
    for l in body {
        if let Some(q) = l.strip_prefix("Query Text: ") {
            query = q.to_string();
            in_query = true;
        } else if let Some(p) = l.strip_prefix("Planning Time: ") {
            planning = p.trim_end_matches(" ms").parse().ok();
        } else if in_query && !(l.contains("(cost=") || l.contains("(actual") || l.trim_start().starts_with("->")) {
            query.push('\n');
            query.push_str(l);
        } else {
            in_query = false;
            plan.push(l.as_str());
        }
    }
    if query.is_empty() && plan.is_empty() {
        *malformed += 1;
        return;
    }
    out(Plan { at, line, duration_ms: duration, planning_ms: planning, query, format: "text", plan: plan.join("\n") });
}

/// Reads a log; every plan goes to `each`.
pub fn decode(path: &Path, each: &mut dyn FnMut(&Plan)) -> Result<ExplainSummary, DecodeError> {
    let f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    decode_from(std::io::BufReader::new(f), &path.display().to_string(), each)
}

/// Reads a log from any reader; `name` is what errors call it.
pub fn decode_from(r: impl std::io::BufRead, name: &str, each: &mut dyn FnMut(&Plan)) -> Result<ExplainSummary, DecodeError> {
    let mut s = ExplainSummary::default();
    let mut cur: Option<(String, u64, f64, Vec<String>, usize)> = None;
    let mut plans: Vec<Plan> = Vec::new();
    let mut malformed = 0u64;
    let mut push = |p: Plan| plans.push(p);
    for (n, line) in r.split(b'\n').enumerate() {
        let line = line.map_err(|source| DecodeError::Line { name: name.into(), line: n as u64 + 1, source })?;
        let l = String::from_utf8_lossy(&line);
        if let Some(rest) = l.strip_prefix('\t') {
            if let Some((_, _, _, body, size)) = &mut cur {
                if *size < MAX_PLAN {
                    *size += rest.len();
                    body.push(rest.to_string());
                }
            }
            continue;
        }
        if let Some((at, ln, d, body, _)) = cur.take() {
            finish(at, ln, d, &body, &mut push, &mut malformed);
        }
        if let Some(i) = l.find("duration: ") {
            let tail = &l[i + 10..];
            if let Some((num, after)) = tail.split_once(" ms") {
                if after.trim_start().starts_with("plan:") {
                    match num.trim().parse::<f64>() {
                        Ok(d) => {
                            let at = l[..l.find(" [").unwrap_or(0)].to_string();
                            let first = after.trim_start().trim_start_matches("plan:").trim().to_string();
                            let body = if first.is_empty() { Vec::new() } else { vec![first] };
                            cur = Some((at, n as u64 + 1, d, body, 0));
                        }
                        Err(_) => malformed += 1,
                    }
                }
            }
        }
    }
    if let Some((at, ln, d, body, _)) = cur.take() {
        finish(at, ln, d, &body, &mut push, &mut malformed);
    }
    let mut agg: HashMap<String, StatementPlans> = HashMap::new();
    for p in &plans {
        each(p);
        let key = normalize_sql(&p.query);
        let e = agg.entry(key.clone()).or_insert(StatementPlans { statement: key, count: 0, total_ms: 0.0, max_ms: 0.0 });
        e.count += 1;
        e.total_ms += p.duration_ms;
        e.max_ms = e.max_ms.max(p.duration_ms);
    }
    s.plans = plans.len() as u64;
    s.malformed = malformed;
    s.by_statement = agg.into_values().collect();
    s.by_statement.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then_with(|| a.statement.cmp(&b.statement)));
    plans.sort_by(|a, b| b.duration_ms.total_cmp(&a.duration_ms));
    plans.truncate(10);
    s.slowest = plans;
    Ok(s)
}
