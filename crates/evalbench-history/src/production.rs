//! A production evaluation (Gradient's diagnostic report) as the history
//! keeps it: one run of the pass `production`, its evaluated seconds from
//! the evaluation's own timeline and nix's counts from `evaluation_metric`
//! (on which change points are found, as for counted runs). Its series is
//! `gradient:<task>/<wildcard>` on the machine `production`, its commit the
//! report's, dated by the evaluation's `created_at` (UTC).

use std::hash::{BuildHasher, Hasher};

use evalbench_analyze::production::Production;
use evalbench_bundle::Fnv;

use crate::record::{BundleRecord, PassRun};

/// The pass a production evaluation is kept under.
pub const PASS: &str = "production";
/// The machine a production evaluation is kept under, unless told another.
pub const MACHINE: &str = "production";

/// The benchmark (series) of a production evaluation: `gradient:<task>/<wildcard>`.
pub fn benchmark(p: &Production) -> String {
    format!("gradient:{}/{}", p.task.as_deref().unwrap_or("unknown-task"), p.wildcard.as_deref().unwrap_or("*"))
}

/// The record of a production evaluation. Its digest is the evaluation's id,
/// so the same evaluation downloaded again is the same run (added once).
pub fn record(p: &Production) -> BundleRecord {
    let mut h = Fnv.build_hasher();
    h.write(b"gradient-diagnostic-report\0");
    h.write(p.evaluation.as_bytes());
    let mut provenance = evalbench_bundle::Provenance::default();
    provenance.workload.flake = Some(benchmark(p));
    provenance.workload.rev = p.commit.clone();
    provenance.machine.hostname = Some(MACHINE.to_string());
    let mut warnings = p.warnings.clone();
    if p.counters.is_empty() {
        warnings.push(format!("{}: evaluation_metric holds no counts: only the time is kept", p.file));
    }
    BundleRecord {
        digest: format!("{:016x}", h.finish()),
        run_time: p.created_at_us.map(|us| us.div_euclid(1_000_000)),
        runs: vec![PassRun {
            pass: PASS.to_string(),
            repeat: 1,
            evaluated_s: p.evaluated_s,
            spans: Default::default(),
            statements: Default::default(),
            metric: None,
            counters: p.counters.clone(),
            offset_us: None,
            bound_us: None,
            path: Vec::new(),
        }],
        provenance,
        warnings,
    }
}
