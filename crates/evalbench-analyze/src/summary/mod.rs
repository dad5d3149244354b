//! The summary of a bundle as a model: per pass and run what summary.txt,
//! summary.json and Hydra's metrics say (the answer over runs, the path,
//! the levers, counters, instructions, phases, drift), built here once
//! ([`summary`]) and only rendered by the report. Its JSON is this model
//! serialized: summary.json's shape is these types'.

mod build;

use serde::Serialize;

use crate::path::whatif::Buys;
use crate::path::{ByProcess, CriticalPath, PathError, PathStep};
use crate::{span_stats, Alignment, HostAlignment, PassData, SpanStat, Warning};
use evalbench_bundle::layout;

pub use build::{summary, PassDone, SummaryError, TraceSink};

#[derive(Debug, Clone, Serialize)]
pub struct PassSummary {
    pub pass: String,
    /// What the machine did beside the run (run.json's `machine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<evalbench_bundle::MachineState>,
    pub cold: bool,
    pub clean: bool,
    /// Seconds until the evaluation left EvaluatingDerivation (run.json), else the traced wall time.
    pub wall_s: f64,
    /// Where `wall_s` came from: "run.json" or "spans".
    pub wall_source: &'static str,
    pub evaluated_s: Option<f64>,
    /// First span start to last span end, on the server clock.
    pub traced_wall_s: f64,
    pub evaluation_id: Option<String>,
    pub status: Option<String>,
    pub worker_offset_us: i64,
    pub offset_bound_us: Option<i64>,
    pub aligned: bool,
    pub upstream_pairs: usize,
    pub downstream_pairs: usize,
    pub drift_us: Option<i64>,
    /// Every worker host's alignment (one entry per host).
    pub hosts: Vec<HostAlignment>,
    pub evaluation_metric: Option<serde_json::Value>,
    /// nix's counters, summed over the pass's nix evaluations (exact counts
    /// but for `cpuTime` and `gc.heapSize`).
    pub nix_stats: Option<serde_json::Value>,
    pub span_count: usize,
    pub processes: usize,
    pub dropped_spans: u64,
    pub malformed_lines: u64,
    /// The capture window's length (run.json), and the spans left out of
    /// every figure here for starting outside it.
    pub window_s: Option<f64>,
    pub outside_window_spans: u64,
    /// Why the pass did not finish (run.json), the target's processes that
    /// died in it, and the captures that could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dead: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    pub spans: Vec<SpanStat>,
    /// `spans` by own time, largest first (the total, then the name break
    /// ties): the order the span tables show them in, so that nested spans
    /// do not stack up at the top. Set once the path gave own times.
    #[serde(skip)]
    pub by_own: Vec<u32>,
    /// What the evaluated time waited on (report's `summary::path`), or why it is unknown.
    #[serde(serialize_with = "path_or_reason")]
    pub critical_path: Result<PathSummary, NoPath>,
}

/// The path, or `{"none": why}`.
fn path_or_reason<S: serde::Serializer>(p: &Result<PathSummary, NoPath>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Ok(p) => p.serialize(s),
        Err(why) => serde_json::json!({ "none": why.to_string() }).serialize(s),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct NotSummarized {
    pub pass: String,
    pub reason: String,
}

/// A pass run several times (`run --repeat`): medians and spreads.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatGroup {
    pub pass: String,
    pub runs: usize,
    /// The runs' evaluated seconds (`wall_s` in summary.json, as it has always been).
    #[serde(rename = "wall_s")]
    pub evaluated_s: crate::verdict::Spread,
    /// Each run's evaluated seconds, in the order they ran.
    pub runs_s: Vec<f64>,
    /// The same as drawn on a line of text: at most [`RUNS_DRAWN`] values,
    /// runs beyond folded in pairs by their mean.
    #[serde(skip)]
    pub runs_drawn: Vec<f64>,
    /// The first runs that still lay above the rest's spread (a warm-up
    /// `run --warmup` did not leave out; `analyze::drift::warmup_runs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub warmup_runs: usize,
    /// Per span: the spread of its own time and of its total over the runs,
    /// in µs, by median own time (the pass's median path is its `answers` entry).
    pub spans: Vec<crate::over_runs::SpanSpread>,
    /// Set when the runs wrote different numbers of `.drv` files to the
    /// nix store (`analyze::store_writes`): they did not evaluate alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(serialize_with = "as_sentence")]
    pub store_writes: Option<crate::store_writes::RunsApart>,
    /// The machine beside the runs: other processes' CPU, the busy runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::machine::SideMachine>,
    /// The evaluated seconds' trend in run order, where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trend: Option<crate::drift::Trend>,
}

/// Values a line of summary.txt draws of a pass's runs (its 160 columns
/// less the words around them).
pub const RUNS_DRAWN: usize = 100;

/// `runs` folded in pairs by their mean until at most [`RUNS_DRAWN`] are left.
fn drawn(runs: &[f64]) -> Vec<f64> {
    let mut v = runs.to_vec();
    while v.len() > RUNS_DRAWN {
        v = v.chunks(2).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
    }
    v
}

