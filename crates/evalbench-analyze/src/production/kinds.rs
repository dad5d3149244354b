//! The jobs of a production evaluation, kind by kind: an evaluation with a
//! thousand build jobs is answered in a line a kind (how many, on how many
//! workers, the wait in the queue and the run at the median and at most,
//! each phase's time added over the jobs, the busiest worker), not a line a
//! job. Nested phases are totalled under their own names, never added to
//! their parent's.

use serde::Serialize;

use super::{JobView, Load};

#[derive(Debug, Clone, Serialize)]
pub struct KindView {
    /// `eval`, `build` or `kind_<n>`.
    pub kind: String,
    pub jobs: usize,
    pub workers: usize,
    pub to_ready_median_s: Option<f64>,
    pub to_dispatch_median_s: Option<f64>,
    pub to_dispatch_max_s: Option<f64>,
    pub run_median_s: Option<f64>,
    pub run_max_s: Option<f64>,
    /// Each phase's time added over the kind's jobs, in the order first met
    /// (s), and whether it ran inside another phase.
    pub phase_totals: Vec<(String, f64, bool)>,
    /// The job whose worker was busiest (highest mean CPU) while it ran, and that load.
    pub busiest: Option<(String, Load)>,
}

/// The median (analyze's one, `spread::median`); None of nothing.
fn median(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| crate::spread::median(&v))
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// One view a job kind, in the order the kinds were first queued.
pub fn of(jobs: &[JobView]) -> Vec<KindView> {
    let mut kinds: Vec<&str> = Vec::new();
    for j in jobs {
        if !kinds.contains(&j.kind.as_str()) {
            kinds.push(&j.kind);
        }
    }
    kinds.into_iter().map(|k| kind(k, jobs.iter().filter(|j| j.kind == k).collect())).collect()
}

fn kind(kind: &str, jobs: Vec<&JobView>) -> KindView {
    let all = |f: fn(&JobView) -> Option<f64>| jobs.iter().filter_map(|j| f(j)).collect::<Vec<f64>>();
    let (dispatch, run) = (all(|j| j.to_dispatch_s), all(|j| j.run_s));
    let mut workers: Vec<&str> = jobs.iter().filter_map(|j| j.worker.as_deref()).collect();
    workers.sort_unstable();
    workers.dedup();
    let mut totals: Vec<(String, f64, bool)> = Vec::new();
    for p in jobs.iter().flat_map(|j| &j.phases) {
        let Some(ms) = p.ms else { continue };
        match totals.iter_mut().find(|(n, ..)| *n == p.name) {
            Some((_, t, _)) => *t += ms as f64 / 1000.0,
            None => totals.push((p.name.clone(), ms as f64 / 1000.0, p.depth > 0)),
        }
    }
    let busiest = jobs
        .iter()
        .filter_map(|j| Some((j.worker.clone()?, j.load.clone()?)))
        .max_by(|a, b| a.1.cpu_mean_pct.unwrap_or(0.0).total_cmp(&b.1.cpu_mean_pct.unwrap_or(0.0)));
    KindView {
        kind: kind.to_string(),
        jobs: jobs.len(),
        workers: workers.len(),
        to_ready_median_s: median(all(|j| j.to_ready_s)),
        to_dispatch_median_s: median(dispatch.clone()),
        to_dispatch_max_s: max(&dispatch),
        run_median_s: median(run.clone()),
        run_max_s: max(&run),
        phase_totals: totals,
        busiest,
    }
}
