//! The evaluator: nix's counters side by side (exact counts of its work,
//! next to the times), and per pass the calls nix counted and the
//! attributes by time and by memory added.

use std::fmt::Write;

use evalbench_analyze::counters::{grouped, words, HEADLINE, NOISY};
use evalbench_analyze::view::{Attribute, PassView, Section};

use super::super::esc::esc;
use super::super::svg::ms;
use super::super::Page;
use super::ready;

/// nix's counters of every pass that has them, one column a pass.
pub fn counters_side_by_side(page: &mut Page, passes: &[PassView]) {
    let with: Vec<(&PassView, &evalbench_analyze::view::Evaluator)> = passes
        .iter()
        .filter_map(|p| match &p.evaluator {
            Section::Ready(e) if !e.counters.is_empty() => Some((p, e)),
            _ => None,
        })
        .collect();
    if with.is_empty() {
        return;
    }
    let mut names: Vec<&String> = with.iter().flat_map(|(_, e)| e.counters.keys()).collect();
    names.sort_by_key(|n| (HEADLINE.iter().position(|(k, _)| k == *n).unwrap_or(HEADLINE.len()), n.to_string()));
    names.dedup();
    page.body.push_str(
        "<h3>nix's counters side by side</h3><p class=\"note\">NIX_SHOW_STATS of every nix evaluation of the pass, summed. \
         Exact counts of nix's work: the same input gives the same numbers run after run, while times swing. \
         Marked * : a time or the GC heap's size, which are not. A pass answered from the eval cache evaluates nothing.</p>\
         <table><tr><th>counter</th>",
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
    for (title, rows) in [("Calls by primop", &e.primops), ("Calls by function (position of the lambda)", &e.functions)] {
        if rows.is_empty() {
            continue;
        }
        let _ = write!(page.body, "<h4>{title} (NIX_COUNT_CALLS)</h4><table><tr><th>what</th><th>calls</th></tr>");
        for (what, n) in rows.iter() {
            let _ = write!(page.body, "<tr><td><code>{}</code></td><td class=\"n\">{}</td></tr>", esc(what), grouped(*n as f64));
        }
        page.body.push_str("</table>");
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
