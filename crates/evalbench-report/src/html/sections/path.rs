//! The critical path: drawn as the first lane over the processes' root
//! spans, its steps as a table (on the path, share, own time off it), and
//! what 10% and 50% faster would buy for the top steps on it (`buys`).

use std::fmt::Write;

use evalbench_analyze::view::{PassView, PathBar};

use super::super::esc::esc;
use super::super::svg::{self, ms, Item};
use super::super::Page;

/// Steps listed in the table; summary.json has them all.
const STEPS_SHOWN: usize = 12;

/// The path's bars (analyze merged the narrow ones), titled.
fn bars(path_bars: &[PathBar], t0: f64) -> Vec<Item> {
    let bar = |b: &PathBar| {
        let (start, end) = (b.start_us as f64, b.end_us as f64);
        let name = b.steps[0].0.clone();
        let title = if b.stretches == 1 {
            format!("{name}: at +{}, {} on the path", ms(start - t0), ms(end - start))
        } else {
            let parts: Vec<String> = b.steps.iter().take(4).map(|(n, us)| format!("{n} {}", ms(*us as f64))).collect();
            format!("{} stretches merged: {}; +{}..+{}", b.stretches, parts.join(", "), ms(start - t0), ms(end - t0))
        };
        Item { start, end, label: name, title }
    };
    path_bars.iter().map(bar).collect()
}

/// The path of `p`, the run shown in full of its pass, and its levers over the pass's runs.
pub fn critical_path(
    page: &mut Page,
    p: &PassView,
    levers: &evalbench_analyze::view::page::Levers,
    path_bars: &[PathBar],
) {
    page.h3(&p.name, "critical-path", "Critical path");
    let path = match &p.critical {
        Ok(path) => path,
        Err(why) => {
            let _ = write!(page.body, "<p class=\"missing\">No critical path: {}.</p>", esc(&why.to_string()));
            return;
        }
    };
    let (t0, t1) = (path.from_us as f64, path.to_us as f64);
    let mut rows = vec![("critical path".to_string(), bars(path_bars, t0))];
    if let Some(tl) = &p.timeline {
        for lane in &tl.lanes {
            let items = lane
                .bars
                .iter()
                .filter(|b| b.end > t0 && b.start < t1)
                .map(|b| Item {
                    start: b.start.max(t0),
                    end: b.end.min(t1),
                    label: b.name.clone(),
                    title: format!("{}: +{}", b.name, ms(b.start - t0)),
                })
                .collect();
            rows.push((lane.label.clone(), items));
        }
    }
    let title = format!("{} critical path over the root spans (request to the end of EvaluatingDerivation)", p.name);
    page.chart(&p.name, "critical-path", svg::lanes(&title, &rows, t0, t1));
    let bound = path.bound_us.map_or_else(|| "one host".to_string(), |b| format!("cross-host edges ± {b} µs"));
    let _ = write!(
        page.body,
        "<p>What the {} evaluated waited on, in {} stretches that add up to it ({}): a span's own time, or a wait \
            between spans. <code>evalbench whatif</code> recomputes it with spans made faster.</p>",
        esc(&ms(t1 - t0)),
        path.segments.len(),
        esc(&bound)
    );
    if let Some(note) = &path.note {
        // How the path was made where the bundle lacked something (Gradient's: no span ids, no request time).
        let _ = write!(page.body, "<p class=\"note\">How this path was made: {}.</p>", esc(note));
    }
    let _ = write!(page.body, "<p>By process: {}.</p>", esc(&crate::summary::path::processes_text(&path.by_process())));
    let mut table =
        String::from("<table><tr><th>step</th><th>on the path</th><th>share</th><th>own time off the path</th></tr>");
    for s in path.steps.iter().take(STEPS_SHOWN) {
        let off = s.off_path_us.map_or_else(|| "–".into(), |u| ms(u as f64));
        let _ = write!(
            table,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td class=\"n\">{}</td></tr>",
            esc(&s.label()),
            esc(&ms(s.on_path_us as f64)),
            s.share * 100.0,
            esc(&off)
        );
    }
    table.push_str("</table>");
    page.body.push_str(&table);
    if path.steps.len() > STEPS_SHOWN {
        let _ = write!(
            page.body,
            "<p class=\"note\">{} more steps are in summary.json.</p>",
            path.steps.len() - STEPS_SHOWN
        );
    }
    super::buys::buys(page, p, levers);
}
