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
            let runs: Vec<RunInfo> = dirs.iter().filter_map(|d| RunInfo::read(&d.file(layout::RUN_JSON)).ok()).collect();
            let counters: Vec<nix_stats::Counters> = runs.iter().filter_map(|r| r.nix_stats.as_ref().and_then(nix_stats::from_json)).collect();
            PassMetrics {
                evaluated_s: median(runs.iter().filter_map(|r| r.evaluated_s).collect()),
                eval_peak_rss_kb: median(runs.iter().filter_map(|r| r.evaluation_metric.as_ref()?.get("eval_peak_rss_kb")?.as_f64()).collect()),
                counts: COUNTS
                    .iter()
                    .filter_map(|&(key, unit)| median(counters.iter().filter_map(|c| c.get(key).copied()).collect()).map(|m| (key, unit, m)))
                    .collect(),
                pass,
            }
        })
        .collect()
}
