//! Root spans per process, laid out for a timeline this many pixels wide:
//! neighbours narrower than a pixel are merged into one bar that says what
//! it holds, so a lane of thousands of short spans stays readable and small.

use std::collections::HashMap;

use evalbench_bundle::spans::IdMap;

use super::PassView;
use crate::path::Segment;

/// The width of the timeline's drawing area.
pub const TIMELINE_PIXELS: f64 = 880.0;

#[derive(Debug)]
pub struct Timeline {
    /// Server, then worker, then eval, then the rest.
    pub lanes: Vec<Lane>,
    /// Root spans merged into shared bars.
    pub merged: usize,
}

#[derive(Debug)]
pub struct Lane {
    /// "<process> <pid>[ @host]".
    pub label: String,
    pub bars: Vec<Bar>,
}

#[derive(Debug)]
pub struct Bar {
    pub start: f64,
    pub end: f64,
    /// The span's name, or the most frequent name of a merged bar.
    pub name: String,
    /// For a merged bar: its names with their counts, most frequent first.
    pub merged: Vec<(String, usize)>,
    /// Spans in the bar.
    pub spans: usize,
}

pub(super) fn lanes(p: &PassView, t0: f64, t1: f64) -> Timeline {
    let px_us = (t1 - t0) / TIMELINE_PIXELS;
    let mut lanes: Vec<Lane> = Vec::new();
    let mut merged_total = 0usize;
    for st in &p.data.streams {
        let off = p.align.offset_for(st) as f64;
        // A vector by id where ids are dense (ours are): a hash set of 3.9M
        // ids was 75 MB at the inspect's peak.
        let ids = IdMap::indices(st);
        let mut roots: Vec<(f64, f64, &str)> = st
            .spans
            .iter()
            .filter(|s| st.parent(s).is_none_or(|pa| ids.get(pa).is_none()))
            .map(|s| (s.ts_us as f64 + off, s.end_us() as f64 + off, st.name(s)))
            .collect();
        roots.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.total_cmp(&b.1)).then_with(|| a.2.cmp(b.2)));
        let mut bars: Vec<Bar> = Vec::new();
        let mut group: Vec<(f64, f64, &str)> = Vec::new();
        for r in roots {
            let joins = group.last().is_some_and(|g| r.0 - g.1 < px_us && (r.1 - r.0) < px_us && (g.1 - g.0) < px_us);
            if !joins {
                flush(&mut group, &mut bars, &mut merged_total);
            }
            group.push(r);
        }
        flush(&mut group, &mut bars, &mut merged_total);
        let label =
            format!("{} {}{}", st.process, st.pid, st.host.as_deref().map(|h| format!(" @{h}")).unwrap_or_default());
        lanes.push(Lane { label, bars });
    }
    lanes.sort_by_key(|l| match l.label.split(' ').next() {
        Some("server") => 0,
        Some("worker") => 1,
        Some("eval") => 2,
        _ => 3,
    });
    Timeline { lanes, merged: merged_total }
}

fn flush(group: &mut Vec<(f64, f64, &str)>, bars: &mut Vec<Bar>, merged: &mut usize) {
    if group.is_empty() {
        return;
    }
    let s = group[0].0;
    let e = group.iter().map(|g| g.1).fold(s, f64::max);
    if group.len() == 1 {
        let g = group[0];
        bars.push(Bar { start: g.0, end: g.1, name: g.2.to_string(), merged: Vec::new(), spans: 1 });
    } else {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for g in group.iter() {
            *counts.entry(g.2).or_default() += 1;
        }
        let mut c: Vec<(&str, usize)> = counts.into_iter().collect();
        c.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        *merged += group.len();
        bars.push(Bar {
            start: s,
            end: e,
            name: c[0].0.to_string(),
            merged: c.into_iter().map(|(n, k)| (n.to_string(), k)).collect(),
            spans: group.len(),
        });
    }
    group.clear();
}

/// Stretches of the critical path narrower than this share of it are
/// merged into one bar of its lane (about a pixel of the timeline).
pub const PATH_MIN_SHARE: f64 = 1.0 / 900.0;

/// A bar of the critical path's lane: one stretch, or neighbours narrower
/// than [`PATH_MIN_SHARE`] of the path merged into one.
#[derive(Debug)]
pub struct PathBar {
    pub start_us: i64,
    pub end_us: i64,
    /// Stretches in the bar.
    pub stretches: usize,
    /// Each step's time in the bar (µs) by its label (`process name` or
    /// `wait: what`), most first, ties in path order: the first names the bar.
    pub steps: Vec<(String, i64)>,
}

/// The critical path's stretches as bars, narrow neighbours merged.
pub fn path_bars(segs: &[Segment], from_us: i64, to_us: i64) -> Vec<PathBar> {
    let min = (to_us - from_us) as f64 * PATH_MIN_SHARE;
    let label = |s: &Segment| match s.process() {
        Some(p) => format!("{p} {}", s.name()),
        None => format!("wait: {}", s.name()),
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let start = segs[i].from_us;
        let mut j = i;
        let mut steps: Vec<(String, i64)> = Vec::new();
        loop {
            let (l, us) = (label(&segs[j]), segs[j].to_us.saturating_sub(segs[j].from_us));
            match steps.iter_mut().find(|(n, _)| *n == l) {
                Some((_, total)) => *total = total.saturating_add(us),
                None => steps.push((l, us)),
            }
            j += 1;
            if j >= segs.len() || (segs[j - 1].to_us - start) as f64 >= min {
                break;
            }
        }
        steps.sort_by_key(|b| std::cmp::Reverse(b.1));
        out.push(PathBar { start_us: start, end_us: segs[j - 1].to_us, stretches: j - i, steps });
        i = j;
    }
    out
}
