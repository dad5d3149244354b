//! Plans, three ways.
//!
//! 1. Any bytes as a plan in auto_explain's text format (first byte even) or
//!    its JSON format (odd): the tree is read without a panic, its depths
//!    step down at most one level at a time from a single top node, and the
//!    fingerprint is 16 hex digits, the same when read again.
//! 2. The claim of `plan.rs`: one plan in both formats has one fingerprint.
//!    The bytes also drive a generator of plans (operations, relations,
//!    aliases, indexes, join types, and chains deeper than the depth cap);
//!    each is written as auto_explain's JSON and as its text (labels as
//!    EXPLAIN prints them, arrows indented as PostgreSQL does), and both
//!    readings must keep the same nodes and the same fingerprint.
//! 3. Whole logs, both formats, through the statement aggregation.

use evalbench_decode::plan::Tree;
use serde_json::{json, Value};

fn check_tree(t: &Tree) {
    assert_eq!(t.nodes.first().map(|n| n.depth), Some(0));
    for w in t.nodes.windows(2) {
        assert!(w[1].depth <= w[0].depth + 1, "a child is one level below its parent");
    }
    for n in &t.nodes {
        let _ = n.label();
    }
    let fp = t.fingerprint();
    assert!(fp.len() == 16 && fp.bytes().all(|b| b.is_ascii_hexdigit()));
}

/// The bytes, one at a time; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[self.next() as usize % from.len()]
    }
}

const NAMES: &[&str] = &["job", "evaluation", "derivation", "t", "x", "a_1", "build_output"];

/// One generated node as auto_explain's JSON, with `kids` below it.
fn node(b: &mut Bytes, kids: Vec<Value>) -> Value {
    let mut o = serde_json::Map::new();
    match b.next() % 9 {
        0 => {
            o.insert("Node Type".into(), json!("Seq Scan"));
            o.insert("Relation Name".into(), json!(b.pick(NAMES)));
            o.insert("Alias".into(), json!(b.pick(NAMES)));
        }
        1 | 2 => {
            o.insert("Node Type".into(), json!(b.pick(&["Index Scan", "Index Only Scan"])));
            o.insert("Index Name".into(), json!(format!("{}_pkey", b.pick(NAMES))));
            o.insert("Relation Name".into(), json!(b.pick(NAMES)));
            o.insert("Alias".into(), json!(b.pick(NAMES)));
            if b.next().is_multiple_of(4) {
                o.insert("Scan Direction".into(), json!("Backward"));
            }
        }
        3 => {
            o.insert("Node Type".into(), json!("Bitmap Index Scan"));
            o.insert("Index Name".into(), json!(format!("{}_idx", b.pick(NAMES))));
        }
        4 => {
            o.insert("Node Type".into(), json!(b.pick(&["Hash Join", "Merge Join", "Nested Loop"])));
            o.insert("Join Type".into(), json!(b.pick(&["Inner", "Left", "Anti", "Semi"])));
        }
        5 => {
            o.insert("Node Type".into(), json!("Aggregate"));
            o.insert("Strategy".into(), json!(b.pick(&["Plain", "Sorted", "Hashed"])));
        }
        _ => {
            o.insert("Node Type".into(), json!(b.pick(&["Result", "Limit", "Sort", "Hash", "Materialize", "Gather"])));
        }
    }
    if !kids.is_empty() {
        o.insert("Plans".into(), Value::Array(kids));
    }
    Value::Object(o)
}

/// A plan from the bytes: a chain (as deep as 255 levels, past the cap;
/// its depth is returned) or a bushy tree of at most a few dozen nodes.
fn plan(b: &mut Bytes) -> (Value, Option<u32>) {
    if b.next().is_multiple_of(4) {
        let depth = b.next();
        let mut v = node(b, Vec::new());
        for _ in 0..depth {
            v = node(b, vec![v]);
        }
        return (v, Some(depth as u32));
    }
    fn bushy(b: &mut Bytes, depth: u32) -> Value {
        let kids = if depth < 5 { (0..b.next() % 3).map(|_| bushy(b, depth + 1)).collect() } else { Vec::new() };
        node(b, kids)
    }
    (bushy(b, 0), None)
}

/// The text format of a tree read from JSON: its labels as EXPLAIN prints
/// them, a child's arrow two columns right of its parent's text.
fn text_of(t: &Tree) -> String {
    t.nodes
        .iter()
        .map(|n| {
            let cost = "  (cost=0.00..1.00 rows=1 width=4) (actual time=0.01..0.02 rows=1 loops=1)";
            match n.depth {
                0 => format!("{}{cost}\n", n.label()),
                d => format!("{}->  {}{cost}\n", " ".repeat(6 * (d as usize - 1) + 2), n.label()),
            }
        })
        .collect()
}

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let Some((&kind, rest)) = data.split_first() else { return };
    if kind % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        let a = Tree::from_text(text.lines());
        let b = Tree::from_text(text.lines());
        if let (Some(a), Some(b)) = (&a, &b) {
            check_tree(a);
            assert_eq!(a.fingerprint(), b.fingerprint());
        }
    } else if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
        if let Some(t) = Tree::from_json(&v) {
            if !t.nodes.is_empty() {
                check_tree(&t);
            }
        }
    }
    // One plan, two formats, one fingerprint.
    let (json, chain) = plan(&mut Bytes(data));
    let from_json = Tree::from_json(&json).expect("a generated plan is an object");
    check_tree(&from_json);
    let mut text = text_of(&from_json);
    // A chain deeper than the JSON reader keeps: the text goes on below it,
    // as PostgreSQL would print it, and must be cut at the same depth.
    let kept = from_json.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    if let Some(depth) = chain.filter(|&d| d > kept) {
        for d in kept + 1..=depth {
            text.push_str(&format!(
                "{}->  Result  (cost=0.00..0.01 rows=1 width=4)\n        One-Time Filter: false\n",
                " ".repeat(6 * (d as usize - 1) + 2)
            ));
        }
    }
    let from_text = Tree::from_text(text.lines()).expect("a written plan has nodes");
    let shapes = |t: &Tree| t.nodes.iter().map(|n| (n.depth, n.label())).collect::<Vec<_>>();
    assert_eq!(shapes(&from_text), shapes(&from_json), "{text}");
    assert_eq!(from_text.fingerprint(), from_json.fingerprint());
    let _ = evalbench_decode::explain::decode_from(rest, "fuzz", &mut |_| {});
}
