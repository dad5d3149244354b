//! A plan as a tree of nodes, read from auto_explain's text or JSON format,
//! and its fingerprint: what the planner chose, not what it cost.
//!
//! The fingerprint hashes, node by node in pre-order, the depth, the node's
//! operation (as EXPLAIN's text names it: "Hash Anti Join", "Index Scan
//! Backward", "Partial HashAggregate"), the relation (or function, CTE,
//! subquery alias) and its alias, the index, and the sub-plan a node heads
//! ("InitPlan 1 (returns $0)"). Costs, row counts, timings, conditions and
//! their literals are left out, so the same plan run with other parameters
//! has the same fingerprint, and the text and JSON formats of one plan
//! have the same one (held by unit tests and the `plan_fingerprint` fuzz
//! target). Children keep their order: a join's outer and inner side are
//! its first and second child, so a swapped join order is another plan.

use serde::Serialize;
use serde_json::Value;

/// One node of a plan, in pre-order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// 0 for the top node.
    pub depth: u32,
    /// The operation as EXPLAIN's text format names it.
    pub op: String,
    /// The relation, function, CTE or subquery the node reads or writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The alias, when it differs from the target's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The sub-plan this node heads: "InitPlan 1 (returns $0)", "SubPlan 2", "CTE x".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Actual rows per loop, as EXPLAIN ANALYZE shows them (None without ANALYZE).
    pub rows: Option<f64>,
    pub loops: Option<f64>,
    /// The node's other lines (conditions, sort keys, buffers), as written, for a hover title.
    pub details: Vec<String>,
}

impl Node {
    /// The node as one line of EXPLAIN's text: "Index Scan using i on t a".
    pub fn label(&self) -> String {
        let mut s = self.op.clone();
        if let Some(i) = &self.index {
            s.push_str(if self.target.is_some() { " using " } else { " on " });
            s.push_str(i);
        }
        if let Some(t) = &self.target {
            s.push_str(" on ");
            s.push_str(t);
        }
        if let Some(a) = &self.alias {
            s.push(' ');
            s.push_str(a);
        }
        s
    }

    /// What the fingerprint hashes of this node.
    fn shape(&self) -> String {
        let o = |x: &Option<String>| x.clone().unwrap_or_default();
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            self.depth,
            self.op,
            o(&self.target),
            o(&self.alias),
            o(&self.index),
            o(&self.role)
        )
    }
}

/// A plan's nodes in pre-order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

/// Details kept per node, and characters per detail: a hover title, not a dump.
const MAX_DETAILS: usize = 24;
const MAX_DETAIL_CHARS: usize = 400;
/// Deeper plans are cut here (a hostile log can nest without end; PostgreSQL's do not).
const MAX_DEPTH: u32 = 200;

fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl Tree {
    /// The fingerprint: 16 hex digits of FNV-1a over the nodes' shapes.
    pub fn fingerprint(&self) -> String {
        let text: String = self.nodes.iter().map(Node::shape).collect();
        format!("{:016x}", evalbench_bundle::fnv::hash64(text.as_bytes()))
    }

    /// Reads the plan lines of auto_explain's text format (the lines after
    /// "Query Text", the log's leading tab removed). None when no line looks
    /// like a plan node.
    pub fn from_text<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<Tree> {
        let mut nodes: Vec<Node> = Vec::new();
        // The text column of each open ancestor. A child's arrow stands two
        // columns right of its parent's text, a sub-plan's four (under its
        // "InitPlan 1" line): either way the parent is the nearest open node
        // whose text starts left of the arrow.
        let mut open: Vec<usize> = Vec::new();
        let mut role: Option<String> = None;
        // Past MAX_DEPTH a node and its lines are dropped, as from_json
        // drops them, so both formats of one plan keep the same nodes.
        let mut dropped = false;
        for line in lines {
            let body = line.trim_start();
            let indent = line.len() - body.len();
            let node_text = if nodes.is_empty() {
                if body.is_empty() || is_footer(body) {
                    continue;
                }
                Some((indent, indent, body))
            } else {
                body.strip_prefix("->").map(|rest| {
                    let text = rest.trim_start();
                    (indent, line.len() - text.len(), text)
                })
            };
            match node_text {
                Some((arrow, col, text)) => {
                    while open.last().is_some_and(|&c| c >= arrow) {
                        open.pop();
                    }
                    let depth = open.len() as u32;
                    open.push(col);
                    dropped = depth > MAX_DEPTH;
                    if dropped {
                        role = None;
                        continue;
                    }
                    let mut n = text_node(text, depth);
                    n.role = role.take();
                    nodes.push(n);
                }
                None if dropped => {}
                None => {
                    if ["InitPlan ", "SubPlan ", "CTE "].iter().any(|p| body.starts_with(p)) {
                        role = Some(body.to_string());
                    } else if let Some(n) = nodes.last_mut() {
                        if n.details.len() < MAX_DETAILS && !body.is_empty() {
                            n.details.push(clip(body));
                        }
                    }
                }
            }
        }
        (!nodes.is_empty()).then_some(Tree { nodes })
    }

    /// Reads auto_explain's JSON format: the object under "Plan".
    pub fn from_json(plan: &Value) -> Option<Tree> {
        plan.as_object()?;
        let mut nodes = Vec::new();
        // Iterative: a hostile plan may nest deeper than the stack.
        let mut todo: Vec<(&Value, u32)> = vec![(plan, 0)];
        while let Some((v, depth)) = todo.pop() {
            let Some(obj) = v.as_object() else { continue };
            nodes.push(json_node(obj, depth));
            if let Some(children) = obj.get("Plans").and_then(Value::as_array) {
                if depth < MAX_DEPTH {
                    todo.extend(children.iter().rev().map(|c| (c, depth + 1)));
                }
            }
        }
        Some(Tree { nodes })
    }
}

