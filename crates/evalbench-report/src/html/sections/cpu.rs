//! perf profiles of the server and worker hosts, as flame graphs, with a
//! link to inferno's interactive one copied beside the page.

use std::fmt::Write;

use evalbench_analyze::view::{PassView, Section};

use super::super::esc::{esc, file_safe, href};
use super::super::svg;
use super::super::Page;
use super::missing;

pub fn cpu(page: &mut Page, p: &PassView) {
    if p.clean {
        return;
    }
    page.h3(&p.name, "cpu", "CPU");
    for prof in &p.cpu {
        let Section::Ready(stacks) = &prof.stacks else {
            missing(page, p, prof.svg);
            continue;
        };
        let what = prof.what;
        let samples: f64 = stacks.iter().map(|s| s.1).sum();
        let _ = write!(page.body, "<h4>perf, {} ({samples:.0} samples at 999 Hz)</h4>", esc(what));
        let (chart, _) = svg::flame(&format!("{} CPU, {what}", p.name), stacks, &|v| format!("{v:.0} samples"));
        page.chart(&p.name, &format!("cpu-{}", prof.host), chart);
        if prof.svg_exists {
            let rel = format!("{}/{}", file_safe(&p.name), prof.svg);
            page.copies.push((rel.clone(), p.file(prof.svg)));
            let _ = write!(page.body, "<p><a href=\"{}\">Interactive flame graph (inferno)</a></p>", esc(&href(&rel)));
        }
    }
}
