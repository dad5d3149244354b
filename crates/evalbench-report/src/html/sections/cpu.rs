//! perf profiles of the server and worker hosts, as flame graphs, with a
//! link to inferno's interactive one copied beside the page.

use std::fmt::Write;

use evalbench_analyze::view::{PassView, Section};
use evalbench_bundle::layout;

use super::super::esc::{data_uri, esc, file_safe, href};
use super::super::svg;
use super::super::Page;
use super::missing;

/// strace files listed by name; the rest are counted.
const STRACE_LISTED: usize = 30;

/// A flame graph the bundle holds alone is shown inside the page up to this size.
const EMBEDDED_SVG_MAX: usize = 2 << 20;

pub fn cpu(page: &mut Page, p: &PassView) {
    if p.clean {
        return;
    }
    page.h3(&p.name, "cpu", "CPU");
    for prof in &p.cpu {
        let Section::Ready(stacks) = &prof.stacks else {
            if prof.svg_exists {
                // Gradient keeps flame.svg alone (flamegraph.pl's, no folded
                // stacks): shown as an image from data, where its scripts do
                // not run, and copied beside the page.
                let rel = format!("{}/{}", file_safe(&p.name), prof.svg);
                page.copies.push((rel.clone(), p.file(prof.svg)));
                let shown = match std::fs::read(p.file(prof.svg)) {
                    Ok(b) if b.len() <= EMBEDDED_SVG_MAX => {
                        format!(
                            "<img src=\"{}\" alt=\"{}\" style=\"max-width:100%\">",
                            esc(&data_uri("image/svg+xml", &b)),
                            esc(&rel)
                        )
                    }
                    Ok(b) => format!("<p class=\"note\">{} bytes: too large to show inside the page.</p>", b.len()),
                    Err(e) => format!("<p class=\"missing\">{}: {}</p>", esc(&rel), esc(&e.to_string())),
                };
                let _ = write!(
                    page.body,
                    "<h4>perf, {what}</h4><p class=\"note\">No folded stacks beside it: the flame graph as the bundle \
                        holds it, not redrawn.</p><figure>{shown}<figcaption><a href=\"{link}\">{name}</a> (opened \
                        alone it is interactive, with the scripts its writer put in it)</figcaption></figure>",
                    what = esc(prof.what),
                    link = esc(&href(&rel)),
                    name = esc(&rel)
                );
            } else {
                missing(page, p, prof.svg);
            }
            continue;
        };
        let what = prof.what;
        let samples = prof.samples;
        // The sampling rate is the writer's (the lab's 999 Hz, Gradient's 499 Hz) and not in the bundle.
        let _ = write!(page.body, "<h4>perf, {} ({samples:.0} samples)</h4>", esc(what));
        let (chart, _) = svg::flame(&format!("{} CPU, {what}", p.name), stacks, &|v| format!("{v:.0} samples"));
        page.chart(&p.name, &format!("cpu-{}", prof.host), chart);
        if prof.svg_exists {
            let rel = format!("{}/{}", file_safe(&p.name), prof.svg);
            page.copies.push((rel.clone(), p.file(prof.svg)));
            let _ = write!(page.body, "<p><a href=\"{}\">Interactive flame graph (inferno)</a></p>", esc(&href(&rel)));
        }
    }
    if !p.strace.is_empty() {
        let lines = p.strace_lines;
        let _ = write!(
            page.body,
            "<h4>strace, worker host ({} files, {lines} lines)</h4><p class=\"note\">One file a thread or child; \
                <code>evalbench decode strace FILE</code> reads \
                one.</p><table><tr><th>file</th><th>lines</th><th>bytes</th></tr>",
            p.strace.len()
        );
        for (name, n, bytes) in p.strace.iter().take(STRACE_LISTED) {
            let _ = write!(
                page.body,
                "<tr><td><code>{}/{}</code></td><td class=\"n\">{n}</td><td class=\"n\">{bytes}</td></tr>",
                layout::WORKER_STRACE_DIR,
                esc(name)
            );
        }
        page.body.push_str("</table>");
        if p.strace.len() > STRACE_LISTED {
            let _ = write!(
                page.body,
                "<p class=\"note\">{} more files in {}.</p>",
                p.strace.len() - STRACE_LISTED,
                layout::WORKER_STRACE_DIR
            );
        }
    }
}
