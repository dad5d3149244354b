//! What the history keeps of a bundle: per pass run, the evaluated
//! seconds, every span total, every statement total, the evaluation_metric,
//! the alignment and the largest steps of its critical path. Read once from the bundle, written in one transaction.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use evalbench_bundle::{layout, Bundle, Fnv};

use crate::HistoryError;

/// One run of one pass (`cold-clean.3` is run 3 of `cold-clean`).
#[derive(Debug, Clone, PartialEq)]
pub struct PassRun {
    /// The base name: `cold-clean`.
    pub pass: String,
    /// 1 for `cold-clean`, k for `cold-clean.k`.
    pub repeat: i64,
    pub evaluated_s: Option<f64>,
    /// `<process> <span>` to its total, ms.
    pub spans: BTreeMap<String, f64>,
    /// Normalized statement to its pg_stat_statements total, ms.
    pub statements: BTreeMap<String, f64>,
    pub metric: Option<serde_json::Value>,
    /// nix's counters (run.json's `nix_stats`), when the pass evaluated with nix.
    pub counters: BTreeMap<String, f64>,
    pub offset_us: Option<i64>,
    pub bound_us: Option<i64>,
    /// The run's largest steps on its critical path (none where it has no path).
    pub path: Vec<evalbench_analyze::path::PathStep>,
}

/// A bundle, as the history stores it.
#[derive(Debug, Clone)]
pub struct BundleRecord {
    /// A hash of every pass's name and run.json: the same bundle gives the same digest.
    pub digest: String,
    /// The bundle's run time (the earliest evaluate request), Unix seconds.
    pub run_time: Option<i64>,
    pub runs: Vec<PassRun>,
    /// What the bundle measured (its provenance; unknown for older bundles).
    pub provenance: evalbench_bundle::Provenance,
    /// What reading it went past, with file and line (an unreadable
    /// run.json, whose run then keeps no evaluated seconds; malformed span lines).
    pub warnings: Vec<String>,
}

impl BundleRecord {
    pub fn read(bundle: &Bundle) -> Result<BundleRecord, HistoryError> {
        let mut runs = Vec::new();
        let mut h = Fnv.build_hasher();
        let (mut run_time, mut warnings): (Option<i64>, Vec<String>) = (None, Vec::new());
        for p in &bundle.passes {
            let run_json = std::fs::read(p.file(layout::RUN_JSON)).unwrap_or_default();
            h.write(p.name.as_bytes());
            h.write(&[0]);
            h.write(&run_json);
            // Streamed: a pass of millions of spans is only its totals here.
            let (scanned, totals) = evalbench_analyze::runs::totals_scanned(p, evalbench_bundle::TRACE_CHUNK);
            warnings.extend(scanned.warnings.iter().map(ToString::to_string));
            // A statements file that does not read is said, its run's statements left out.
            if let Err(e) = evalbench_analyze::runs::read_statements(p) {
                warnings.push(format!("{e}: its statements left out"));
            }
            // A bad run.json loses only itself: the run's spans, statements and
            // counters are kept, its evaluated seconds are not.
            let run = scanned.run.as_ref();
            if run.is_none() && totals.spans.is_empty() {
                continue;
            }
            let main = scanned.align.main();
            let base = layout::base_name(&p.name).to_string();
            let repeat = layout::run_number(&p.name) as i64;
            if let Some(t) = run.and_then(|r| r.requested_us) {
                run_time = Some(run_time.map_or(t / 1_000_000, |x| x.min(t / 1_000_000)));
            }
            let path = path_steps(p);
            let mut counters = evalbench_analyze::counters::of_run(run, &p.path).unwrap_or_default();
            // A counted pass: its seconds are Valgrind's and are not kept;
            // nix's instructions are, as the counter `instructions`.
            let counted = layout::is_counted(&p.name);
            if counted {
                add_instructions(p, &mut counters, &mut warnings);
            }
            runs.push(PassRun {
                path,
                pass: base,
                repeat,
                evaluated_s: if counted { None } else { evalbench_analyze::evaluated(run) },
                spans: totals.spans,
                statements: totals.statements,
                metric: evalbench_analyze::counters::evaluation_metric(run, &p.path),
                counters,
                offset_us: main.filter(|m| m.aligned).map(|m| m.offset_us),
                bound_us: main.filter(|m| m.aligned).and_then(|m| m.bound_us),
            });
        }
        // The runs that did not complete: never kept, and said.
        for d in &bundle.incomplete {
            if let evalbench_bundle::Outcome::Incomplete { ended, detail } = &d.outcome {
                warnings.push(format!("{}: {}: not kept ({detail})", d.path.display(), ended.key().replace('_', " ")));
            }
        }
        if runs.is_empty() {
            return Err(HistoryError::Invalid(format!(
                "{}: no pass with a readable run.json: nothing to keep (is it an evalbench bundle?)",
                bundle.source.display()
            )));
        }
        Ok(BundleRecord {
            digest: format!("{:016x}", h.finish()),
            run_time,
            runs,
            provenance: bundle.provenance(),
            warnings,
        })
    }
}

/// A run's critical path's steps, the first `PATH_STEPS_KEPT`: the path
/// needs the spans whole, so one run at a time, given up to the graph; a
/// run whose span files did not all read keeps no (partial) path.
fn path_steps(p: &evalbench_bundle::PassDir) -> Vec<evalbench_analyze::path::PathStep> {
    let (data, align) = evalbench_analyze::load(p, evalbench_analyze::Fields::Read);
    let partial = !data.unreadable_files.is_empty();
    let mut steps =
        if partial { Vec::new() } else { evalbench_analyze::path::critical_steps(data, &align).unwrap_or_default() };
    steps.truncate(crate::judge::PATH_STEPS_KEPT);
    steps
}

/// A counted run's instructions, as the counter `instructions`; a run
/// without counts, or whose counts do not read, is said.
fn add_instructions(p: &evalbench_bundle::PassDir, counters: &mut BTreeMap<String, f64>, warnings: &mut Vec<String>) {
    match evalbench_bundle::instructions::read(&p.path) {
        Ok(Some(i)) => {
            counters.insert(crate::judge::INSTRUCTIONS.to_string(), i.total() as f64);
        }
        Ok(None) => warnings
            .push(format!("{}: a counted run without instruction counts (no eval/cachegrind.*.out)", p.path.display())),
        Err(e) => warnings.push(e.to_string()),
    }
}
