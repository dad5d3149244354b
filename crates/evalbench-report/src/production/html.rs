//! The page of a production evaluation: its stages and each job's phases on
//! one time axis (nested phases on a lane under their parent's), the
//! workers' load beside them, and the summary's text. Every string the
//! report holds is escaped (a report is another machine's file).

use std::fmt::Write;

use evalbench_analyze::production::Production;

use crate::html::esc::esc;
use crate::html::svg::{lanes, Item};

/// Jobs drawn on the timeline; the rest are counted under it.
const JOBS_DRAWN: usize = 40;

const CSS: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1200px}pre{background:#f6f6f6;\
    padding:1em;overflow-x:auto}svg{display:block;margin:1em 0}h1{font-size:1.4em}";

/// The lanes: the evaluation's stages, then each job's phases by depth.
fn rows(p: &Production) -> (Vec<(String, Vec<Item>)>, f64, f64) {
    let mut rows = Vec::new();
    let stages: Vec<Item> = p
        .stages
        .iter()
        .map(|s| Item {
            start: s.from_us as f64,
            end: s.to_us as f64,
            label: s.name.to_string(),
            title: format!("{}: {:.3} s ({:.1}%)", s.name, s.seconds, s.share * 100.0),
        })
        .collect();
    rows.push(("evaluation".to_string(), stages));
    let t0 = p.created_at_us.unwrap_or(0) as f64;
    let mut t1 = p.stages.iter().map(|s| s.to_us as f64).fold(t0, f64::max);
    // A lane a job, for the first jobs: an evaluation with thousands draws them as a table's "and N more".
    for j in p.jobs.iter().take(JOBS_DRAWN) {
        let depth = j.phases.iter().map(|ph| ph.depth).max().unwrap_or(0);
        let dispatched = p.created_at_us.unwrap_or(0) as f64 + job_offset_us(p, j);
        for d in 0..=depth {
            let items: Vec<Item> = j
                .phases
                .iter()
                .filter(|ph| ph.depth == d)
                .filter_map(|ph| {
                    let start = dispatched + ph.start_ms as f64 * 1000.0;
                    let end = start + ph.ms? as f64 * 1000.0;
                    t1 = t1.max(end);
                    Some(Item { start, end, label: ph.name.clone(), title: format!("{}: {} ms", ph.name, ph.ms?) })
                })
                .collect();
            let worker = j.worker.as_deref().unwrap_or("?");
            let lane = if d == 0 { format!("{} job on {worker}", j.kind) } else { format!("  inside (depth {d})") };
            rows.push((lane, items));
        }
    }
    (rows, t0, t1)
}

/// When a job was dispatched, µs after the evaluation was created (0 where unknown).
fn job_offset_us(p: &Production, j: &evalbench_analyze::production::JobView) -> f64 {
    j.dispatched_us.zip(p.created_at_us).and_then(|(d, c)| d.checked_sub(c)).map_or(0.0, |x| x as f64)
}

/// index.html of a production evaluation, with the summary's text under the timeline.
pub fn page(p: &Production, summary_text: &str) -> String {
    let title = format!("Gradient evaluation {}", p.evaluation);
    let mut html = crate::html::shell_head(&title, CSS);
    let _ = write!(html, "<h1>{}</h1><p>{}</p>", esc(&title), esc(&p.file));
    let (rows, t0, t1) = rows(p);
    html.push_str(&lanes("the evaluation's stages and its jobs' phases", &rows, t0, t1));
    if p.jobs.len() > JOBS_DRAWN {
        let _ = write!(html, "<p>and {} more jobs, not drawn (each in summary.json)</p>", p.jobs.len() - JOBS_DRAWN);
    }
    let _ = writeln!(html, "<pre>{}</pre></body></html>", esc(summary_text));
    html
}
