//! What a speed-up would buy: the pass's graph with some spans' own time
//! shortened, the path found again. A prediction from one measured pass,
//! not a measurement; [`ASSUMPTION`] says what it takes for granted.

use serde::Serialize;

use super::{CriticalPath, Graph, PathError, PathStep, Shorten, POSTGRES};
use crate::Clocks;

pub const ASSUMPTION: &str = "a prediction, not a measurement: each named step's time, as the path table counts it (a \
    span's own time less the PostgreSQL round trips inside it, which are the statements'), is shortened by the given \
    share in every instance; everything else stays as measured, and a root span whose cause the trace does not show \
    still waits for the span that ended last before it";

/// One `--faster NAME=PCT`.
#[derive(Debug, Clone, Serialize)]
pub struct Faster {
    pub name: String,
    pub pct: f64,
    /// The steps (`process name`, `wait: what`) it matched.
    pub matched: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WhatIf {
    pub faster: Vec<Faster>,
    pub measured_s: f64,
    pub predicted_s: f64,
    pub change_pct: f64,
    /// The predicted path's steps, largest first.
    pub predicted: Vec<PathStep>,
    /// The step that leads the predicted path (the first of `predicted`).
    pub critical_next: Option<String>,
    pub assumption: &'static str,
}

/// Parses `NAME=PCT` (PCT in 0..=100, the share of the own time taken off).
pub fn parse_faster(s: &str) -> Result<(String, f64), PathError> {
    let bad = |expected: String| PathError::Faster { given: s.to_string(), expected };
    // The share has no '=', a span name may.
    let (name, pct) = s.rsplit_once('=').ok_or_else(|| bad("expected NAME=PCT, e.g. evaluate_flake=50".into()))?;
    let pct: f64 = pct.trim_end_matches('%').parse().map_err(|_| bad(format!("{pct:?} is not a number of percent")))?;
    if name.is_empty() || !(0.0..=100.0).contains(&pct) {
        return Err(bad("expected a span name and a share from 0 to 100".into()));
    }
    Ok((name.to_string(), pct))
}

/// What a name typed after `--faster` selects: span steps, statements
/// and waits, each as the path table prints it.
#[derive(Debug, Default)]
struct Selected {
    steps: Vec<u32>,
    statements: Vec<std::sync::Arc<str>>,
    waits: Vec<u32>,
}

impl Selected {
    fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.statements.is_empty() && self.waits.is_empty()
    }

    /// Shortens what was selected by `f` in `sh`; returns the labels it matched.
    fn apply(&self, g: &Graph, f: f64, sh: &mut Shorten) -> Vec<String> {
        let mut matched = Vec::new();
        for &s in &self.steps {
            sh.step(s, f);
            matched.push(format!("{} {}", g.steps[s as usize].0, g.steps[s as usize].1));
        }
        for n in &self.statements {
            sh.statement(n, f);
            matched.push(format!("{POSTGRES} {n}"));
        }
        for &w in &self.waits {
            sh.wait(w, f);
            matched.push(format!("wait: {}", g.waits[w as usize].name));
        }
        matched
    }
}

/// `pattern` as NAME, PROCESS:NAME or "PROCESS NAME" (`process` "wait" for a wait).
fn names(pattern: &str, process: &str, name: &str) -> bool {
    name == pattern
        || pattern
            .strip_prefix(process)
            .and_then(|r| r.strip_prefix(':').or_else(|| r.strip_prefix(' ')))
            .map(str::trim_start)
            == Some(name)
}

fn select(g: &Graph, pattern: &str) -> Selected {
    Selected {
        steps: g.select(pattern),
        statements: g.trips.names().into_iter().filter(|n| names(pattern, POSTGRES, n)).collect(),
        waits: (0..g.waits.len() as u32).filter(|&w| names(pattern, "wait", &g.waits[w as usize].name)).collect(),
    }
}

