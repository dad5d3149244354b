//! `nix-support/hydra-metrics`: what Hydra charts per job with nothing else
//! installed. One line per metric, `NAME VALUE UNIT`: the evaluated seconds
//! of each clean pass (the median of its repeats) and the eval subprocess's
//! peak RSS from the CI's evaluation_metric, and nix's own counts of its
//! work (nrFunctionCalls, nrThunks, gc.totalBytes: the median over repeats,
//! which for an exact count is its value); the medians are
//! `analyze::metrics`'; and each counted pass's instructions (their median,
//! `analyze::instructions`', the figure summary.txt gives); and first,
//! every pass's completed runs (no figure comes from any other run). And
//! `hydra-build-products`.

use std::fmt::Write as _;
use std::path::Path;

use evalbench_bundle::layout;

use evalbench_analyze::metrics::PassMetrics;

use crate::summary::Summary;

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

pub fn metrics(summary: &Summary, medians: &[PassMetrics]) -> String {
    let mut out = String::new();
    // Every pass: how many runs completed. A pass with none has no other line.
    for st in &summary.pass_status {
        let _ = writeln!(out, "evalbench.{}.completed_runs {} runs", st.pass, st.completed);
    }
    for m in medians {
        let pass = &m.pass;
        if let Some(e) = m.evaluated_s {
            let _ = writeln!(out, "evalbench.{pass}.evaluated {e:.6} s");
        }
        if let Some(rss) = m.eval_peak_rss_kb {
            let _ = writeln!(out, "evalbench.{pass}.eval_peak_rss {rss:.0} KiB");
        }
        for (key, unit, v) in &m.counts {
            let _ = writeln!(out, "evalbench.{pass}.nix.{key} {v:.0} {unit}");
        }
    }
    // A counted run that does not read is left out here and named among
    // summary.txt's warnings.
    for c in &summary.instructions {
        let _ = writeln!(out, "evalbench.{}.nix.instructions {:.0} instructions", c.pass, c.median);
    }
    out
}
