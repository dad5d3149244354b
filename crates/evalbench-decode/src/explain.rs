//! auto_explain in a PostgreSQL log (text or JSON plan format): each plan
//! with its statement, duration and plan tree; aggregated by statement, and
//! per statement the plans seen ([`crate::plan`]'s fingerprints) with their
//! counts. Read as a stream: memory grows with the distinct statements and
//! plans, not with the log.

use crate::error::DecodeError;
use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::normalize::normalize_sql;
use crate::plan::{Node, Tree};

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
    /// The plan's fingerprint (`plan::Tree::fingerprint`); None when no node could be read.
    pub fingerprint: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StatementPlans {
    pub statement: String,
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
    /// The plans this statement ran with, the most frequent first (ties: by fingerprint).
    pub plans: Vec<PlanSeen>,
}

/// One plan of a statement: how often it ran, and its nodes with the actual
/// rows per loop and loops per run over those runs, as EXPLAIN shows one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanSeen {
    pub fingerprint: String,
    pub count: u64,
    pub nodes: Vec<Node>,
    /// Per node, what the shown averages are made from: kept as sums so a
    /// plan seen again (a repeat's log) is added in as one log would add it.
    #[serde(skip)]
    sums: Vec<NodeSums>,
}

/// A node's actuals added up over runs: Σ rows × loops, Σ loops, runs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct NodeSums {
    rows_x_loops: f64,
    loops: f64,
    runs: u64,
}

impl PlanSeen {
    /// A plan that ran `count` times with these nodes' actuals each time.
    pub fn new(fingerprint: String, count: u64, nodes: Vec<Node>) -> PlanSeen {
        let c = count as f64;
        let sums = nodes
            .iter()
            .map(|n| match (n.rows, n.loops) {
                (Some(r), Some(l)) => NodeSums { rows_x_loops: r * l * c, loops: l * c, runs: count },
                _ => NodeSums::default(),
            })
            .collect();
        PlanSeen { fingerprint, count, nodes, sums }
    }

    /// The same plan seen in another log (a repeat of the pass) added in:
    /// counts and sums added, then rows per loop = Σ rows × loops / Σ loops
    /// and loops per run = Σ loops / runs, as within one log. (Averaging
    /// the averages by runs made (10 rows, 1 loop) and (0 rows, 9 loops)
    /// 1.0 rows in one log and 5.0 in two.)
    pub fn absorb(&mut self, other: &PlanSeen) {
        for (x, y) in self.sums.iter_mut().zip(&other.sums) {
            *x = NodeSums {
                rows_x_loops: x.rows_x_loops + y.rows_x_loops,
                loops: x.loops + y.loops,
                runs: x.runs + y.runs,
            };
        }
        self.count += other.count;
        show(&mut self.nodes, &self.sums);
    }
}

/// Rows per loop and loops per run, from the sums, into the nodes shown.
fn show(nodes: &mut [Node], sums: &[NodeSums]) {
    for (n, s) in nodes.iter_mut().zip(sums) {
        if s.runs > 0 {
            n.rows = Some(if s.loops > 0.0 { s.rows_x_loops / s.loops } else { 0.0 });
            n.loops = Some(s.loops / s.runs as f64);
        }
    }
}

/// A statement's plans, the most frequent first (ties: by fingerprint, so
/// the order is the same on every run).
pub fn most_frequent_first(plans: &mut [PlanSeen]) {
    plans.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.fingerprint.cmp(&b.fingerprint)));
}

/// A plan's runs added up node by node (one fingerprint, so one shape).
struct Seen {
    count: u64,
    tree: Tree,
    /// Per node: rows × loops, loops, and the runs that had actuals.
    sums: Vec<(f64, f64, u64)>,
}

