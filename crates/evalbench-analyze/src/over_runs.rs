//! A pass made many times is one measurement: its median evaluated time,
//! the run nearest that median, its critical path's steps by their median
//! time on the path, and what halving the largest step would buy, the
//! median of the prediction made on each run's own path. summary.txt,
//! summary.json, the report's first screen and `whatif` all print these
//! figures from here, so that a pass has one set of numbers wherever it is
//! shown (each had computed its own, and they disagreed).

use serde::Serialize;

use crate::path::whatif::Buys;
use std::collections::HashMap;

use crate::path::{ByProcess, PathStep, StepId};
use crate::spread::{median, spread, Spread};

/// Steps of each run whose speed-up is predicted (`whatif::buys`), for
/// summary.json, the page and whatif alike: the answer's lever is the
/// largest of the pass's median path, found among every run's top few, and
/// the page's table shows five (a run whose own top five leave a step out
/// is not counted for it, and the table says so). Each costs two schedules
/// of the run's graph (10% and 50%): at 133k spans a run, 8 had made
/// summarize 2.9x slower than before it predicted anything (bench/answer.sh).
pub const BUYS: usize = 5;

/// One run as the answer reads it: its evaluated seconds, and (where it has
/// one) its critical path's steps and processes and what making its top
/// steps faster would buy on it.
#[derive(Debug, Clone, Copy)]
pub struct RunPath<'a> {
    pub name: &'a str,
    /// run.json's evaluated seconds; None where it gives none usable (the
    /// run is then left out of the evaluated figure, and named).
    pub evaluated_s: Option<f64>,
    pub path: Option<(&'a [PathStep], &'a [ByProcess], &'a [Buys])>,
}

/// A step over a pass's runs: its median time on the path (0 in a run
/// whose path missed it), the runs' range, and in how many runs it was on
/// the path at all.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct StepOverRuns {
    pub step: String,
    pub median_on_path_us: i64,
    pub min_on_path_us: i64,
    pub max_on_path_us: i64,
    pub median_share: f64,
    pub on_path_runs: usize,
    pub runs: usize,
}

/// A process's (or the waits') time on the path over a pass's runs.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessOverRuns {
    /// None: the waits between spans.
    pub process: Option<String>,
    pub median_on_path_us: i64,
    pub median_share: f64,
}

/// What making one step faster would buy, predicted on each run that
/// predicted it (`whatif --faster STEP=PCT` on that run's own path).
#[derive(Debug, Clone, Serialize)]
pub struct Lever {
    pub step: String,
    /// The evaluated time saved with the step 10% and 50% faster, µs.
    pub saved_10_us: Spread,
    pub saved_50_us: Spread,
    /// Runs whose prediction is counted, of `runs` (a run whose own top
    /// steps left the step out predicted nothing for it).
    pub counted: usize,
    pub runs: usize,
}

/// The answer for one pass.
#[derive(Debug, Clone, Serialize)]
pub struct PassAnswer {
    pub pass: String,
    pub runs: usize,
    /// The evaluated seconds over the runs.
    pub evaluated_s: Spread,
    /// The run nearest the median (the first of two as near), as its
    /// directory is named, and its number in the pass (1-based).
    pub median_run: String,
    pub median_run_number: usize,
    /// Runs with a critical path, of `runs`.
    pub with_path: usize,
    /// The runs without one (summary.json says why, per run): out of the path's medians.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_path: Vec<String>,
    /// Runs whose evaluated seconds are unknown (run.json gave none usable,
    /// or could not be read): left out of `evaluated_s`, nothing standing in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub no_evaluated: Vec<String>,
    /// The path's steps by median time on it, largest first.
    pub steps: Vec<StepOverRuns>,
    pub processes: Vec<ProcessOverRuns>,
    /// Every step's median on the path, added: not the median evaluated
    /// time (a sum of medians is not the median of sums), said where shown.
    pub steps_median_sum_us: i64,
    /// Halving the largest span or statement on the path (waits are no work to make faster).
    pub lever: Option<Lever>,
}

