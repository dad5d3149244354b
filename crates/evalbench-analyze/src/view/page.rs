//! The report page's model: every pass of a bundle analysed ([`PassView`]),
//! its runs grouped into measurements (the run nearest the median stands
//! for each), the answer per clean pass, the counted passes' instructions,
//! how each pass's runs ended and what reading went past. Built here once;
//! the report's page only renders it.

use std::path::PathBuf;

use evalbench_bundle::{layout, Bundle};

use super::{analyse, runs_of_pass, PassView, RunsOfPass};
use crate::instructions::CountedPass;
use crate::outcomes::PassRuns;
use crate::over_runs::{answer, lever, steps_over_runs, Lever, PassAnswer, RunPath, StepOverRuns};
use crate::spread::{spread, Spread};

/// A pass's runs as one measurement.
pub struct Group {
    /// The pass's name (`cold-clean`).
    pub base: String,
    /// Its runs' indices in [`Page::passes`], in the order they ran.
    pub runs: Vec<usize>,
    /// The runs over: the median, the spread, the run nearest the median.
    pub over: RunsOfPass,
    /// The index (in [`Page::passes`]) of the run shown in full.
    pub shown: usize,
    /// What making the shown run's top steps faster would buy, over the runs.
    pub levers: Levers,
    /// The path's steps over the runs that have a path (their count, and
    /// each step's median time on it and range; 0 where a run missed it;
    /// none for a pass run once, which has no runs' section).
    pub paths: usize,
    pub steps_over_runs: Vec<StepOverRuns>,
    /// The shown run's critical path as its timeline lane draws it.
    pub path_bars: Vec<super::PathBar>,
}

/// Steps of the shown run's own top levers the page lists.
pub const LEVERS_SHOWN: usize = 5;

/// The levers of a pass's run shown in full, each predicted on every run.
pub struct Levers {
    pub rows: Vec<LeverRow>,
    /// Some run's own top steps left a listed step out (not counted for it).
    pub partial: bool,
    /// The runs it was predicted on.
    pub runs: usize,
}

pub struct LeverRow {
    pub step: String,
    /// Its time on the path over the runs that predicted it or missed it.
    pub on_path_us: Spread,
    /// The savings as the answer computes them (`over_runs::lever`), so that
    /// the first screen's figure and the table's are one.
    pub lever: Lever,
}

pub struct Page {
    /// The bundle as the user named it (the page's title).
    pub source: PathBuf,
    pub passes: Vec<PassView>,
    pub groups: Vec<Group>,
    /// Per clean pass, its answer over its runs.
    pub answers: Vec<PassAnswer>,
    /// The instrumented passes, whose times are not shown as durations.
    pub distorted: Vec<String>,
    /// Every pass's reading warnings, then the counted passes'.
    pub warnings: Vec<String>,
    pub counted: Vec<CountedPass>,
    /// How each pass's runs ended.
    pub status: Vec<PassRuns>,
    /// Span totals side by side over the shown runs (one per group): the
    /// names largest in any of them first, at most [`SIDE_BY_SIDE`].
    pub side_by_side: Vec<SideBySide>,
    /// Span names past [`SIDE_BY_SIDE`], not shown.
    pub side_by_side_more: usize,
}

/// Span names shown side by side, largest first.
pub const SIDE_BY_SIDE: usize = 30;

/// One span's totals in each shown run (µs; None where it has none).
pub struct SideBySide {
    pub process: String,
    pub name: String,
    pub totals_us: Vec<Option<i64>>,
}