impl Seen {
    /// A plan's first run.
    fn first(tree: Tree) -> Seen {
        let mut s = Seen { count: 0, sums: vec![(0.0, 0.0, 0); tree.nodes.len()], tree: Tree::default() };
        s.add(&tree);
        Seen { tree, ..s }
    }
    fn add(&mut self, t: &Tree) {
        self.count += 1;
        for (s, n) in self.sums.iter_mut().zip(&t.nodes) {
            if let (Some(r), Some(l)) = (n.rows, n.loops) {
                *s = (s.0 + r * l, s.1 + l, s.2 + 1);
            }
        }
    }
    fn finish(self, fingerprint: String) -> PlanSeen {
        let mut nodes = self.tree.nodes;
        let sums: Vec<NodeSums> =
            self.sums.into_iter().map(|(rows_x_loops, loops, runs)| NodeSums { rows_x_loops, loops, runs }).collect();
        show(&mut nodes, &sums);
        PlanSeen { fingerprint, count: self.count, nodes, sums }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ExplainSummary {
    pub plans: u64,
    pub malformed: u64,
    pub by_statement: Vec<StatementPlans>,
    pub slowest: Vec<Plan>,
}

const MAX_PLAN: usize = 256 * 1024;

fn finish(
    at: String,
    line: u64,
    duration: f64,
    body: &[String],
    out: &mut dyn FnMut(Plan, Option<Tree>),
    malformed: &mut u64,
) {
    let text: String = body.join("\n");
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(v) => {
                let tree = Tree::from_json(&v["Plan"]);
                out(
                    Plan {
                        at,
                        line,
                        duration_ms: duration,
                        planning_ms: v["Planning Time"].as_f64(),
                        query: v["Query Text"].as_str().unwrap_or("").to_string(),
                        format: "json",
                        plan: serde_json::to_string_pretty(&v["Plan"]).unwrap_or_default(),
                        fingerprint: tree.as_ref().map(Tree::fingerprint),
                    },
                    tree,
                )
            }
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
    let tree = Tree::from_text(plan.iter().copied());
    let fingerprint = tree.as_ref().map(Tree::fingerprint);
    out(
        Plan {
            at,
            line,
            duration_ms: duration,
            planning_ms: planning,
            query,
            format: "text",
            plan: plan.join("\n"),
            fingerprint,
        },
        tree,
    );
}

/// Reads a log; every plan goes to `each`.
pub fn decode(path: &Path, each: &mut dyn FnMut(&Plan)) -> Result<ExplainSummary, DecodeError> {
    let f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    decode_from(std::io::BufReader::new(f), &path.display().to_string(), each)
}

/// Reads a log from any reader; `name` is what errors call it.
pub fn decode_from(
    r: impl std::io::BufRead,
    name: &str,
    each: &mut dyn FnMut(&Plan),
) -> Result<ExplainSummary, DecodeError> {
    let mut cur: Option<(String, u64, f64, Vec<String>, usize)> = None;
    let mut book = Book::default();
    let mut malformed = 0u64;
    let mut push = |p: Plan, t: Option<Tree>| {
        each(&p);
        book.add(p, t);
    };
    for (n, line) in r.split(b'\n').enumerate() {
        let line = line.map_err(|source| DecodeError::Line { name: name.into(), line: n as u64 + 1, source })?;
        let whole = String::from_utf8_lossy(&line);
        let l = journal_body(&whole);
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
    Ok(book.summary(malformed))
}

/// A line of the log without journald's (or syslog's) prefix, `Jan 01
/// 00:00:00 host postgres[4100]: `, which Gradient's tail of the server's
/// log carries on every line; other lines as they are.
fn journal_body(l: &str) -> &str {
    let head = &l.as_bytes()[..l.len().min(160)];
    let month = head.len() > 16
        && head[..3].iter().all(u8::is_ascii_alphabetic)
        && head[3] == b' '
        && head[9] == b':'
        && head[12] == b':';
    if !month {
        return l;
    }
    // The first "]: " after a process name and its pid in brackets.
    let Some(at) = l[..head.len()].find("]: ") else { return l };
    let Some(open) = l[..at].rfind('[') else { return l };
    if open + 1 < at && l[open + 1..at].bytes().all(|b| b.is_ascii_digit()) {
        &l[at + 3..]
    } else {
        l
    }
}

/// Slowest plans kept whole.
const SLOWEST: usize = 10;

/// What a log adds up to while it is read.
#[derive(Default)]
struct Book {
    plans: u64,
    statements: HashMap<String, (StatementPlans, HashMap<String, Seen>)>,
    slowest: Vec<Plan>,
}

impl Book {
    fn add(&mut self, p: Plan, tree: Option<Tree>) {
        self.plans += 1;
        let key = normalize_sql(&p.query);
        let (st, seen) = self.statements.entry(key.clone()).or_insert_with(|| {
            (StatementPlans { statement: key, count: 0, total_ms: 0.0, max_ms: 0.0, plans: Vec::new() }, HashMap::new())
        });
        st.count += 1;
        st.total_ms += p.duration_ms;
        st.max_ms = st.max_ms.max(p.duration_ms);
        if let (Some(t), Some(fp)) = (tree, &p.fingerprint) {
            match seen.get_mut(fp) {
                Some(s) => s.add(&t),
                None => {
                    seen.insert(fp.clone(), Seen::first(t));
                }
            }
        }
        if self.slowest.len() < SLOWEST || self.slowest.last().is_some_and(|l| p.duration_ms > l.duration_ms) {
            let at = self.slowest.partition_point(|x| x.duration_ms >= p.duration_ms);
            self.slowest.insert(at, p);
            self.slowest.truncate(SLOWEST);
        }
    }

    fn summary(self, malformed: u64) -> ExplainSummary {
        let mut by_statement: Vec<StatementPlans> = self
            .statements
            .into_values()
            .map(|(mut st, seen)| {
                st.plans = seen.into_iter().map(|(fp, s)| s.finish(fp)).collect();
                most_frequent_first(&mut st.plans);
                st
            })
            .collect();
        by_statement.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then_with(|| a.statement.cmp(&b.statement)));
        ExplainSummary { plans: self.plans, malformed, by_statement, slowest: self.slowest }
    }
}

#[cfg(test)]
mod journal_tests {
    #[test]
    fn journald_s_prefix_is_read_past() {
        let log = "Jan 01 00:00:00 server postgres[4100]: [4100] LOG:  duration: 12.100 ms  plan:\n\
                   Jan 01 00:00:00 server postgres[4100]: \tQuery Text: SELECT 1\n\
                   Jan 01 00:00:00 server postgres[4100]: \tResult  (cost=0.00..0.01 rows=1 width=4) (actual rows=1 \
                   loops=1)\n";
        let s = super::decode_from(log.as_bytes(), "log", &mut |_| {}).unwrap();
        assert_eq!((s.plans, s.malformed), (1, 0));
        assert_eq!(super::journal_body("Jan 01 00:00:00 h x[1]: y"), "y");
        assert_eq!(super::journal_body("2026-01-01 00:00:00 UTC [1] LOG: x"), "2026-01-01 00:00:00 UTC [1] LOG: x");
    }
}
