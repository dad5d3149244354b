//! Two instrumented passes' plans compared statement by statement: which
//! statements run with another plan most of the time, which gained or lost a
//! plan, which appear on one side only. The plans come from auto_explain's
//! log of each run (`decode::explain`), repeats added up; a plan is its
//! fingerprint (`decode::plan`), so costs, row counts and literals never
//! make two plans differ.
//!
//! "Changed" is about the most frequent plan, not every plan: one statement
//! runs with several plans when its parameters differ (`drv_path =
//! ANY($1)` is a Seq Scan for 32 paths and a Bitmap Heap Scan for 4), and a
//! statement split near evenly between two plans would flip its most
//! frequent one from run to run. So a plan has changed only when the most
//! frequent plans differ **and** at least half of the statement's runs moved
//! to other plans: the total variation distance between the two sides'
//! shares of each plan (`shift`) is at least [`CHANGED_SHIFT`]. A 32/31 split
//! that became 31/32 is a shift of 0.016, the same plans. The plans a
//! statement gained or lost are listed apart, and a script sees every
//! count in the JSON.

use std::collections::BTreeMap;

use evalbench_bundle::{layout, PassDir};
use evalbench_decode::explain::{most_frequent_first, PlanSeen};
pub use evalbench_decode::plan::Node;
use serde::Serialize;

use crate::verdict::Verdict;

/// The shift (total variation distance between the sides' plan shares) from
/// which a different most frequent plan is a changed plan.
pub const CHANGED_SHIFT: f64 = 0.5;

/// One side's most frequent plan of a statement.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub fingerprint: String,
    pub nodes: Vec<Node>,
    /// Runs of the statement with this plan, over all runs of the pass ...
    pub count: u64,
    /// ... out of this many plans logged for the statement.
    pub of: u64,
    /// Per node: not in the other side's most frequent plan (a longest
    /// common subsequence of the two pre-orders, by depth, operation,
    /// names and sub-plan). All false when there is no other side.
    pub differs: Vec<bool>,
}

/// What happened to a statement's plans between A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The most frequent plan differs, and at least half the runs moved ([`CHANGED_SHIFT`]).
    Changed,
    /// Same most frequent plan; B ran with plans A never did, or A with plans B never did.
    PlansDiffer,
    /// Only B ran the statement.
    New,
    /// Only A ran it.
    Gone,
    Same,
}

