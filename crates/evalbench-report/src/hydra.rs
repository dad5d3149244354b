//! `nix-support/hydra-metrics`: what Hydra charts per job with nothing else
//! installed. One line per metric, `NAME VALUE UNIT`: the evaluated seconds
//! of each clean pass (the median of its repeats) and the eval subprocess's
//! peak RSS from the CI's evaluation_metric, and nix's own counts of its
//! work (nrFunctionCalls, nrThunks, gc.totalBytes: the median over repeats,
//! which for an exact count is its value).

use std::fmt::Write as _;
use std::path::Path;

use evalbench_bundle::{layout, Bundle, RunInfo};

/// `nix-support/hydra-build-products`: the four downloads of a bundle in `out`.
pub fn build_products(out: &Path) -> String {
    format!(
        "file evalbench-bundle {}\nfile summary {}\nfile summary-json {}\nfile report {}\n",
        out.join(layout::ARCHIVE).display(),
        out.join(layout::SUMMARY_TXT).display(),
        out.join(layout::SUMMARY_JSON).display(),
        out.join(layout::REPORT_PAGE).display()
    )
}

pub fn metrics(bundle: &Bundle) -> String {
    let mut out = String::new();
    for (pass, dirs) in evalbench_analyze::runs::group(bundle) {
        if !layout::is_clean(&pass) {
            continue;
        }
        let runs: Vec<RunInfo> = dirs.iter().filter_map(|d| RunInfo::read(&d.file(layout::RUN_JSON)).ok()).collect();
        let evaluated: Vec<f64> = runs.iter().filter_map(|r| r.evaluated_s).collect();
        if !evaluated.is_empty() {
            let _ = writeln!(out, "evalbench.{pass}.evaluated {:.6} s", evalbench_analyze::verdict::median(&evaluated));
        }
        let rss: Vec<f64> = runs.iter().filter_map(|r| r.evaluation_metric.as_ref()?.get("eval_peak_rss_kb")?.as_f64()).collect();
        if !rss.is_empty() {
            let _ = writeln!(out, "evalbench.{pass}.eval_peak_rss {:.0} KiB", evalbench_analyze::verdict::median(&rss));
        }
        let counters: Vec<evalbench_bundle::nix_stats::Counters> =
            runs.iter().filter_map(|r| r.nix_stats.as_ref().and_then(evalbench_bundle::nix_stats::from_json)).collect();
        for (key, unit) in [("nrFunctionCalls", "calls"), ("nrThunks", "thunks"), ("gc.totalBytes", "B")] {
            let v: Vec<f64> = counters.iter().filter_map(|c| c.get(key).copied()).collect();
            if !v.is_empty() {
                let _ = writeln!(out, "evalbench.{pass}.nix.{key} {:.0} {unit}", evalbench_analyze::verdict::median(&v));
            }
        }
    }
    out
}
