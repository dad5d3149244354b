//! A clean pass's headline figures over its runs, as Hydra charts them
//! (`nix-support/hydra-metrics`): the median evaluated seconds, the eval
//! subprocess's median peak RSS from the CI's evaluation_metric, and nix's
//! counts of its work (the median over runs, which for an exact count is
//! its value). The report writes them; their medians are made here.

use evalbench_bundle::{layout, nix_stats, Bundle, RunInfo};

/// nix's counts Hydra charts, with their unit.
pub const COUNTS: [(&str, &str); 3] = [("nrFunctionCalls", "calls"), ("nrThunks", "thunks"), ("gc.totalBytes", "B")];

/// One clean pass's medians over its runs; None where no run had the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct PassMetrics {
    pub pass: String,
    pub evaluated_s: Option<f64>,
    pub eval_peak_rss_kb: Option<f64>,
    /// Per count of [`COUNTS`] some run had: its name, unit and median.
    pub counts: Vec<(&'static str, &'static str, f64)>,
}

/// Every clean pass's medians, in pass order.
pub fn of_bundle(bundle: &Bundle) -> Vec<PassMetrics> {
    let median = |v: Vec<f64>| (!v.is_empty()).then(|| crate::verdict::median(&v));
    crate::runs::group(bundle)
        .into_iter()
        .filter(|(pass, _)| layout::is_clean(pass))
        .map(|(pass, dirs)| {
            // Each run's files on their own: a bad run.json loses its evaluated
            // seconds, not the counts and rows beside it.
            let runs: Vec<(Option<RunInfo>, &std::path::Path)> =
                dirs.iter().map(|d| (RunInfo::read(&d.file(layout::RUN_JSON)).ok(), d.path.as_path())).collect();
            let counters: Vec<nix_stats::Counters> =
                runs.iter().filter_map(|(r, dir)| crate::counters::of_run(r.as_ref(), dir)).collect();
            let metric =
                |(r, dir): &(Option<RunInfo>, &std::path::Path)| crate::counters::evaluation_metric(r.as_ref(), dir);
            PassMetrics {
                evaluated_s: median(runs.iter().filter_map(|(r, _)| crate::evaluated(r.as_ref())).collect()),
                eval_peak_rss_kb: median(
                    runs.iter().filter_map(|r| metric(r)?.get("eval_peak_rss_kb")?.as_f64()).collect(),
                ),
                counts: COUNTS
                    .iter()
                    .filter_map(|&(key, unit)| {
                        median(counters.iter().filter_map(|c| c.get(key).copied()).collect()).map(|m| (key, unit, m))
                    })
                    .collect(),
                pass,
            }
        })
        .collect()
}
