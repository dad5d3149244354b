//! The history page's model: per pass, the marks its evaluated chart draws
//! (past [`MARKS`] commits a mark stands for a run of neighbours, at their
//! medians' median), and the spans whose median moved most along the
//! series, each with its line and marks. Built here from a [`History`];
//! the report's page only draws it.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use crate::series::{History, Point};
use crate::Change;

/// Span charts per pass.
pub const SMALL_MULTIPLES: usize = 6;
/// The noise floor of "moved": a span's medians along the series must span
/// at least this many ms, and this share of their mean.
pub const MOVED_MS: f64 = 1.0;
pub const MOVED_SHARE: f64 = 0.10;
/// Marks a chart draws at most: past this many commits, a mark stands for
/// a run of neighbouring commits (about 2.5 px each on the 1,100 px chart,
/// where one mark per commit could not be told apart), and a page of
/// 10,000 commits stays a page. Changes are always drawn one by one.
pub const MARKS: usize = 400;

/// A chart's mark: the points (indices into its series) it stands for, and
/// the median of their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub points: Range<usize>,
    pub median: f64,
}

impl Mark {
    /// The point the mark is drawn at: the middle of the run it stands for.
    pub fn middle(&self) -> usize {
        (self.points.start + self.points.end - 1) / 2
    }
}

/// A span that moved along the series: its medians per commit (commit
/// index, ms) and the marks drawn of them.
#[derive(Debug, Clone)]
pub struct Moved {
    pub name: String,
    /// A change was found on it (flagged spans come first).
    pub flagged: bool,
    pub line: Vec<(usize, f64)>,
    pub marks: Vec<Mark>,
}

/// One pass's charts.
#[derive(Debug, Clone)]
pub struct PassCharts {
    /// The evaluated seconds' marks (of each point's median).
    pub marks: Vec<Mark>,
    /// The spans that moved most, at most [`SMALL_MULTIPLES`].
    pub moved: Vec<Moved>,
}

/// Every pass's charts, in the order of `h.passes`.
pub fn charts(h: &History) -> Vec<PassCharts> {
    h.passes
        .iter()
        .map(|(pass, series)| {
            let changes: Vec<&Change> = h.changes.iter().filter(|c| &c.pass == pass).collect();
            let medians: Vec<f64> = series.iter().map(|p| p.evaluated_s.median).collect();
            PassCharts { marks: marks(&medians), moved: moved_most(series, &changes) }
        })
        .collect()
}

/// The commits (indices into a series) each mark stands for: one each up
/// to `max`, else `max` runs of neighbours of near-equal length.
fn buckets(n: usize, max: usize) -> Vec<Range<usize>> {
    if n <= max {
        return (0..n).map(|i| i..i + 1).collect();
    }
    (0..max).map(|k| k * n / max..(k + 1) * n / max).collect()
}

/// The marks of `values`, at most [`MARKS`].
fn marks(values: &[f64]) -> Vec<Mark> {
    buckets(values.len(), MARKS)
        .into_iter()
        .map(|r| Mark { median: evalbench_analyze::verdict::median(&values[r.clone()]), points: r })
        .collect()
}

/// The spans whose median moved most along the series (flagged ones first).
fn moved_most(series: &[Point], changes: &[&Change]) -> Vec<Moved> {
    // Ranked from each span's range and mean alone, then only the drawn
    // ones are gathered: half a million pairs at 10,000 commits. Names are
    // shared between commits (`SpanMedians`), so a span is found by its
    // shared copy's address first, then by name (a copy per reading thread).
    #[derive(Clone, Copy)]
    struct Spanned {
        lo: f64,
        hi: f64,
        sum: f64,
        n: usize,
    }
    const NONE: Spanned = Spanned { lo: f64::INFINITY, hi: f64::NEG_INFINITY, sum: 0.0, n: 0 };
    let mut by_copy: HashMap<usize, (&str, Spanned)> = HashMap::new();
    for p in series {
        for (k, m) in &p.span_medians.0 {
            let e = by_copy.entry(std::sync::Arc::as_ptr(k) as *const u8 as usize).or_insert((k.as_ref(), NONE));
            e.1 = Spanned { lo: e.1.lo.min(*m), hi: e.1.hi.max(*m), sum: e.1.sum + m, n: e.1.n + 1 };
        }
    }
    let mut ranges: BTreeMap<&str, Spanned> = BTreeMap::new();
    for (name, r) in by_copy.values().copied() {
        let e = ranges.entry(name).or_insert(NONE);
        *e = Spanned { lo: e.lo.min(r.lo), hi: e.hi.max(r.hi), sum: e.sum + r.sum, n: e.n + r.n };
    }
    // A span seen at one commit only has no line to draw: no empty sparkline.
    // A span not flagged is said to have moved only past the noise floor:
    // its medians' range at least MOVED_MS and MOVED_SHARE of their mean
    // (microsecond spans ranked first by share had filled the page).
    ranges.retain(|k, r| {
        let flagged = changes.iter().any(|c| c.what == *k);
        let mean = r.sum / r.n.max(1) as f64;
        r.n >= 2 && (flagged || (r.hi - r.lo >= MOVED_MS && r.hi - r.lo >= MOVED_SHARE * mean))
    });
    let mut ranked: Vec<(&str, bool, f64)> = ranges
        .iter()
        .map(|(k, r)| {
            let mean = r.sum / r.n as f64;
            let flagged = changes.iter().any(|c| c.what == *k);
            (*k, flagged, if mean > 0.0 { (r.hi - r.lo) / mean } else { 0.0 })
        })
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.total_cmp(&a.2)).then(a.0.cmp(b.0)));
    ranked.truncate(SMALL_MULTIPLES);
    // The drawn spans' medians, in one scan, found by their shared copies.
    let drawn: HashMap<usize, usize> = by_copy
        .iter()
        .filter_map(|(copy, (name, _))| ranked.iter().position(|r| r.0 == *name).map(|i| (*copy, i)))
        .collect();
    let mut lines: Vec<Vec<(usize, f64)>> = vec![Vec::new(); ranked.len()];
    for p in series {
        for (k, m) in &p.span_medians.0 {
            if let Some(&i) = drawn.get(&(std::sync::Arc::as_ptr(k) as *const u8 as usize)) {
                lines[i].push((p.commit, *m));
            }
        }
    }
    ranked
        .into_iter()
        .zip(lines)
        .map(|((name, flagged, _), line)| {
            let values: Vec<f64> = line.iter().map(|x| x.1).collect();
            Moved { name: name.to_string(), flagged, marks: marks(&values), line }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_stand_for_runs_of_neighbours_past_the_limit() {
        assert_eq!(buckets(3, MARKS), vec![0..1, 1..2, 2..3]);
        let b = buckets(1001, 400);
        assert_eq!(b.len(), 400);
        assert_eq!((b[0].start, b[399].end), (0, 1001), "every commit in one mark");
        assert!(b.windows(2).all(|w| w[0].end == w[1].start && !w[0].is_empty()));
        let m = marks(&(0..1001).map(f64::from).collect::<Vec<_>>());
        assert_eq!((m[0].points.clone(), m[0].median, m[0].middle()), (0..2, 0.5, 0));
    }
}