/// The page's model of `bundle`; `with_spans` sees each pass while it still
/// holds its spans, laid out on their tracks (for trace.json's), as in [`analyse`].
pub fn page(bundle: &Bundle, with_spans: &mut dyn FnMut(&PassView, crate::tracks::Layout)) -> Page {
    let passes = analyse(bundle, &mut |p| {
        with_spans(p, crate::tracks::lay_out(&p.data.streams));
        crate::phase("trace.json's spans");
    });
    let (counted, counted_warnings) = crate::instructions::passes(bundle);
    let status = crate::outcomes::of_bundle(bundle);
    // A pass's runs are one measurement: its run nearest the median stands
    // for it side by side and is shown in full; the others are rows.
    let groups: Vec<Group> = layout::pass_groups(passes.iter().enumerate(), |(_, p)| &p.name)
        .into_iter()
        .map(|(base, runs)| {
            let runs: Vec<usize> = runs.into_iter().map(|(i, _)| i).collect();
            let over = runs_of_pass(&runs.iter().map(|&i| &passes[i]).collect::<Vec<_>>());
            let shown = runs[over.median_run];
            let of_runs: Vec<&PassView> = runs.iter().map(|&i| &passes[i]).collect();
            let levers = levers(&passes[shown], &of_runs);
            let paths: Vec<&[crate::path::PathStep]> =
                of_runs.iter().filter_map(|p| Some(p.critical.as_ref().ok()?.steps.as_slice())).collect();
            // Drawn for a pass of several runs only (its runs' section).
            let several = runs.len() > 1 && !paths.is_empty();
            let steps_over_runs = if several { steps_over_runs(&paths) } else { Vec::new() };
            // The path's lane, drawn for the run shown in full only.
            let path_bars = passes[shown]
                .critical
                .as_ref()
                .map(|p| super::path_bars(&p.segments, p.from_us, p.to_us))
                .unwrap_or_default();
            Group { base, runs, over, shown, levers, paths: paths.len(), steps_over_runs, path_bars }
        })
        .collect();
    let answers = groups
        .iter()
        .filter(|g| layout::is_clean(&g.base))
        .map(|g| answer_of(&g.base, &g.runs.iter().map(|&i| &passes[i]).collect::<Vec<_>>()))
        .collect();
    let distorted = groups
        .iter()
        .map(|g| g.base.clone())
        .filter(|b| layout::PassKind::of(b) == layout::PassKind::Instrumented)
        .collect();
    let warnings =
        passes.iter().flat_map(|p| p.data.warnings.iter().map(|w| w.to_string())).chain(counted_warnings).collect();
    let shown: Vec<&PassView> = groups.iter().map(|g| &passes[g.shown]).collect();
    let (side_by_side, side_by_side_more) = side_by_side(&shown);
    Page {
        source: bundle.source.clone(),
        passes,
        groups,
        answers,
        distorted,
        warnings,
        counted,
        status,
        side_by_side,
        side_by_side_more,
    }
}

/// The answer of one pass from its runs (in the order they ran).
fn answer_of(base: &str, runs: &[&PassView]) -> PassAnswer {
    let by_process: Vec<Vec<crate::path::ByProcess>> =
        runs.iter().map(|r| r.critical.as_ref().map(|c| c.by_process()).unwrap_or_default()).collect();
    let paths: Vec<RunPath> = runs
        .iter()
        .zip(&by_process)
        .map(|(r, b)| RunPath {
            name: &r.name,
            evaluated_s: Some(r.evaluated_s()).filter(|e| e.is_finite()),
            path: r.critical.as_ref().ok().map(|c| (c.steps.as_slice(), b.as_slice(), r.buys.as_slice())),
        })
        .collect();
    answer(base, &paths)
}

/// A step's time on the path in one run and its predictions there (µs):
/// a step off the run's path saves nothing (the path stays the longest);
/// None where the run did not predict it (not among its own top steps).
fn of_run(r: &PassView, step: &str) -> Option<i64> {
    if let Some(b) = r.buys.iter().find(|b| b.step == step) {
        return Some(b.on_path_us);
    }
    let path = r.critical.as_ref().ok()?;
    (!path.steps.iter().any(|s| s.label() == step)).then_some(0)
}

/// The shown run's top levers, each over `runs` (the shown run alone where
/// there are none).
fn levers(shown: &PassView, runs: &[&PassView]) -> Levers {
    let runs: Vec<&PassView> = if runs.is_empty() { vec![shown] } else { runs.to_vec() };
    let each_run: Vec<(&[crate::path::PathStep], &[crate::path::whatif::Buys])> =
        runs.iter().filter_map(|r| Some((r.critical.as_ref().ok()?.steps.as_slice(), r.buys.as_slice()))).collect();
    let mut partial = false;
    let mut rows = Vec::new();
    for b in shown.buys.iter().take(LEVERS_SHOWN) {
        let each: Vec<f64> = runs.iter().filter_map(|r| of_run(r, &b.step)).map(|x| x as f64).collect();
        partial |= each.len() < runs.len();
        let Some(lever) = lever(&b.step, &each_run) else { continue };
        rows.push(LeverRow { step: b.step.clone(), on_path_us: spread(&each), lever });
    }
    Levers { rows, partial, runs: runs.len() }
}

/// Span totals side by side: the names that matter most in any pass, and
/// how many more there are.
fn side_by_side(passes: &[&PassView]) -> (Vec<SideBySide>, usize) {
    use std::collections::HashMap;
    let stats: Vec<HashMap<(&str, &str), i64>> = passes
        .iter()
        .map(|p| p.span_stats.iter().map(|s| ((s.process.as_str(), s.name.as_str()), s.total_us)).collect())
        .collect();
    let mut best: HashMap<(&str, &str), i64> = HashMap::new();
    for m in &stats {
        for (k, v) in m {
            let e = best.entry(*k).or_insert(0);
            *e = (*e).max(*v);
        }
    }
    let mut keys: Vec<((&str, &str), i64)> = best.into_iter().collect();
    keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let more = keys.len().saturating_sub(SIDE_BY_SIDE);
    let rows = keys
        .into_iter()
        .take(SIDE_BY_SIDE)
        .map(|((process, name), _)| SideBySide {
            process: process.to_string(),
            name: name.to_string(),
            totals_us: stats.iter().map(|m| m.get(&(process, name)).copied()).collect(),
        })
        .collect();
    (rows, more)
}