/// Every step a name could be, as the path table prints it: for "did you mean".
fn every_label(g: &Graph) -> Vec<String> {
    let mut v: Vec<String> = g.steps.iter().map(|(p, n)| format!("{p} {n}")).collect();
    v.extend(g.trips.names().iter().map(|n| format!("{POSTGRES} {n}")));
    v.extend(g.waits.iter().map(|w| format!("wait: {}", w.name)));
    v
}

/// The shortening `faster` asks for, and what each name matched.
pub fn shorten(g: &Graph, faster: &[(String, f64)]) -> Result<(Shorten, Vec<Faster>), PathError> {
    let mut sh = Shorten::none(g);
    let mut out = Vec::new();
    for (name, pct) in faster {
        let sel = select(g, name);
        if sel.is_empty() {
            let labels = every_label(g);
            let near = evalbench_bundle::suggest::nearest(name, &labels.iter().map(String::as_str).collect::<Vec<_>>());
            return Err(PathError::NoSuchStep {
                name: name.clone(),
                near: near.into_iter().map(|n| n.to_string()).collect(),
            });
        }
        let matched = sel.apply(g, 1.0 - pct / 100.0, &mut sh);
        out.push(Faster { name: name.clone(), pct: *pct, matched });
    }
    Ok((sh, out))
}

/// The pass predicted with `faster` applied.
pub fn whatif(
    g: &Graph,
    measured: &CriticalPath,
    faster: &[(String, f64)],
    align: &dyn Clocks,
) -> Result<WhatIf, PathError> {
    let (sh, out) = shorten(g, faster)?;
    let p = g.path_by(measured.from_us, &sh, align)?;
    let measured_s = evalbench_bundle::num::s(measured.to_us.saturating_sub(measured.from_us) as f64 / 1e6);
    let predicted_s = evalbench_bundle::num::s(p.to_us.saturating_sub(p.from_us) as f64 / 1e6);
    // The predicted list's first step, whatever it is: naming the first one
    // not shortened instead read "led by resolve" above a list led by record_one.
    let critical_next = p.steps.first().map(PathStep::label);
    Ok(WhatIf {
        faster: out,
        measured_s,
        predicted_s,
        change_pct: evalbench_bundle::num::round_to(
            if measured_s > 0.0 { (predicted_s / measured_s - 1.0) * 100.0 } else { 0.0 },
            3,
        ),
        predicted: p.steps,
        critical_next,
        assumption: ASSUMPTION,
    })
}

/// For the report: what 10% and 50% faster would buy, for the top steps
/// on the path (spans and statements; waits are no work to make faster),
/// each shortened as `--faster` shortens it.
#[derive(Debug, Clone, Serialize)]
pub struct Buys {
    pub step: String,
    pub on_path_us: i64,
    pub saved_10_us: i64,
    pub saved_50_us: i64,
}

pub fn buys(g: &Graph, measured: &CriticalPath, top: usize) -> Vec<Buys> {
    let evaluated = measured.to_us.saturating_sub(measured.from_us);
    let mut scratch = Vec::new();
    measured
        .steps
        .iter()
        .filter(|s| s.process.is_some())
        .take(top)
        .filter_map(|s| {
            // The step as --faster names it, selected once for both shares.
            let sel = select(g, &s.label());
            if sel.is_empty() {
                return None;
            }
            // Only the end's time is needed: one pass over the laid-out graph, no path.
            let mut saved = |pct: f64| {
                let mut sh = Shorten::none(g);
                sel.apply(g, 1.0 - pct / 100.0, &mut sh);
                let end = g.end_by(&sh, &mut scratch)?;
                Some(evaluated.saturating_sub(end.saturating_sub(measured.from_us)))
            };
            Some(Buys {
                step: s.label(),
                on_path_us: s.on_path_us,
                saved_10_us: saved(10.0)?,
                saved_50_us: saved(50.0)?,
            })
        })
        .collect()
}
