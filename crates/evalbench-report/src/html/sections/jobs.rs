//! The worker's job phases: totals, then one lane per job.

use evalbench_analyze::view::PassView;

use super::super::svg::{self, ms, Item};
use super::super::Page;
use super::ready;

pub fn jobs(page: &mut Page, p: &PassView) {
    page.h3(&p.name, "jobs", "Jobs");
    let Some(j) = ready(page, p, &p.jobs) else { return };
    if j.jobs.is_empty() {
        page.body.push_str("<p class=\"missing\">job_phases.json holds no phases.</p>");
        return;
    }
    let rows: Vec<(String, f64, String)> =
        j.totals.iter().map(|(k, v)| (k.clone(), *v, format!("{k}: {} over all jobs", ms(*v)))).collect();
    page.chart(&p.name, "job-phase-totals", svg::hbars(&format!("{} job phase totals", p.name), &rows, &|v| ms(v)));
    let lanes: Vec<(String, Vec<Item>)> = j
        .jobs
        .iter()
        .map(|(job, phases)| {
            let items = phases
                .iter()
                .map(|ph| Item {
                    start: ph.start,
                    end: ph.end,
                    label: ph.phase.clone(),
                    title: format!("job {job}: {} took {}", ph.phase, ms(ph.end - ph.start)),
                })
                .collect();
            (job.clone(), items)
        })
        .collect();
    page.chart(&p.name, "job-phases", svg::lanes(&format!("{} job phases", p.name), &lanes, j.t0, j.t1));
}
