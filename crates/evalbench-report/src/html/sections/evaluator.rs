//! The evaluator: nix's counters side by side (exact counts of its work,
//! next to the times), and per pass the calls nix counted and the
//! attributes by time and by memory added.

use std::fmt::Write;

use crate::figures::grouped;
use evalbench_analyze::view::{Attribute, AttributeCost, NixProfile, PassView, Position, Section};
use evalbench_bundle::layout;
use evalbench_bundle::nix_stats::{in_headline_order, words, NOISY};

use super::super::esc::{esc, file_safe, href};
use super::super::svg;
use super::super::svg::ms;
use super::super::Page;
use super::ready;

/// nix's counters of every pass that has them, one column a pass.
pub fn counters_side_by_side(page: &mut Page, passes: &[&PassView]) {
    let with: Vec<(&PassView, &evalbench_analyze::view::Evaluator)> = passes
        .iter()
        .copied()
        .filter_map(|p| match &p.evaluator {
            Section::Ready(e) if !e.counters.is_empty() => Some((p, e)),
            _ => None,
        })
        .collect();
    if with.is_empty() {
        return;
    }
    let mut names: Vec<&String> = with.iter().flat_map(|(_, e)| e.counters.keys()).collect();
    in_headline_order(&mut names);
    page.body.push_str(
        "<h3>nix's counters side by side</h3><p class=\"note\">NIX_SHOW_STATS of every nix evaluation of the pass, \
            summed. Exact counts of nix's work: the same input gives the same numbers run after run, while times \
            swing. Marked * : a time or the GC heap's size, which are not. A pass answered from the eval cache \
            evaluates nothing.</p><table><tr><th>counter</th>",
    );
    for (p, _) in &with {
        let _ = write!(page.body, "<th>{}</th>", esc(&p.name));
    }
    page.body.push_str("</tr>");
    for n in names {
        let mark = if NOISY.contains(&n.as_str()) { " *" } else { "" };
        let w = words(n);
        let title = if w == n.as_str() { String::new() } else { format!(" title=\"{}\"", esc(w)) };
        let _ = write!(page.body, "<tr><td{title}><code>{}</code>{mark}</td>", esc(n));
        for (_, e) in &with {
            let v = e.counters.get(n).map(|v| grouped(*v)).unwrap_or_else(|| "–".into());
            let _ = write!(page.body, "<td class=\"n\">{}</td>", esc(&v));
        }
        page.body.push_str("</tr>");
    }
    page.body.push_str("</table>");
    for (p, e) in with.iter().filter(|(_, e)| e.recycled > 0) {
        let _ = write!(
            page.body,
            "<p class=\"note\">Not counted in {}: the work of {} recycled past --eval-max-rss (killed; statistics any \
                of them wrote are not counted).</p>",
            esc(&p.name),
            esc(&crate::output::count(e.recycled, "evaluator"))
        );
    }
}

fn attribute_rows(page: &mut Page, rows: &[Attribute]) {
    page.body.push_str("<table><tr><th>attribute</th><th>time</th><th>RSS after</th><th>RSS added</th></tr>");
    for a in rows {
        let kb = |v: Option<i64>| v.map(|k| format!("{} KiB", grouped(k as f64))).unwrap_or_else(|| "–".into());
        let _ = write!(
            page.body,
            "<tr><td><code>{}</code>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&a.attr),
            if a.cached { " (from the cache)" } else { "" },
            esc(&ms(a.dur_us as f64)),
            esc(&kb(a.rss_kb)),
            esc(&kb(a.rss_delta_kb))
        );
    }
    page.body.push_str("</table>");
}

fn rows3<'a>(
    page: &mut Page,
    head: [&str; 3],
    rows: impl Iterator<Item = (&'a str, u64, u64)>,
    fmt1: fn(u64) -> String,
    fmt2: fn(u64) -> String,
) {
    let _ = write!(page.body, "<table><tr><th>{}</th><th>{}</th><th>{}</th></tr>", head[0], head[1], head[2]);
    for (what, a, b) in rows {
        let _ = write!(
            page.body,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(what),
            esc(&fmt1(a)),
            esc(&fmt2(b))
        );
    }
    page.body.push_str("</table>");
}

fn site(r: &Position) -> (&str, u64, u64) {
    (r.position.as_str(), r.calls, r.self_us)
}

fn attr(r: &AttributeCost) -> (&str, u64, u64) {
    (r.attr.as_str(), r.self_us, r.calls)
}