impl RepeatGroup {
    /// Groups summarized passes by base name; only groups of two or more.
    pub fn group(passes: &[PassSummary]) -> Vec<RepeatGroup> {
        let mut out = Vec::new();
        for (base, runs) in layout::pass_groups(passes, |p| &p.pass) {
            if runs.len() < 2 {
                continue;
            }
            let spans = crate::over_runs::span_spreads(&runs.iter().map(|r| r.spans.as_slice()).collect::<Vec<_>>());
            // Only runs.json's evaluated seconds: nothing stands in for a run without them.
            let runs_s: Vec<f64> = runs.iter().filter_map(|r| r.evaluated_s).collect();
            out.push(RepeatGroup {
                warmup_runs: crate::drift::warmup_runs(&runs_s),
                store_writes: {
                    use crate::store_writes::{drvs_written, runs_apart};
                    runs_apart(
                        &runs
                            .iter()
                            .map(|r| (r.pass.as_str(), drvs_written(r.evaluation_metric.as_ref())))
                            .collect::<Vec<_>>(),
                    )
                },
                machine: crate::machine::SideMachine::of(&runs.iter().map(|r| r.machine).collect::<Vec<_>>()),
                trend: crate::drift::trend(&runs_s),
                pass: base,
                runs: runs.len(),
                evaluated_s: crate::verdict::spread(&runs_s).rounded(6),
                runs_drawn: drawn(&runs_s),
                runs_s,
                spans,
            });
        }
        out
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub evalbench_version: &'static str,
    pub bundle: String,
    /// What the bundle measured and where (its first pass's run.json); all unknown for older bundles.
    pub provenance: evalbench_bundle::Provenance,
    pub passes: Vec<PassSummary>,
    /// Per clean pass (all its runs), the answer: median evaluated time,
    /// median critical path, what halving its largest step would buy.
    pub answers: Vec<crate::over_runs::PassAnswer>,
    /// Passes run more than once, with medians and spreads.
    pub repeats: Vec<RepeatGroup>,
    pub not_summarized: Vec<NotSummarized>,
    /// nix's counters of every pass that has them, instrumented ones too:
    /// counts are not distorted by the captures that distort times.
    pub nix_stats: Vec<PassCounters>,
    /// The PostgreSQL settings of every pass given some (`--pg-setting`), as the server showed them.
    pub pg_settings: Vec<PassSettings>,
    pub warnings: Vec<Warning>,
    /// nix's instructions in the counted passes (`run --counted`): exact
    /// counts of its work, beside the clean passes' times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<crate::instructions::CountedPass>,
    /// Every pass the bundle holds or its plan names: how its runs ended,
    /// how many completed of how many planned (`analyze::outcomes`).
    pub pass_status: Vec<crate::outcomes::PassRuns>,
    /// Per instrumented pass with nix's profile: the slow attributes, named.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<crate::attributes::PassAttributes>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassSettings {
    pub pass: String,
    pub settings: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassCounters {
    pub pass: String,
    pub counters: serde_json::Value,
    /// Evaluators recycled past `--eval-max-rss`: killed, they wrote no
    /// statistics, so their work is not in `counters`.
    #[serde(skip_serializing_if = "is_zero")]
    pub recycled_evaluators: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The answer for every clean pass, all its runs, from their summaries.
pub fn answers(passes: &[PassSummary]) -> Vec<crate::over_runs::PassAnswer> {
    layout::pass_groups(passes, |p| &p.pass)
        .into_iter()
        .map(|(base, runs)| {
            let runs: Vec<crate::over_runs::RunPath> = runs
                .into_iter()
                .map(|p| crate::over_runs::RunPath {
                    name: &p.pass,
                    evaluated_s: p.evaluated_s,
                    path: p
                        .critical_path
                        .as_ref()
                        .ok()
                        .map(|c| (c.steps.as_slice(), c.processes.as_slice(), c.buys.as_slice())),
                })
                .collect();
            crate::over_runs::answer(&base, &runs)
        })
        .collect()
}

impl PassSummary {
    /// The pass's summary, its critical path computed already (the
    /// spans are given up to it first: `analyze::path::critical_path`).
    pub fn with_path(
        pass: &PassData,
        alignment: &Alignment,
        critical_path: Result<PathSummary, NoPath>,
    ) -> PassSummary {
        let traced_wall_s =
            pass.extent(alignment).map(|(first, last)| last.saturating_sub(first) as f64 / 1e6).unwrap_or(0.0);
        let evaluated_s = crate::evaluated(pass.run.as_ref());
        let runner = pass.run.as_ref().and_then(|r| r.runner.as_ref());
        let main = alignment.main();
        PassSummary {
            machine: runner.and_then(|r| r.machine),
            pass: pass.name.clone(),
            cold: layout::is_cold(&pass.name),
            clean: layout::is_clean(&pass.name),
            wall_s: evalbench_bundle::num::s(evaluated_s.unwrap_or(traced_wall_s)),
            wall_source: if evaluated_s.is_some() { "run.json" } else { "spans" },
            evaluated_s: evaluated_s.map(evalbench_bundle::num::s),
            traced_wall_s: evalbench_bundle::num::s(traced_wall_s),
            evaluation_id: pass.run.as_ref().and_then(|r| r.evaluation_id.clone()),
            status: pass.run.as_ref().and_then(|r| r.status.clone()),
            worker_offset_us: main.map_or(0, |h| h.offset_us),
            offset_bound_us: main.and_then(|h| h.bound_us),
            aligned: !alignment.hosts.is_empty() && alignment.hosts.iter().all(|h| h.aligned),
            upstream_pairs: main.map_or(0, |h| h.upstream_pairs),
            downstream_pairs: main.map_or(0, |h| h.downstream_pairs),
            drift_us: main.and_then(|h| h.drift_us),
            hosts: alignment.hosts.clone(),
            evaluation_metric: crate::counters::evaluation_metric(pass.run.as_ref(), &pass.dir),
            nix_stats: crate::counters::of_pass(pass).map(|c| evalbench_bundle::nix_stats::to_json(&c)),
            span_count: pass.span_count(),
            processes: pass.streams.len(),
            dropped_spans: pass.dropped,
            malformed_lines: pass.malformed_total,
            window_s: crate::window(pass.run.as_ref())
                .map(|(a, b)| evalbench_bundle::num::s(b.saturating_sub(a) as f64 / 1e6)),
            outside_window_spans: pass.outside_window,
            failure: runner.and_then(|r| r.failure.clone()),
            dead: runner.map(|r| r.dead.clone()).unwrap_or_default(),
            problems: runner.map(|r| r.problems.clone()).unwrap_or_default(),
            spans: span_stats(&pass.streams),
            by_own: Vec::new(),
            critical_path,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PathSummary {
    /// The path's segments added up, and the evaluated time they tile.
    pub total_us: i64,
    pub evaluated_us: i64,
    /// How far a cross-host edge may be off (the alignment's bound).
    pub bound_us: Option<i64>,
    pub stretches: usize,
    /// Time on the path per process (`process: null` for the waits).
    pub processes: Vec<ByProcess>,
    pub steps: Vec<PathStep>,
    /// What making the top steps 10% and 50% faster would buy on this
    /// run's path (`whatif --faster`), for the median over runs.
    pub buys: Vec<Buys>,
    /// How the path was made where the bundle lacked something: nesting
    /// inferred, the start taken from the spans, a rounded end, an
    /// unreadable pg.pcap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The path as summary.json keeps it, with what its top steps would buy:
/// why there is none, as its message.
pub fn path_summary(p: &Result<(CriticalPath, Vec<Buys>), PathError>) -> Result<PathSummary, NoPath> {
    let (p, buys) = p.as_ref().map_err(|e| NoPath::Path(e.clone()))?;
    Ok(PathSummary {
        buys: buys.clone(),
        total_us: p.total_us,
        evaluated_us: p.to_us.saturating_sub(p.from_us),
        bound_us: p.bound_us,
        stretches: p.segments.len(),
        processes: p.by_process(),
        steps: p.steps.clone(),
        note: p.note.clone(),
    })
}

/// Why a run's summary has no critical path (summary.json's `{"none": why}`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoPath {
    #[error("{0}")]
    Path(PathError),
    /// Some of its span files did not read: a partial path would pull a median down.
    #[error("partial: {} did not read; this run's path is left out of every median", .0.join(", "))]
    Partial(Vec<String>),
    /// While the path is walked beside the statistics: replaced by the path
    /// or its reason before the summary is written.
    #[error("not walked yet")]
    Pending,
}

/// A finding serialized as its sentence (summary.json has always held the words).
fn as_sentence<S: serde::Serializer, T: std::fmt::Display>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_some(&v.to_string()),
        None => s.serialize_none(),
    }
}

impl PassSummary {
    /// Sets [`PassSummary::by_own`] from the spans' own times as they are now.
    pub fn rank_by_own(&mut self) {
        let spans = &self.spans;
        let mut order: Vec<u32> = (0..spans.len() as u32).collect();
        order.sort_by(|&a, &b| {
            let (a, b) = (&spans[a as usize], &spans[b as usize]);
            b.own_us.cmp(&a.own_us).then_with(|| b.total_us.cmp(&a.total_us)).then_with(|| a.name.cmp(&b.name))
        });
        self.by_own = order;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_beyond_a_line_are_folded_in_pairs_by_their_mean() {
        assert_eq!(super::drawn(&[1.0, 2.0, 8.0]), vec![1.0, 2.0, 8.0]);
        let v: Vec<f64> = (0..400).map(f64::from).collect();
        let d = super::drawn(&v);
        assert_eq!(d.len(), 400 / 4, "folded twice");
        assert_eq!(d[0], 1.5, "the mean of 0, 1, 2, 3");
        assert_eq!(super::drawn(&v[..101]).len(), 51, "an odd run out keeps its own value");
    }
}
