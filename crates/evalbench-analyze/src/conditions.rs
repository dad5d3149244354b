//! Under what conditions a pair of passes was measured, and so what their
//! times may be called: both sides' machine (a busy side gets no time
//! verdict), the pass's drift (between sessions, the bound every row is
//! held to), and each side's trend in run order, named.

use serde::Serialize;

use crate::drift::{pass_bound, trend, DriftBound, RowRuns, Trend};
use crate::machine::SideMachine;
use crate::runs::Samples;
use crate::verdict::Rules;

/// A side's trend of its evaluated seconds.
#[derive(Debug, Clone, Serialize)]
pub struct SideTrend {
    pub side: &'static str,
    #[serde(flatten)]
    pub trend: Trend,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct Conditions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_a: Option<SideMachine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_b: Option<SideMachine>,
    /// A side was busy (`SideMachine::busy`): no time of the pass is
    /// judged. Its JSON says why in words (`report::output::worded`).
    #[serde(skip)]
    pub withheld: bool,
    /// Between sessions: the largest drift measured in the pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftBound>,
    /// The evaluated seconds' trends in run order, each side that has one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trends: Vec<SideTrend>,
    /// Sides whose first counted runs still lay above the rest (a warm-up
    /// the plan's `--warmup` did not cover): how many.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warmup: Vec<(&'static str, usize)>,
    /// Interleaved: each side's runs on each of the session's two targets
    /// (run.json's `instance`), where both sides ran on both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crossed: Option<[[usize; 2]; 2]>,
    /// Per side, the runs whose evaluated seconds are unknown (run.json
    /// gave none, or could not be read): left out of the evaluated verdict.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_evaluated: Vec<(&'static str, Vec<String>)>,
}

impl Conditions {
    /// Measured from both sides' samples; `between_sessions` when A and B
    /// come from two sessions (the drift bound applies only then).
    pub fn of(a: &Samples, b: &Samples, between_sessions: bool, floor_ms: f64) -> Conditions {
        let (machine_a, machine_b) = (SideMachine::of(&a.machine), SideMachine::of(&b.machine));
        let withheld = [&machine_a, &machine_b].iter().any(|m| m.as_ref().is_some_and(|m| m.busy()));
        let drift = between_sessions
            .then(|| {
                let mut rows = Vec::new();
                for (ma, mb) in [(&a.spans, &b.spans), (&a.statements, &b.statements), (&a.path, &b.path)] {
                    for (k, va) in ma {
                        if let Some(vb) = mb.get(k) {
                            rows.push(RowRuns { what: k, a: va, b: vb, floor: floor_ms });
                        }
                    }
                }
                pass_bound((&a.evaluated_s, &b.evaluated_s), &rows)
            })
            .flatten();
        let trends = [("A", &a.evaluated_s), ("B", &b.evaluated_s)]
            .into_iter()
            .filter_map(|(side, v)| trend(v).map(|trend| SideTrend { side, trend }))
            .collect();
        let warmup = [("A", &a.evaluated_s), ("B", &b.evaluated_s)]
            .into_iter()
            .map(|(side, v)| (side, crate::drift::warmup_runs(v)))
            .filter(|w| w.1 > 0)
            .collect();
        let no_evaluated = [("A", &a.no_evaluated), ("B", &b.no_evaluated)]
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(s, v)| (s, v.clone()))
            .collect();
        Conditions { machine_a, machine_b, withheld, drift, trends, warmup, crossed: crossed(a, b), no_evaluated }
    }

    /// The rules of this pass's time verdicts.
    pub fn rules(&self, base: Rules) -> Rules {
        Rules { withheld: self.withheld, pass_drift: self.drift.as_ref().map(|d| d.fraction), ..base }
    }
}

/// Each side's runs on target 0 and on target 1, where both sides ran on both.
fn crossed(a: &Samples, b: &Samples) -> Option<[[usize; 2]; 2]> {
    let count = |s: &Samples| {
        let on = |t| s.instance.iter().filter(|i| **i == Some(t)).count();
        [on(0), on(1)]
    };
    let (ca, cb) = (count(a), count(b));
    (ca.iter().chain(&cb).all(|n| *n > 0)).then_some([ca, cb])
}
