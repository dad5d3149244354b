//! Spans: root-span lanes, a flame graph by nesting, totals by name.

use std::fmt::Write;

use evalbench_analyze::view::{PassView, Timeline};

use super::super::esc::esc;
use super::super::svg::{self, ms, Item};
use super::super::Page;

/// Span names drawn as bars; the rest are in summary.json.
const TOTALS_SHOWN: usize = 40;

pub fn spans(page: &mut Page, p: &PassView) {
    page.h3(&p.name, "spans", "Spans");
    let (Some((t0, t1)), Some(timeline)) = (p.extent, &p.timeline) else {
        let _ = write!(
            page.body,
            "<p class=\"missing\">No spans: <code>{}/trace/*.jsonl</code> is missing or empty.</p>",
            esc(&p.name)
        );
        return;
    };
    let rows = lanes(timeline, t0);
    page.chart(
        &p.name,
        "span-timeline",
        svg::lanes(&format!("{} spans per process (root spans)", p.name), &rows, t0, t1),
    );
    if timeline.merged > 0 {
        let _ = write!(
            page.body,
            "<p class=\"note\">{} root spans narrower than a pixel were merged into shared bars; each bar's title says \
                what it holds.</p>",
            timeline.merged
        );
    }
    let (flame, merged) =
        svg::flame(&format!("{} span flame graph (self time, folded by nesting)", p.name), &p.nesting, &|v| ms(v));
    page.chart(&p.name, "span-flame", flame);
    if merged > 0 {
        let _ = write!(
            page.body,
            "<p class=\"note\">{merged} nesting paths narrower than half a pixel are not drawn; their time is inside \
                their parents' bars.</p>"
        );
    }
    let shown = totals(p);
    page.chart(&p.name, "span-totals", svg::hbars(&format!("{} span totals", p.name), &shown, &|v| ms(v)));
    if p.span_stats.len() > TOTALS_SHOWN {
        let _ = write!(
            page.body,
            "<p class=\"note\">{} more span names (smaller totals) are in summary.json.</p>",
            p.span_stats.len() - TOTALS_SHOWN
        );
    }
}

/// Each process's root spans as bars, a merged bar's title saying what it holds.
fn lanes(timeline: &Timeline, t0: f64) -> Vec<(String, Vec<Item>)> {
    timeline
        .lanes
        .iter()
        .map(|lane| {
            let items = lane
                .bars
                .iter()
                .map(|b| {
                    let title = if b.merged.is_empty() {
                        format!("{}: at +{}, took {}", b.name, ms(b.start - t0), ms(b.end - b.start))
                    } else {
                        let names: Vec<String> = b.merged.iter().take(5).map(|(n, k)| format!("{n} ×{k}")).collect();
                        format!(
                            "{} spans merged (narrower than a pixel): {}; +{}..+{}",
                            b.spans,
                            names.join(", "),
                            ms(b.start - t0),
                            ms(b.end - t0)
                        )
                    };
                    Item { start: b.start, end: b.end, label: b.name.clone(), title }
                })
                .collect();
            (lane.label.clone(), items)
        })
        .collect()
}

/// The largest span totals as bars, each with its figures in its title.
fn totals(p: &PassView) -> Vec<(String, f64, String)> {
    p.span_stats
        .iter()
        .take(TOTALS_SHOWN)
        .map(|s| {
            (
                format!("{} ({})", s.name, s.process),
                s.total_us as f64,
                format!(
                    "{} {}: {} spans, total {}, mean {}, p50 {}, p95 {}, max {}",
                    s.process,
                    s.name,
                    s.count,
                    ms(s.total_us as f64),
                    ms(s.mean_us as f64),
                    ms(s.p50_us as f64),
                    ms(s.p95_us as f64),
                    ms(s.max_us as f64)
                ),
            )
        })
        .collect()
}
