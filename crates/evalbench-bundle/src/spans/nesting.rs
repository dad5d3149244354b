//! Nesting inferred by time, for span lines that carry no ids.
//!
//! Gradient's span files (`trace_file.rs`) write a span's name, times,
//! process and fields, but no `id`, `parent` or `thread`; everything that
//! reads nesting (the critical path, the flame graph by nesting, own time)
//! would see each span as a root. Within one process a span that started
//! no earlier and ended no later than another can be its child, and that
//! is what is taken: each span's parent is the innermost span of its
//! process that contains it in time (the latest-starting one, on a tie
//! the shortest, on a full tie the one read first).
//!
//! What containment cannot settle: two concurrent tasks of one process
//! (tokio's) give spans that overlap without either containing the other;
//! such a span is a child of the innermost span that does contain it, or
//! a root, never of one it only overlaps. A span that merely happens to lie
//! inside a concurrent, unrelated one is taken as its child: nothing in a
//! line tells the two apart. The stream says its nesting was inferred
//! ([`super::Stream::nesting_inferred`]) and every page that shows a path
//! made from it says so.

use super::{Span, Stream};

/// How far down the open spans a span looks for one that contains it:
/// partial overlaps of concurrent tasks stack up, and a pathological file
/// must not make the search quadratic. Past it the span is a root.
const MAX_SEARCH: usize = 256;

impl Stream {
    /// Whether any span of the stream carries an id or a parent.
    pub fn has_ids(&self) -> bool {
        self.spans.iter().any(|s| self.id(s).is_some() || self.parent(s).is_some())
    }

    /// Gives every span an id (its index + 1) and the parent containment
    /// says, when no span of the stream has an id of its own; a stream
    /// with ids is left as it is. Returns whether nesting was inferred.
    pub fn infer_nesting(&mut self) -> bool {
        if self.spans.is_empty() || self.has_ids() {
            return false;
        }
        let parents = contained_in(&self.spans);
        let mut wide = std::mem::take(&mut self.wide);
        for (i, p) in parents.into_iter().enumerate() {
            let span = self.spans[i];
            let thread = self.thread(&span);
            self.spans[i] = Stream::ids_into(span, [Some(i as u64 + 1), p.map(|p| p as u64 + 1), thread], &mut wide);
        }
        self.wide = wide;
        self.nesting_inferred = true;
        true
    }
}

/// Per span (by index), the index of the innermost span containing it.
fn contained_in(spans: &[Span]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    // Outer before inner: earlier start, then the longer, then file order.
    order.sort_by_key(|&i| (spans[i].ts_us, std::cmp::Reverse(spans[i].dur_us), i));
    let mut parents = vec![None; spans.len()];
    // Spans that may still contain a later one, outermost first.
    let mut open: Vec<usize> = Vec::new();
    for i in order {
        let (start, end) = (spans[i].ts_us, spans[i].end_us());
        // Those ended before this one starts contain nothing from here on.
        while open.last().is_some_and(|&o| spans[o].end_us() <= start && spans[o].end_us() < end) {
            open.pop();
        }
        let found =
            open.iter().rev().take(MAX_SEARCH).copied().find(|&o| spans[o].ts_us <= start && end <= spans[o].end_us());
        parents[i] = found;
        open.push(i);
    }
    parents
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(spans: &[(i64, i64)]) -> Stream {
        let mut st = Stream { process: "server".into(), names: vec!["x".into()], ..Default::default() };
        for &(ts, dur) in spans {
            st.push(Span::new(0, 0, ts, dur), "", "");
        }
        st
    }

    fn parents(st: &Stream) -> Vec<Option<u64>> {
        st.spans.iter().map(|s| st.parent(s)).collect()
    }

    #[test]
    fn contained_spans_nest_and_overlapping_ones_do_not() {
        // Written at close, children first: 0 [10,20] in 1 [0,100]; 2 [50,150] overlaps 1;
        // 3 [60,70] lies in both 1 and 2, innermost (latest start) is 2; 4 [200,210] alone.
        let mut st = stream(&[(10, 10), (0, 100), (50, 100), (60, 10), (200, 10)]);
        assert!(st.infer_nesting());
        assert!(st.nesting_inferred);
        assert_eq!(
            st.spans.iter().map(|s| st.id(s)).collect::<Vec<_>>(),
            vec![Some(1), Some(2), Some(3), Some(4), Some(5)]
        );
        assert_eq!(parents(&st), vec![Some(2), None, None, Some(3), None]);
    }

    #[test]
    fn a_full_tie_nests_the_later_line_in_the_earlier() {
        let mut st = stream(&[(0, 10), (0, 10)]);
        st.infer_nesting();
        assert_eq!(parents(&st), vec![None, Some(1)]);
    }

    #[test]
    fn a_stream_with_ids_is_left_alone() {
        let mut st = stream(&[(0, 10), (1, 2)]);
        let s = st.spans[1];
        st.spans[1] = st.with_ids(s, Some(7), None, None);
        assert!(!st.infer_nesting());
        assert_eq!(parents(&st), vec![None, None]);
        assert!(!st.nesting_inferred);
    }

    #[test]
    fn a_thousand_partial_overlaps_stay_linear() {
        // Each span starts 1 µs after the previous and lasts 1,000 µs: none contains another.
        let spans: Vec<(i64, i64)> = (0..5000).map(|i| (i, 1000)).collect();
        let mut st = stream(&spans);
        st.infer_nesting();
        assert!(parents(&st).iter().all(Option::is_none));
    }
}