impl Change {
    /// The JSON name: `changed`, `plans_differ`, `new`, `gone`, `same`.
    pub fn key(self) -> &'static str {
        match self {
            Change::Changed => "changed",
            Change::PlansDiffer => "plans_differ",
            Change::New => "new",
            Change::Gone => "gone",
            Change::Same => "same",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Change::Changed => "plan changed",
            Change::PlansDiffer => "gained or lost a plan",
            Change::New => "new statement",
            Change::Gone => "gone statement",
            Change::Same => "same plan",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PlanRow {
    /// The statement, normalized as pg_stat_statements' rows are.
    pub statement: String,
    pub a: Option<Side>,
    pub b: Option<Side>,
    pub change: Change,
    /// The share of runs that would have to change plan to turn A's mix of
    /// plans into B's (total variation distance, 0 to 1; 1 when one side did not run it).
    pub shift: f64,
    /// Fingerprints B ran with and A never did, and the reverse.
    pub gained: Vec<String>,
    pub lost: Vec<String>,
    /// The statement's pg_stat_statements verdict in the matching clean
    /// passes, when those were compared too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statement_verdict: Option<Verdict>,
}

/// A pass's plans per statement, its repeats added up.
#[derive(Debug, Default)]
pub struct Book {
    pub statements: BTreeMap<String, Vec<PlanSeen>>,
    /// Runs without a readable auto_explain log, with the reason.
    pub missing: Vec<String>,
}

/// Adds `p` into a statement's plans: a plan seen before absorbs it.
fn merge(into: &mut Vec<PlanSeen>, p: PlanSeen) {
    match into.iter_mut().find(|q| q.fingerprint == p.fingerprint) {
        Some(q) => q.absorb(&p),
        None => into.push(p),
    }
}

/// The plans of a pass's runs.
pub fn book(dirs: &[&PassDir]) -> Book {
    let mut b = Book::default();
    for d in dirs {
        let file = d.file(layout::AUTO_EXPLAIN);
        if !file.exists() {
            b.missing.push(format!("{}: no {}", d.name, layout::AUTO_EXPLAIN));
            continue;
        }
        match evalbench_decode::explain::decode(&file, &mut |_| {}) {
            Ok(s) => {
                for st in s.by_statement {
                    let e = b.statements.entry(st.statement).or_default();
                    for p in st.plans {
                        merge(e, p);
                    }
                }
            }
            Err(e) => b.missing.push(e.to_string()),
        }
    }
    b.statements.values_mut().for_each(|plans| most_frequent_first(plans));
    b
}

fn side(plans: &[PlanSeen]) -> Option<Side> {
    let top = plans.first()?;
    Some(Side {
        fingerprint: top.fingerprint.clone(),
        nodes: top.nodes.clone(),
        count: top.count,
        of: plans.iter().map(|p| p.count).sum(),
        differs: vec![false; top.nodes.len()],
    })
}

/// Cells of the LCS table past which nodes are matched by position instead.
const MAX_CELLS: usize = 4 << 20;

/// Marks the nodes of `a` and `b` that the other plan does not have.
fn mark(a: &mut Side, b: &mut Side) {
    let key = |n: &Node| (n.depth, n.label(), n.role.clone());
    let ka: Vec<_> = a.nodes.iter().map(key).collect();
    let kb: Vec<_> = b.nodes.iter().map(key).collect();
    let (n, m) = (ka.len(), kb.len());
    if n * m > MAX_CELLS {
        for i in 0..n.max(m) {
            let same = i < n && i < m && ka[i] == kb[i];
            if i < n {
                a.differs[i] = !same;
            }
            if i < m {
                b.differs[i] = !same;
            }
        }
        return;
    }
    // Suffix LCS lengths, then one walk from the front.
    let mut t = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[at(i, j)] = if ka[i] == kb[j] { t[at(i + 1, j + 1)] + 1 } else { t[at(i + 1, j)].max(t[at(i, j + 1)]) };
        }
    }
    a.differs.iter_mut().for_each(|d| *d = true);
    b.differs.iter_mut().for_each(|d| *d = true);
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if ka[i] == kb[j] {
            a.differs[i] = false;
            b.differs[j] = false;
            i += 1;
            j += 1;
        } else if t[at(i + 1, j)] >= t[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
}

/// Half the sum over plans of the difference of their shares on the two sides.
fn shift(a: &[PlanSeen], b: &[PlanSeen]) -> f64 {
    let (na, nb) = (a.iter().map(|p| p.count).sum::<u64>() as f64, b.iter().map(|p| p.count).sum::<u64>() as f64);
    if na == 0.0 || nb == 0.0 {
        return 1.0;
    }
    let share =
        |ps: &[PlanSeen], n: f64, fp: &str| ps.iter().find(|p| p.fingerprint == fp).map_or(0.0, |p| p.count as f64 / n);
    let fps: std::collections::BTreeSet<&str> = a.iter().chain(b).map(|p| p.fingerprint.as_str()).collect();
    fps.into_iter().map(|fp| (share(a, na, fp) - share(b, nb, fp)).abs()).sum::<f64>() / 2.0
}

/// Every statement either side planned, the changes first.
pub fn compare(a: &Book, b: &Book) -> Vec<PlanRow> {
    let empty = Vec::new();
    let names: std::collections::BTreeSet<&String> = a.statements.keys().chain(b.statements.keys()).collect();
    let mut rows: Vec<PlanRow> = names
        .into_iter()
        .map(|st| {
            let pa = a.statements.get(st).unwrap_or(&empty);
            let pb = b.statements.get(st).unwrap_or(&empty);
            let (mut sa, mut sb) = (side(pa), side(pb));
            if let (Some(x), Some(y)) = (&mut sa, &mut sb) {
                mark(x, y);
            }
            let has = |ps: &[PlanSeen], fp: &str| ps.iter().any(|p| p.fingerprint == fp);
            let gained: Vec<String> =
                pb.iter().filter(|p| !has(pa, &p.fingerprint)).map(|p| p.fingerprint.clone()).collect();
            let lost: Vec<String> =
                pa.iter().filter(|p| !has(pb, &p.fingerprint)).map(|p| p.fingerprint.clone()).collect();
            let shift = shift(pa, pb);
            let change = match (&sa, &sb) {
                (None, _) => Change::New,
                (_, None) => Change::Gone,
                (Some(x), Some(y)) if x.fingerprint != y.fingerprint && shift >= CHANGED_SHIFT => Change::Changed,
                _ if !gained.is_empty() || !lost.is_empty() => Change::PlansDiffer,
                _ => Change::Same,
            };
            PlanRow { statement: st.clone(), a: sa, b: sb, change, shift, gained, lost, statement_verdict: None }
        })
        .collect();
    // Changes first; within a kind, the largest shift first.
    rows.sort_by(|x, y| {
        (x.change as u8)
            .cmp(&(y.change as u8))
            .then(y.shift.total_cmp(&x.shift))
            .then_with(|| x.statement.cmp(&y.statement))
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(depth: u32, op: &str) -> Node {
        Node {
            depth,
            op: op.into(),
            target: None,
            alias: None,
            index: None,
            role: None,
            rows: None,
            loops: None,
            details: vec![],
        }
    }

    #[test]
    fn the_nodes_that_differ_are_marked() {
        let side = |ops: &[(u32, &str)]| {
            let nodes: Vec<Node> = ops.iter().map(|(d, o)| node(*d, o)).collect();
            Side { fingerprint: String::new(), count: 1, of: 1, differs: vec![false; nodes.len()], nodes }
        };
        let mut a = side(&[(0, "Hash Join"), (1, "Seq Scan"), (1, "Hash"), (2, "Seq Scan")]);
        let mut b = side(&[(0, "Nested Loop"), (1, "Seq Scan"), (1, "Index Scan")]);
        mark(&mut a, &mut b);
        assert_eq!(a.differs, vec![true, false, true, true]);
        assert_eq!(b.differs, vec![true, false, true]);
    }

    fn plan(fp: &str, count: u64, rows: f64) -> PlanSeen {
        plan_loops(fp, count, rows, 1.0)
    }

    fn plan_loops(fp: &str, count: u64, rows: f64, loops: f64) -> PlanSeen {
        let node = Node {
            depth: 0,
            op: "Seq Scan".into(),
            target: Some("t".into()),
            alias: None,
            index: None,
            role: None,
            rows: Some(rows),
            loops: Some(loops),
            details: vec![],
        };
        PlanSeen::new(fp.into(), count, vec![node])
    }

    #[test]
    fn rows_from_two_logs_are_what_one_log_would_give() {
        // (10 rows, 1 loop) and (0 rows, 9 loops): 10 rows over 10 loops in one log, and so in two.
        let b = book_of(&[("s", vec![plan_loops("aa", 1, 10.0, 1.0), plan_loops("aa", 1, 0.0, 9.0)])]);
        let n = &b.statements["s"][0].nodes[0];
        assert_eq!((n.rows, n.loops), (Some(1.0), Some(5.0)), "rows per loop 10/10, loops per run 10/2");
    }

    fn book_of(items: &[(&str, Vec<PlanSeen>)]) -> Book {
        let mut b = Book::default();
        for (st, ps) in items {
            for p in ps {
                merge(b.statements.entry(st.to_string()).or_default(), p.clone());
            }
        }
        b.statements.values_mut().for_each(|ps| most_frequent_first(ps));
        b
    }

    #[test]
    fn each_kind_of_change_is_told_apart() {
        let a = book_of(&[
            ("s1", vec![plan("aa", 9, 1.0)]),
            ("s2", vec![plan("aa", 9, 1.0), plan("bb", 1, 1.0)]),
            ("s3", vec![plan("aa", 5, 1.0)]),
            ("gone", vec![plan("aa", 1, 1.0)]),
            ("same", vec![plan("cc", 3, 1.0), plan("cc", 3, 3.0)]),
            ("split", vec![plan("aa", 32, 1.0), plan("bb", 31, 1.0)]),
            ("mostly", vec![plan("aa", 3, 1.0), plan("bb", 1, 1.0)]),
        ]);
        let b = book_of(&[
            ("s1", vec![plan("bb", 6, 1.0), plan("aa", 4, 1.0)]),
            ("s2", vec![plan("aa", 10, 1.0)]),
            ("s3", vec![plan("aa", 5, 1.0)]),
            ("new", vec![plan("aa", 1, 1.0)]),
            ("same", vec![plan("cc", 6, 2.0)]),
            ("split", vec![plan("aa", 31, 1.0), plan("bb", 32, 1.0)]),
            ("mostly", vec![plan("bb", 4, 1.0)]),
        ]);
        let rows = compare(&a, &b);
        let kind = |s: &str| rows.iter().find(|r| r.statement == s).unwrap().change;
        assert_eq!(kind("s1"), Change::Changed);
        let s1 = rows.iter().find(|r| r.statement == "s1").unwrap();
        assert_eq!(s1.a.as_ref().unwrap().differs, vec![false], "same node, other fingerprint: nothing to mark");
        assert_eq!(kind("s2"), Change::PlansDiffer);
        assert_eq!(kind("s3"), Change::Same);
        assert_eq!(kind("split"), Change::Same, "a near even split that tipped over is the same plans");
        assert_eq!(kind("mostly"), Change::Changed, "3 of 4 runs moved");
        let shift = |st: &str| rows.iter().find(|r| r.statement == st).unwrap().shift;
        assert!(
            (shift("split") - 1.0 / 63.0).abs() < 1e-9 && (shift("mostly") - 0.75).abs() < 1e-9 && shift("s1") == 0.6
        );
        assert_eq!(kind("new"), Change::New);
        for c in [Change::Changed, Change::PlansDiffer, Change::New, Change::Gone, Change::Same] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.key(), "one name in JSON and on the page");
        }
        assert_eq!(kind("gone"), Change::Gone);
        assert_eq!(
            (rows[0].statement.as_str(), rows[1].statement.as_str()),
            ("mostly", "s1"),
            "changes first, the largest shift first"
        );
        let same = rows.iter().find(|r| r.statement == "same").unwrap();
        assert_eq!(same.a.as_ref().unwrap().count, 6);
        assert_eq!(
            same.a.as_ref().unwrap().nodes[0].rows,
            Some(2.0),
            "rows per loop over both logs: (1·3 + 3·3) / 6 loops"
        );
        assert_eq!(rows.iter().filter(|r| r.change == Change::Changed).count(), 2);
        let s2 = rows.iter().find(|r| r.statement == "s2").unwrap();
        assert_eq!((s2.gained.len(), s2.lost.clone()), (0, vec!["bb".to_string()]));
    }
}
