//! A pass's runs as the page shows them, as one measurement: each run's
//! evaluated seconds in run order, their spread, the run nearest the
//! median, the trend and a warm-up left in. The same figures summary.txt
//! gives: evaluated seconds rounded as summary.json's, so that both name
//! the same median run.

use super::PassView;
use crate::drift::Trend;
use crate::spread::Spread;

impl PassView {
    /// The run's evaluated seconds (run.json's, where usable), at
    /// summary.json's precision; NaN where it has none: nothing stands in.
    pub fn evaluated_s(&self) -> f64 {
        crate::evaluated(self.run()).map_or(f64::NAN, evalbench_bundle::num::s)
    }
}

pub struct RunsOfPass {
    /// Each run's, in run order (NaN where a run has none).
    pub evaluated_s: Vec<f64>,
    /// Over the runs that have one.
    pub spread: Spread,
    /// The index of the run nearest the median (the first of two as near).
    pub median_run: usize,
    pub trend: Option<Trend>,
    /// The first runs that still lay above the rest's spread.
    pub warmup_runs: usize,
}

/// `runs`, one pass's, in run order.
pub fn runs_of_pass(runs: &[&PassView]) -> RunsOfPass {
    let evaluated_s: Vec<f64> = runs.iter().map(|p| p.evaluated_s()).collect();
    let spread = crate::spread::spread(&evaluated_s.iter().copied().filter(|x| x.is_finite()).collect::<Vec<_>>());
    RunsOfPass {
        spread,
        median_run: crate::over_runs::median_index(&evaluated_s),
        trend: crate::drift::trend(&evaluated_s),
        warmup_runs: crate::drift::warmup_runs(&evaluated_s),
        evaluated_s,
    }
}