/// A run's evaluated seconds, run.json's where usable ([`crate::evaluated`]),
/// at their unit's precision.
pub fn evaluated_of(data: &crate::PassData) -> Option<f64> {
    crate::evaluated(data.run.as_ref()).map(evalbench_bundle::num::s)
}

/// The run nearest the median of `evaluated` (the first of two as near).
pub fn median_index(evaluated: &[f64]) -> usize {
    let m = median(&evaluated.iter().copied().filter(|x| x.is_finite()).collect::<Vec<_>>());
    (0..evaluated.len()).min_by(|&i, &j| dist(evaluated[i], m).total_cmp(&dist(evaluated[j], m))).unwrap_or(0)
}

fn dist(x: f64, m: f64) -> f64 {
    if x.is_finite() {
        (x - m).abs()
    } else {
        f64::INFINITY
    }
}

/// Each step's figures over the runs with a path, largest median first.
pub fn steps_over_runs(paths: &[&[PathStep]]) -> Vec<StepOverRuns> {
    // Each run's steps by id, once: a step is matched across runs by its
    // (process, name), not by the label it is shown as.
    let by_id: Vec<HashMap<StepId<'_>, &PathStep>> =
        paths.iter().map(|p| p.iter().map(|s| (s.id(), s)).collect()).collect();
    let mut ids: Vec<(StepId<'_>, String)> = paths.iter().flat_map(|p| p.iter().map(|s| (s.id(), s.label()))).collect();
    ids.sort();
    ids.dedup();
    let mut out: Vec<StepOverRuns> = ids
        .into_iter()
        .map(|(id, step)| {
            let on: Vec<(f64, f64)> =
                by_id.iter().map(|run| run.get(&id).map_or((0.0, 0.0), |s| (s.on_path_us as f64, s.share))).collect();
            let us = spread(&on.iter().map(|x| x.0).collect::<Vec<_>>());
            StepOverRuns {
                median_on_path_us: us.median.round() as i64,
                min_on_path_us: us.min as i64,
                max_on_path_us: us.max as i64,
                median_share: evalbench_bundle::num::round_to(median(&on.iter().map(|x| x.1).collect::<Vec<_>>()), 6),
                on_path_runs: on.iter().filter(|x| x.0 > 0.0).count(),
                runs: paths.len(),
                step,
            }
        })
        .collect();
    out.sort_by(|a, b| b.median_on_path_us.cmp(&a.median_on_path_us).then_with(|| a.step.cmp(&b.step)));
    out
}

/// Per process, the median over the runs (0 in a run whose path missed it).
pub fn processes_over_runs(paths: &[&[ByProcess]]) -> Vec<ProcessOverRuns> {
    let mut names: Vec<Option<String>> = paths.iter().flat_map(|p| p.iter().map(|b| b.process.clone())).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<ProcessOverRuns> = names
        .into_iter()
        .map(|process| {
            let on: Vec<(f64, f64)> = paths
                .iter()
                .map(|p| p.iter().find(|b| b.process == process).map_or((0.0, 0.0), |b| (b.on_path_us as f64, b.share)))
                .collect();
            ProcessOverRuns {
                median_on_path_us: median(&on.iter().map(|x| x.0).collect::<Vec<_>>()).round() as i64,
                median_share: evalbench_bundle::num::round_to(median(&on.iter().map(|x| x.1).collect::<Vec<_>>()), 6),
                process,
            }
        })
        .collect();
    out.sort_by(|a, b| b.median_on_path_us.cmp(&a.median_on_path_us).then_with(|| a.process.cmp(&b.process)));
    out
}

/// What making `step` faster would buy over the runs: a run that predicted
/// it counts its prediction; a run whose path missed the step counts 0 (the
/// path stays the longest); a run that has the step on its path but left it
/// out of its own top steps is not counted.
pub fn lever(step: &str, runs: &[(&[PathStep], &[Buys])]) -> Option<Lever> {
    let each: Vec<(f64, f64)> = runs
        .iter()
        .filter_map(|(steps, buys)| match buys.iter().find(|b| b.step == step) {
            Some(b) => Some((b.saved_10_us as f64, b.saved_50_us as f64)),
            None => (!steps.iter().any(|s| s.label() == step)).then_some((0.0, 0.0)),
        })
        .collect();
    if each.is_empty() {
        return None;
    }
    Some(Lever {
        step: step.to_string(),
        saved_10_us: spread(&each.iter().map(|x| x.0).collect::<Vec<_>>()).rounded(0),
        saved_50_us: spread(&each.iter().map(|x| x.1).collect::<Vec<_>>()).rounded(0),
        counted: each.len(),
        runs: runs.len(),
    })
}

/// The answer for the pass `pass` from its runs, in the order they ran.
pub fn answer(pass: &str, runs: &[RunPath]) -> PassAnswer {
    let evaluated: Vec<f64> = runs.iter().map(|r| r.evaluated_s.unwrap_or(f64::NAN)).collect();
    let at = median_index(&evaluated);
    let with: Vec<(&[PathStep], &[ByProcess], &[Buys])> = runs.iter().filter_map(|r| r.path).collect();
    let steps = steps_over_runs(&with.iter().map(|p| p.0).collect::<Vec<_>>());
    let processes = processes_over_runs(&with.iter().map(|p| p.1).collect::<Vec<_>>());
    // The largest step that is work (a span or a statement, not a wait).
    let lever = steps
        .iter()
        .find(|s| !s.step.starts_with("wait: "))
        .and_then(|s| lever(&s.step, &with.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>()));
    PassAnswer {
        pass: pass.to_string(),
        runs: runs.len(),
        evaluated_s: spread(&evaluated.iter().copied().filter(|x| x.is_finite()).collect::<Vec<_>>()).rounded(6),
        median_run: runs.get(at).map(|r| r.name.to_string()).unwrap_or_default(),
        median_run_number: at + 1,
        with_path: with.len(),
        no_path: runs.iter().filter(|r| r.path.is_none()).map(|r| r.name.to_string()).collect(),
        no_evaluated: runs.iter().filter(|r| r.evaluated_s.is_none()).map(|r| r.name.to_string()).collect(),
        steps_median_sum_us: steps.iter().map(|s| s.median_on_path_us).sum(),
        steps,
        processes,
        lever,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(process: &str, name: &str, on: i64, share: f64) -> PathStep {
        PathStep {
            process: Some(process.into()),
            name: name.into(),
            on_path_us: on,
            share,
            own_us: Some(on),
            off_path_us: Some(0),
            segments: 1,
        }
    }

    /// Seeded runs with known step times: the answer's medians are the
    /// medians of what each run holds, and its median run is the one whose
    /// evaluated time is nearest the median.
    #[test]
    fn the_answer_is_the_runs_medians() {
        let mut r = crate::seeded::Seeded(0xa45e_e001);
        for round in 0..100 {
            let n = 1 + r.next(9) as usize;
            let mut paths: Vec<Vec<PathStep>> = Vec::new();
            let mut buys: Vec<Vec<Buys>> = Vec::new();
            let mut evaluated = Vec::new();
            for _ in 0..n {
                let a = 100 + r.next(900) as i64;
                let b = r.next(300) as i64;
                let mut p = vec![step("server", "record_one", a, 0.5)];
                if b > 0 {
                    p.push(step("eval", "resolve", b, 0.2));
                }
                paths.push(p);
                buys.push(vec![Buys {
                    step: "server record_one".into(),
                    on_path_us: a,
                    saved_10_us: a / 10,
                    saved_50_us: a / 2,
                }]);
                evaluated.push((a + b + r.next(50) as i64) as f64 / 1e6);
            }
            let names: Vec<String> = (1..=n).map(|i| format!("cold-clean.{i}")).collect();
            let runs: Vec<RunPath> = (0..n)
                .map(|i| RunPath {
                    name: &names[i],
                    evaluated_s: Some(evaluated[i]),
                    path: Some((&paths[i], &[], &buys[i])),
                })
                .collect();
            let a = answer("cold-clean", &runs);
            let m = median(&evaluated);
            assert_eq!(a.evaluated_s.median, evalbench_bundle::num::round_to(m, 6), "round {round}");
            let best = evaluated.iter().map(|e| (e - m).abs()).fold(f64::INFINITY, f64::min);
            assert_eq!((evaluated[a.median_run_number - 1] - m).abs(), best, "round {round}");
            assert_eq!(a.median_run, names[a.median_run_number - 1]);
            let rec: Vec<f64> = paths.iter().map(|p| p[0].on_path_us as f64).collect();
            let s = a.steps.iter().find(|s| s.step == "server record_one").unwrap();
            assert_eq!(s.median_on_path_us, median(&rec).round() as i64, "round {round}");
            assert_eq!(a.steps_median_sum_us, a.steps.iter().map(|s| s.median_on_path_us).sum::<i64>());
            // The lever is the largest step's: record_one, always the larger here.
            let l = a.lever.as_ref().unwrap();
            assert_eq!(l.step, a.steps[0].step);
            assert_eq!(l.counted, n);
            let halves: Vec<f64> = paths.iter().map(|p| (p[0].on_path_us / 2) as f64).collect();
            assert_eq!(l.saved_50_us.median, median(&halves).round(), "round {round}");
        }
    }

    /// A run whose path missed the step saves nothing by it; a run that had
    /// it on its path but did not predict it is left out and counted so.
    #[test]
    fn a_lever_counts_only_runs_that_predicted_or_missed_it() {
        let on = vec![step("server", "record_one", 100, 0.5)];
        let off = vec![step("eval", "resolve", 100, 0.5)];
        let b = vec![Buys { step: "server record_one".into(), on_path_us: 100, saved_10_us: 10, saved_50_us: 50 }];
        let l = lever("server record_one", &[(&on, &b), (&off, &[]), (&on, &[])]).unwrap();
        assert_eq!((l.counted, l.runs), (2, 3));
        assert_eq!((l.saved_50_us.min, l.saved_50_us.max), (0.0, 50.0));
        assert!(lever("server record_one", &[(&on, &[])]).is_none());
    }
}

/// A span's own time and total over a pass's runs, in µs.
#[derive(Debug, Clone, Serialize)]
pub struct SpanSpread {
    pub process: String,
    pub name: String,
    /// The span's own time (less its children's), and its total.
    pub own_us: Spread,
    pub total_us: Spread,
}

/// Per span of any run, the spread of its own time and of its total over
/// the runs (a run without it counts 0), by median own time, then total.
pub fn span_spreads(runs: &[&[crate::stats::SpanStat]]) -> Vec<SpanSpread> {
    let mut keys: Vec<(&str, &str)> =
        runs.iter().flat_map(|r| r.iter().map(|s| (s.process.as_str(), s.name.as_str()))).collect();
    keys.sort();
    keys.dedup();
    let mut spans: Vec<SpanSpread> = keys
        .into_iter()
        .map(|(process, name)| {
            let of = |f: fn(&crate::stats::SpanStat) -> i64| {
                let v: Vec<f64> = runs
                    .iter()
                    .map(|r| r.iter().find(|s| s.process == process && s.name == name).map_or(0.0, |s| f(s) as f64))
                    .collect();
                crate::verdict::spread(&v).rounded(0)
            };
            SpanSpread {
                own_us: of(|s| s.own_us),
                total_us: of(|s| s.total_us),
                process: process.to_string(),
                name: name.to_string(),
            }
        })
        .collect();
    spans.sort_by(|a, b| {
        b.own_us.median.total_cmp(&a.own_us.median).then_with(|| b.total_us.median.total_cmp(&a.total_us.median))
    });
    spans
}