/// nix's own profile: where the evaluator's time went, by call site and attribute.
fn profile(page: &mut Page, p: &PassView, prof: &NixProfile) {
    let count = |n: u64| grouped(n as f64);
    let micros = |n: u64| ms(n as f64);
    let total = prof.self_us;
    let _ =
        write!(
        page.body,
        "<h4>nix's profile (--trace-function-calls, {} trace lines)</h4><p class=\"note\">Self time per stack of call \
            sites, under the attribute being evaluated: {} of self time against {} traced.{}</p>",
        grouped(prof.lines as f64),
        esc(&ms(total)),
        esc(&ms(prof.traced_us as f64)),
        prof.cut
            .as_ref()
            .map(|(d, frame)| format!(" Stacks keep {d} call sites; what deeper calls spent is in the frame {} under \
                the deepest kept.", esc(frame)))
            .unwrap_or_default()
    );
    let (chart, _) = svg::flame(&format!("{} nix evaluator", p.name), &prof.stacks, &|v| ms(v));
    page.chart(&p.name, "nix-profile", chart);
    if prof.svg_exists {
        let rel = format!("{}/{}", file_safe(&p.name), layout::NIX_FLAME_SVG);
        page.copies.push((rel.clone(), p.file(layout::NIX_FLAME_SVG)));
        let _ = write!(page.body, "<p><a href=\"{}\">Interactive flame graph (inferno)</a></p>", esc(&href(&rel)));
    }
    page.body.push_str("<h4>Call sites by self time</h4>");
    rows3(page, ["call site", "calls", "self time"], prof.sites_by_self.iter().map(site), count, micros);
    page.body.push_str("<h4>Call sites by calls</h4>");
    rows3(page, ["call site", "calls", "self time"], prof.sites_by_calls.iter().map(site), count, micros);
    page.body.push_str("<h4>Attributes by self time</h4>");
    rows3(page, ["attribute", "self time", "calls"], prof.attrs_by_self.iter().map(attr), micros, count);
    page.body.push_str("<h4>Attributes by function calls</h4>");
    rows3(page, ["attribute", "self time", "calls"], prof.attrs_by_calls.iter().map(attr), micros, count);
}

pub fn evaluator(page: &mut Page, p: &PassView) {
    page.h3(&p.name, "evaluator", "Evaluator");
    let Some(e) = ready(page, p, &p.evaluator) else { return };
    let _ = write!(
        page.body,
        "<p>{} nix evaluation(s); {} attributes, {} answered from the lab's eval cache. \
         An attribute's time runs from the moment nix starts on it until its drvPath is forced, \
         so what it shares with earlier attributes is counted where it was first needed.</p>",
        e.evaluations, e.attributes, e.cached
    );
    for (title, rows) in [("Calls by primop", &e.primops), ("Calls by function (position of the lambda)", &e.functions)]
    {
        if rows.is_empty() {
            continue;
        }
        let _ = write!(page.body, "<h4>{title} (NIX_COUNT_CALLS)</h4><table><tr><th>what</th><th>calls</th></tr>");
        for (what, n) in rows.iter() {
            let _ = write!(
                page.body,
                "<tr><td><code>{}</code></td><td class=\"n\">{}</td></tr>",
                esc(what),
                grouped(*n as f64)
            );
        }
        page.body.push_str("</table>");
    }
    match &e.profile {
        Some(Section::Ready(prof)) => profile(page, p, prof),
        Some(Section::Unreadable(why)) => {
            let _ = write!(page.body, "<p class=\"missing\">{}</p>", esc(why));
        }
        _ => {}
    }
    match &e.sampled {
        Some(Section::Ready(s)) => {
            let exact = match &e.profile {
                Some(Section::Ready(prof)) => Some(&prof.sites_by_self[..]),
                _ => None,
            };
            super::sampled::beside(page, exact, s);
        }
        Some(Section::Unreadable(why)) => {
            let _ = write!(page.body, "<p class=\"missing\">{}</p>", esc(why));
        }
        _ => {}
    }
    if !e.slowest.is_empty() {
        page.body.push_str("<h4>Attributes by evaluation time</h4>");
        attribute_rows(page, &e.slowest);
    }
    if !e.hungriest.is_empty() {
        page.body.push_str("<h4>Attributes by memory added (the evaluator's RSS, /proc/PID/statm)</h4>");
        attribute_rows(page, &e.hungriest);
    }
}