/// Lines of a text plan that follow the tree and belong to no node.
fn is_footer(body: &str) -> bool {
    ["Planning", "Execution Time", "JIT:", "Trigger ", "Settings:", "Query Identifier:"]
        .iter()
        .any(|p| body.starts_with(p))
}

/// Splits "name alias" where either may be a double-quoted identifier.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One node line of the text format, the arrow removed.
fn text_node(text: &str, depth: u32) -> Node {
    // The label ends where the costs or the actuals start.
    let cut = ["  (", " (actual", " (never executed)", " (cost="]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    let (label, stats) = text.split_at(cut);
    let (rows, loops) = actuals(stats);
    let mut n = Node {
        depth,
        op: label.to_string(),
        target: None,
        alias: None,
        index: None,
        role: None,
        rows,
        loops,
        details: Vec::new(),
    };
    if let Some((op, rest)) = label.split_once(" using ") {
        // "Index Scan using idx on rel alias"
        n.op = op.to_string();
        let (idx, on) = rest.split_once(" on ").unwrap_or((rest, ""));
        n.index = words(idx).into_iter().next();
        let mut w = words(on).into_iter();
        n.target = w.next();
        n.alias = w.next();
    } else if let Some((op, rest)) = label.split_once(" on ") {
        n.op = op.to_string();
        let mut w = words(rest).into_iter();
        if op.ends_with("Bitmap Index Scan") {
            n.index = w.next();
        } else {
            n.target = w.next();
            n.alias = w.next();
        }
    }
    n
}

