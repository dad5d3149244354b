//! `/proto`: connections, frames, message sizes and round trips.

use std::fmt::Write;

use evalbench_analyze::view::PassView;

use super::super::esc::esc;
use super::super::svg::{self, ms};
use super::super::Page;
use super::ready;

pub fn network(page: &mut Page, p: &PassView) {
    let Some(net) = &p.network else { return };
    page.h3(&p.name, "network", "Network");
    let Some(s) = ready(page, p, net) else { return };
    let _ = write!(
        page.body,
        "<p>/proto: {} connection(s), {} frames from the worker, {} from the server, {} control frames, {} gaps.</p>",
        s.connections, s.frames_from_worker, s.frames_from_server, s.control_frames, s.gaps
    );
    page.body.push_str("<table><tr><th></th><th>count</th><th>min</th><th>p50</th><th>p95</th><th>max</th></tr>");
    let rows = [
        ("worker message size", &s.message_bytes_from_worker, false),
        ("server message size", &s.message_bytes_from_server, false),
        ("worker message, then server's", &s.round_trip_worker_to_server_us, true),
        ("server message, then worker's", &s.round_trip_server_to_worker_us, true),
    ];
    let mut bars = Vec::new();
    for (label, d, time) in rows {
        let f = |v: i64| if time { ms(v as f64) } else { format!("{v} B") };
        let _ = write!(
            page.body,
            "<tr><td>{label}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td \
                class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            d.count,
            esc(&f(d.min)),
            esc(&f(d.p50)),
            esc(&f(d.p95)),
            esc(&f(d.max))
        );
        if time {
            for (q, v) in [("p50", d.p50), ("p95", d.p95), ("max", d.max)] {
                bars.push((
                    format!("{label} {q}"),
                    v as f64,
                    format!("{label}: {q} {} over {} round trips", ms(v as f64), d.count),
                ));
            }
        }
    }
    page.body.push_str("</table>");
    page.chart(&p.name, "proto-round-trips", svg::hbars(&format!("{} /proto round trips", p.name), &bars, &|v| ms(v)));
}
