//! How each pass's runs ended, against how many the run planned: what a
//! pass's first line says before any figure (docs/faults.md). A figure
//! comes only from runs that completed; this says how many did, of how
//! many, and what became of the others.

use serde::Serialize;

use evalbench_bundle::{layout, Bundle, Ended, Outcome, RunInfo};

/// A run's evaluated seconds, where its run.json gives a usable number
/// (finite, not negative). Nothing stands in for it: a run without it is
/// left out of the evaluated figure and named.
pub fn evaluated(run: Option<&RunInfo>) -> Option<f64> {
    run.and_then(|r| r.evaluated_s).filter(|s| s.is_finite() && *s >= 0.0)
}

/// One run that gives no figure, or no evaluated one: which, and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunEnd {
    /// The run as its directory is named (`cold-clean.7`, `warmup/cold-clean`).
    pub run: String,
    /// How it ended; None: it completed (or may have), its evaluated seconds unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    /// Why, in one line.
    pub detail: String,
}

/// How a pass's runs ended, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PassStatus {
    /// Every run completed (as many as planned, where a plan is recorded).
    Complete,
    /// A run of it (or its warm-up) ended so.
    Ended(Ended),
    /// Planned, never started: the run stopped before it.
    NotRun,
}

impl PassStatus {
    /// The word a pass's first line opens with; None when complete.
    pub fn word(self) -> Option<&'static str> {
        match self {
            PassStatus::Complete => None,
            PassStatus::Ended(e) => Some(e.word()),
            PassStatus::NotRun => Some("NOT RUN"),
        }
    }
}

/// A pass's runs, as they ended.
#[derive(Debug, Clone, Serialize)]
pub struct PassRuns {
    pub pass: String,
    pub status: PassStatus,
    /// Runs that completed.
    pub completed: usize,
    /// Runs the run planned (its recorded plan); None where the bundle has
    /// no plan (Gradient's bundles).
    pub planned: Option<usize>,
    /// Runs that did not complete, and a warm-up that did not: in no figure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<RunEnd>,
    /// Runs whose evaluated seconds are unknown (run.json missing, unreadable,
    /// or its evaluated_s unusable): out of the evaluated figure only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_evaluated: Vec<RunEnd>,
}

impl PassRuns {
    /// `over 6 of 40 runs`, `over 3 runs`, `one run`: what a figure over
    /// the completed runs says it is over.
    pub fn over(&self, runs: usize) -> String {
        let runs_of = |n: usize| if n == 1 { "1 run".to_string() } else { format!("{n} runs") };
        match self.planned {
            Some(n) if n != runs => format!("over {runs} of {}", runs_of(n)),
            None if self.status != PassStatus::Complete => format!("over {} (plan not recorded)", runs_of(runs)),
            _ if runs == 1 => "one run".to_string(),
            _ => format!("over {runs} runs"),
        }
    }
}

fn end_of(dir: &evalbench_bundle::PassDir, prefix: &str) -> RunEnd {
    let run = format!("{prefix}{}", dir.name);
    match &dir.outcome {
        Outcome::Incomplete { ended, detail } => RunEnd { run, ended: Some(*ended), detail: detail.clone() },
        Outcome::NoEvaluated { why } => RunEnd { run, ended: None, detail: why.clone() },
        Outcome::Completed => RunEnd { run, ended: None, detail: String::new() },
    }
}

/// Every pass the bundle holds or its plan names, in run order.
pub fn of_bundle(bundle: &Bundle) -> Vec<PassRuns> {
    let plan = bundle.provenance().plan;
    let mut names: Vec<String> = plan.passes.clone();
    for d in bundle.every_run() {
        let base = layout::base_name(&d.name).to_string();
        if !names.contains(&base) {
            names.push(base);
        }
    }
    names.sort_by_key(|n| layout::order_key(n));
    // How the run as a whole ended: a pass it stopped short of its plan ended so too.
    let stopped = bundle.every_run().filter_map(|d| match &d.outcome {
        Outcome::Incomplete { ended, .. } => Some(*ended),
        _ => None,
    });
    let stopped = stopped.max_by_key(|e| e.rank());
    names
        .into_iter()
        .map(|pass| {
            let of = |d: &&evalbench_bundle::PassDir| layout::base_name(&d.name) == pass;
            let completed = bundle.passes.iter().filter(of).filter(|d| d.outcome.completed()).count();
            let no_evaluated: Vec<RunEnd> =
                bundle.passes.iter().filter(of).filter(|d| !d.outcome.completed()).map(|d| end_of(d, "")).collect();
            let prefix = format!("{}/", layout::WARMUP_DIR);
            let mut incomplete: Vec<RunEnd> = bundle.incomplete.iter().filter(of).map(|d| end_of(d, "")).collect();
            incomplete
                .extend(bundle.warmups.iter().filter(of).filter(|d| !d.outcome.counts()).map(|d| end_of(d, &prefix)));
            let planned = bundle.planned_runs(&plan, &pass);
            let worst = incomplete.iter().filter_map(|r| r.ended).max_by_key(|e| e.rank());
            let ran = completed + no_evaluated.len();
            let short = planned.is_some_and(|n| ran < n);
            let status = match (worst, stopped) {
                (Some(e), _) => PassStatus::Ended(e),
                (None, _) if ran == 0 => PassStatus::NotRun,
                (None, Some(e)) if short => PassStatus::Ended(e),
                _ => PassStatus::Complete,
            };
            PassRuns { pass, status, completed, planned, incomplete, no_evaluated }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_says_what_it_is_over() {
        let p = |status, planned| PassRuns {
            pass: "cold-clean".into(),
            status,
            completed: 6,
            planned,
            incomplete: vec![],
            no_evaluated: vec![],
        };
        assert_eq!(p(PassStatus::Ended(Ended::Interrupted), Some(40)).over(6), "over 6 of 40 runs");
        assert_eq!(p(PassStatus::Complete, Some(6)).over(6), "over 6 runs");
        assert_eq!(p(PassStatus::Complete, Some(1)).over(1), "one run");
        assert_eq!(p(PassStatus::Complete, None).over(3), "over 3 runs");
        assert_eq!(p(PassStatus::Ended(Ended::Failed), None).over(3), "over 3 runs (plan not recorded)");
        assert_eq!(p(PassStatus::Ended(Ended::Failed), Some(2)).over(1), "over 1 of 2 runs");
    }
}