/// "(actual rows=3 loops=1)", "(actual time=0.1..0.2 rows=3 loops=1)" or "(never executed)".
fn actuals(stats: &str) -> (Option<f64>, Option<f64>) {
    if stats.contains("(never executed)") {
        return (Some(0.0), Some(0.0));
    }
    let Some(i) = stats.find("(actual") else { return (None, None) };
    let part = &stats[i..stats[i..].find(')').map_or(stats.len(), |j| i + j)];
    let field = |name: &str| {
        part.split_whitespace().find_map(|w| w.strip_prefix(name)?.parse::<f64>().ok().filter(|x| x.is_finite()))
    };
    (field("rows="), field("loops="))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// One node of the JSON format, named as the text format names it (PostgreSQL's explain.c).
fn json_node(o: &serde_json::Map<String, Value>, depth: u32) -> Node {
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let node_type = s("Node Type").unwrap_or("?");
    let mut op = match node_type {
        "Aggregate" => match s("Strategy") {
            Some("Sorted") => "GroupAggregate",
            Some("Hashed") => "HashAggregate",
            Some("Mixed") => "MixedAggregate",
            _ => "Aggregate",
        }
        .to_string(),
        "SetOp" if s("Strategy") == Some("Hashed") => "HashSetOp".to_string(),
        "ModifyTable" => s("Operation").unwrap_or("ModifyTable").to_string(),
        "Custom Scan" => format!("Custom Scan ({})", s("Custom Plan Provider").unwrap_or("?")),
        t => t.to_string(),
    };
    match s("Partial Mode") {
        Some("Partial") => op = format!("Partial {op}"),
        Some("Finalize") => op = format!("Finalize {op}"),
        _ => {}
    }
    if s("Scan Direction") == Some("Backward") {
        op.push_str(" Backward");
    }
    if let Some(jt) = s("Join Type").filter(|j| *j != "Inner") {
        op = match op.strip_suffix(" Join") {
            Some(base) => format!("{base} {jt} Join"),
            None => format!("{op} {jt} Join"),
        };
    }
    if o.get("Async Capable").and_then(Value::as_bool) == Some(true) {
        op = format!("Async {op}");
    }
    if o.get("Parallel Aware").and_then(Value::as_bool) == Some(true) {
        op = format!("Parallel {op}");
    }
    let named = ["Relation Name", "Function Name", "Table Function Name", "CTE Name", "Tuplestore Name"]
        .iter()
        .find_map(|k| s(k));
    let alias = s("Alias").map(str::to_string);
    let (target, alias) = match named {
        Some(name) => {
            let name = match s("Schema") {
                Some(schema) if o.contains_key("Relation Name") => format!("{schema}.{name}"),
                _ => name.to_string(),
            };
            let alias = alias.filter(|a| *a != name && Some(a.as_str()) != s("Relation Name"));
            (Some(name), alias)
        }
        None => (alias, None),
    };
    let mut details = Vec::new();
    for (k, v) in o {
        if details.len() >= MAX_DETAILS {
            break;
        }
        if k == "Plans" || k == "Node Type" {
            continue;
        }
        if let Some(t) = text_of(v) {
            details.push(clip(&format!("{k}: {t}")));
        }
    }
    let num = |k: &str| o.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    Node {
        depth,
        op,
        target,
        alias,
        index: s("Index Name").map(str::to_string),
        role: s("Subplan Name").map(str::to_string),
        rows: num("Actual Rows"),
        loops: num("Actual Loops"),
        details,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "Hash Anti Join  (cost=23.05..40.79 rows=2 width=16) (actual rows=1 loops=1)
  Hash Cond: (e.id = j.evaluation)
  ->  Seq Scan on evaluation e  (cost=0.00..17.62 rows=3 width=16) (actual rows=1 loops=1)
        Filter: (status = 'Queued'::text)
  ->  Hash  (cost=15.80..15.80 rows=580 width=16) (never executed)
        ->  Index Scan Backward using job_pkey on job j  (cost=0.00..15.80 rows=580 width=16) (never executed)
  InitPlan 1 (returns $0)
    ->  Bitmap Index Scan on \"odd \"\"name\"\"\"  (cost=0.00..4.2 rows=1 width=0) (actual rows=4 loops=2)";

    fn json() -> Value {
        serde_json::json!({
            "Node Type": "Hash Join", "Join Type": "Anti", "Actual Rows": 1, "Actual Loops": 1, "Hash Cond": "(e.id = \
                j.evaluation)",
            "Plans": [
                {"Node Type": "Seq Scan", "Relation Name": "evaluation", "Alias": "e", "Actual Rows": 1, "Actual \
                    Loops": 1,
                 "Parent Relationship": "Outer"},
                {"Node Type": "Hash", "Actual Rows": 0, "Actual Loops": 0, "Parent Relationship": "Inner", "Plans": [
                    {"Node Type": "Index Scan", "Scan Direction": "Backward", "Index Name": "job_pkey", "Relation \
                        Name": "job", "Alias": "j"}
                ]},
                {"Node Type": "Bitmap Index Scan", "Index Name": "odd \"name\"", "Parent Relationship": "InitPlan",
                 "Subplan Name": "InitPlan 1 (returns $0)", "Actual Rows": 4, "Actual Loops": 2}
            ]
        })
    }

    #[test]
    fn text_and_json_of_one_plan_have_one_fingerprint() {
        let t = Tree::from_text(TEXT.lines()).unwrap();
        let j = Tree::from_json(&json()).unwrap();
        let labels = |t: &Tree| t.nodes.iter().map(|n| (n.depth, n.label(), n.role.clone())).collect::<Vec<_>>();
        assert_eq!(labels(&t), labels(&j));
        assert_eq!(t.fingerprint(), j.fingerprint());
        assert_eq!(t.nodes[0].label(), "Hash Anti Join");
        assert_eq!(t.nodes[3].label(), "Index Scan Backward using job_pkey on job j");
        assert_eq!(t.nodes[4].label(), "Bitmap Index Scan on odd \"name\"");
        assert_eq!((t.nodes[4].rows, t.nodes[4].loops), (Some(4.0), Some(2.0)));
        assert_eq!((t.nodes[2].rows, t.nodes[2].loops), (Some(0.0), Some(0.0)));
        assert_eq!(t.nodes[1].details, vec!["Filter: (status = 'Queued'::text)"]);
    }

    #[test]
    fn costs_rows_and_literals_do_not_change_a_fingerprint_and_shape_does() {
        let base = Tree::from_text(TEXT.lines()).unwrap().fingerprint();
        let other_numbers =
            TEXT.replace("23.05", "99.1").replace("rows=1 loops=1", "rows=7 loops=3").replace("'Queued'", "'Done'");
        assert_eq!(Tree::from_text(other_numbers.lines()).unwrap().fingerprint(), base);
        let seq = TEXT.replace("Index Scan Backward using job_pkey on job j", "Seq Scan on job j");
        assert_ne!(Tree::from_text(seq.lines()).unwrap().fingerprint(), base);
        let swapped = TEXT.replace("evaluation e ", "job j ").replace("on job j ", "on evaluation e ");
        assert_ne!(Tree::from_text(swapped.lines()).unwrap().fingerprint(), base, "join order is part of the plan");
        let hoisted = TEXT.replace("        ->  Index Scan", "  ->  Index Scan");
        assert_ne!(
            Tree::from_text(hoisted.lines()).unwrap().fingerprint(),
            base,
            "the parent/child shape is part of the plan"
        );
    }

    #[test]
    fn json_names_follow_the_text_format() {
        let node = |v: Value| Tree::from_json(&v).unwrap().nodes[0].label();
        assert_eq!(
            node(serde_json::json!({"Node Type": "Aggregate", "Strategy": "Hashed", "Partial Mode": "Partial"})),
            "Partial HashAggregate"
        );
        assert_eq!(node(serde_json::json!({"Node Type": "Nested Loop", "Join Type": "Left"})), "Nested Loop Left Join");
        assert_eq!(
            node(serde_json::json!({"Node Type": "ModifyTable", "Operation": "Insert", "Relation \
                Name": "job", "Alias": "job"})),
            "Insert on job"
        );
        assert_eq!(
            node(
                serde_json::json!({"Node Type": "Seq Scan", "Parallel Aware": true, "Relation Name": "t", "Alias": "x"})
            ),
            "Parallel Seq Scan on t x"
        );
        assert_eq!(node(serde_json::json!({"Node Type": "Subquery Scan", "Alias": "s"})), "Subquery Scan on s");
    }

    #[test]
    fn hostile_plans_are_cut_not_followed() {
        let mut v = serde_json::json!({"Node Type": "Result"});
        for _ in 0..300 {
            v = serde_json::json!({"Node Type": "Limit", "Plans": [v]});
        }
        let t = Tree::from_json(&v).unwrap();
        assert_eq!(t.nodes.len() as u32, MAX_DEPTH + 1);
        // The same plan in the text format is cut at the same depth, to the
        // same fingerprint (it kept 301 nodes at depth 200 and under before).
        let text: String = (0..=300u32)
            .map(|d| match d {
                0 => "Limit  (cost=0.00..1.00 rows=1 width=4)\n".to_string(),
                300 => format!(
                    "{}->  Result  (cost=0.00..0.01 rows=1 width=4)\n        One-Time Filter: false\n",
                    " ".repeat(6 * 299 + 2)
                ),
                d => format!("{}->  Limit  (cost=0.00..1.00 rows=1 width=4)\n", " ".repeat(6 * (d as usize - 1) + 2)),
            })
            .collect();
        let from_text = Tree::from_text(text.lines()).unwrap();
        assert_eq!(from_text.nodes.len(), t.nodes.len());
        assert_eq!(from_text.fingerprint(), t.fingerprint());
        assert!(from_text.nodes.iter().all(|n| n.details.is_empty()), "a dropped node's lines go with it");
        assert!(Tree::from_text(["", "   "]).is_none());
        assert!(Tree::from_json(&serde_json::json!([1])).is_none());
    }
}
