//! Two production evaluations side by side. nix's counts in
//! `evaluation_metric` are exact and judged as a counted pass's are (same,
//! more or less, by exactly that much: the gate fires on them); every time
//! is one measurement a side, shown with its change and never judged (a
//! verdict on a time needs repeats). A phase that took longer on a worker
//! that was busier is said: the worker's load, not the change, may be why.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Load, Production};
use crate::counters::{judge_exact, sort_counters, CounterVerdict};
use crate::verdict::Kind;

#[derive(Debug, Clone, Serialize)]
pub struct ProductionComparison {
    pub a: Production,
    pub b: Production,
    /// nix's exact counts, judged; largest changes first.
    pub counters: Vec<CounterVerdict>,
    /// Counts one side has and the other has not (named; the gate cannot judge them).
    pub missing: Vec<(String, &'static str)>,
    /// Stages, evaluation_metric's times, and each job kind's phases: one measurement a side.
    pub times: Vec<SideBySide>,
    /// What the reports counted (derivations, edges, ...): A, B and B − A.
    pub counts: Vec<(String, u64, u64, i64)>,
    /// Each job's worker load, A beside B, by job kind, with a phase that was
    /// slower on a busier worker named.
    pub loads: Vec<LoadSide>,
}

/// One time, A beside B: single measurements, no verdict.
#[derive(Debug, Clone, Serialize)]
pub struct SideBySide {
    /// `stage`, `evaluation_metric` or the job kind (`eval`, `build`).
    pub group: String,
    pub name: String,
    pub a_s: Option<f64>,
    pub b_s: Option<f64>,
    pub change_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadSide {
    /// The job kind (the first job of that kind a side).
    pub kind: String,
    pub a: Option<Load>,
    pub b: Option<Load>,
    /// Phases of that job that took longer in B on a busier worker.
    pub slower_on_busier: Vec<String>,
}

/// How much more CPU (percentage points) makes B's worker "busier".
const BUSIER_POINTS: f64 = 20.0;

fn change(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let (a, b) = (a?, b?);
    (a != 0.0).then(|| evalbench_bundle::num::round_to((b / a - 1.0) * 100.0, 3))
}

/// The exact counts (nix's names) both sides have, and those only one has.
fn counters(a: &Production, b: &Production) -> (Vec<CounterVerdict>, Vec<(String, &'static str)>) {
    let exact = |p: &Production| -> BTreeMap<String, f64> {
        p.counters.iter().filter(|(k, _)| !k.starts_with("evaluation_metric.")).map(|(k, v)| (k.clone(), *v)).collect()
    };
    let (xa, xb) = (exact(a), exact(b));
    let mut out: Vec<CounterVerdict> =
        xa.iter().filter_map(|(k, va)| xb.get(k).map(|vb| judge_exact(k, *va, *vb))).collect();
    sort_counters(&mut out);
    let mut missing: Vec<(String, &'static str)> =
        xa.keys().filter(|k| !xb.contains_key(*k)).map(|k| (k.clone(), "B")).collect();
    missing.extend(xb.keys().filter(|k| !xa.contains_key(*k)).map(|k| (k.clone(), "A")));
    (out, missing)
}

/// Each side's times by (group, name), in the order they happened: stages,
/// evaluation_metric's ms, and each job kind's phases (a name that recurs in
/// a job is added up).
fn times_of(p: &Production) -> Vec<((String, String), f64)> {
    let mut out: Vec<((String, String), f64)> = Vec::new();
    let mut add = |group: &str, name: &str, s: f64| match out.iter_mut().find(|((g, n), _)| g == group && n == name) {
        Some((_, v)) => *v += s,
        None => out.push(((group.to_string(), name.to_string()), s)),
    };
    for s in &p.stages {
        add("stage", s.name, s.seconds);
    }
    for column in evalbench_bundle::contract::EVALUATION_METRIC_MEASURES.iter().filter(|c| c.ends_with("_ms")) {
        if let Some(v) = p.counters.get(&format!("evaluation_metric.{column}")) {
            add("evaluation_metric", column, v / 1000.0);
        }
    }
    for j in &p.jobs {
        for ph in &j.phases {
            if let Some(ms) = ph.ms {
                add(&j.kind, &ph.name, ms as f64 / 1000.0);
            }
        }
    }
    out
}

fn busier(a: Option<&Load>, b: Option<&Load>) -> bool {
    let (Some(a), Some(b)) = (a, b) else { return false };
    let points = b.cpu_mean_pct.zip(a.cpu_mean_pct).is_some_and(|(b, a)| b - a >= BUSIER_POINTS);
    points || (b.busy && !a.busy) || (b.short_of_memory && !a.short_of_memory)
}

fn loads(a: &Production, b: &Production) -> Vec<LoadSide> {
    let mut kinds: Vec<String> = a.jobs.iter().chain(&b.jobs).map(|j| j.kind.clone()).collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|kind| {
            let (ja, jb) = (a.jobs.iter().find(|j| j.kind == kind), b.jobs.iter().find(|j| j.kind == kind));
            let mut slower = Vec::new();
            if let (Some(ja), Some(jb)) = (ja, jb) {
                for pb in &jb.phases {
                    let pa = ja.phases.iter().find(|p| p.name == pb.name);
                    let longer = pa.and_then(|pa| pa.ms).zip(pb.ms).is_some_and(|(x, y)| y > x);
                    if longer && busier(pa.and_then(|p| p.load.as_ref()), pb.load.as_ref()) {
                        slower.push(pb.name.clone());
                    }
                }
            }
            LoadSide {
                a: ja.and_then(|j| j.load.clone()),
                b: jb.and_then(|j| j.load.clone()),
                kind,
                slower_on_busier: slower,
            }
        })
        .collect()
}

fn counts(a: &Production, b: &Production) -> Vec<(String, u64, u64, i64)> {
    if !a.counted || !b.counted {
        return Vec::new();
    }
    let pairs = |p: &Production| {
        let c = &p.counts;
        [
            ("derivations", c.derivations),
            ("dependency edges", c.dependencies),
            ("derivation outputs", c.derivation_outputs),
            ("cached paths", c.cached_paths),
            ("build jobs", c.build_jobs),
            ("entry points", c.entry_points),
            ("build attempts", c.build_attempts),
        ]
    };
    pairs(a).into_iter().zip(pairs(b)).map(|((n, x), (_, y))| (n.to_string(), x, y, y as i64 - x as i64)).collect()
}

/// A against B.
pub fn compare(a: &Production, b: &Production) -> ProductionComparison {
    let (counters, missing) = counters(a, b);
    let (ta, tb) = (times_of(a), times_of(b));
    let get = |t: &[((String, String), f64)], k: &(String, String)| t.iter().find(|(x, _)| x == k).map(|(_, v)| *v);
    // A's order, then what only B has.
    let mut keys: Vec<&(String, String)> = ta.iter().map(|(k, _)| k).collect();
    keys.extend(tb.iter().map(|(k, _)| k).filter(|k| get(&ta, k).is_none()));
    let times = keys
        .into_iter()
        .map(|k| {
            let (x, y) = (get(&ta, k), get(&tb, k));
            SideBySide { group: k.0.clone(), name: k.1.clone(), a_s: x, b_s: y, change_pct: change(x, y) }
        })
        .collect();
    ProductionComparison {
        counters,
        missing,
        times,
        counts: counts(a, b),
        loads: loads(a, b),
        a: a.clone(),
        b: b.clone(),
    }
}

/// What the gate fires on: an exact headline count of nix that grew by more
/// than `pct` (as for a bundle's counted passes).
pub fn regressions(c: &ProductionComparison, pct: f64) -> Vec<&CounterVerdict> {
    let headline = |n: &str| crate::counters::exact_headline().any(|h| h == n);
    c.counters
        .iter()
        .filter(|v| headline(&v.name) && v.exact && v.kind == Kind::More && v.change_pct.is_none_or(|x| x > pct))
        .collect()
}

/// The Gradient column a nix counter came from (`fn_calls` for `nrFunctionCalls`).
pub fn column_of(counter: &str) -> Option<&'static str> {
    evalbench_bundle::contract::EVALUATION_METRIC_COUNTS.iter().find(|(_, n)| *n == counter).map(|(c, _)| *c)
}
