//! Span totals by (name, process), each with its own time beside it: a
//! span's duration less the time its children (spans of the same process
//! whose parent it is) covered. Nested spans' totals stack up past the
//! evaluated time (seven server spans of ~180 ms each inside one 0.48 s
//! evaluation); own times add up to no more than the processes' work, and
//! are what `whatif --faster` shortens.

use std::collections::HashMap;

use evalbench_bundle::Stream;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpanStat {
    pub name: String,
    pub process: String,
    pub count: u64,
    pub total_us: i64,
    /// The spans' own time, added: each one's duration less the union of
    /// its children's (in the same process); equal to `total_us` for spans
    /// without children or without ids.
    pub own_us: i64,
    pub mean_us: i64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub max_us: i64,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[evalbench_decode::rank::nearest_rank(sorted.len(), q) - 1]
}

/// Nearest-rank percentile by selection (reorders `v`).
pub fn select_rank<T: Copy + Ord + Into<i64>>(v: &mut [T], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let rank = evalbench_decode::rank::nearest_rank(v.len(), q);
    (*v.select_nth_unstable(rank - 1).1).into()
}

/// Aggregates every span by (name, process), sorted by total time, largest first.
///
/// Every duration is held once, in a vector sized to its group (counted
/// first), and as 4 bytes where every duration of the pass fits: at 4.5M
/// spans, 18 MB where growing 8-byte vectors peaked at 47 MB.
pub fn span_stats(streams: &[Stream]) -> Vec<SpanStat> {
    if streams.iter().flat_map(|st| &st.spans).all(|s| u32::try_from(s.dur_us).is_ok()) {
        grouped(streams, |d| d as u32)
    } else {
        grouped(streams, |d| d)
    }
}

fn grouped<T: Copy + Ord + Into<i64>>(streams: &[Stream], narrow: impl Fn(i64) -> T) -> Vec<SpanStat> {
    // Each (name, process) numbered, and each stream's names mapped to it:
    // one hash lookup per name, not per span.
    let mut group_of: HashMap<(&str, &str), usize> = HashMap::new();
    let mut counts: Vec<usize> = Vec::new();
    let local: Vec<Vec<usize>> = streams
        .iter()
        .map(|st| {
            let mut n = vec![0usize; st.names.len()];
            for s in &st.spans {
                n[s.name as usize] += 1;
            }
            n.iter()
                .enumerate()
                .map(|(i, &k)| {
                    if k == 0 {
                        return usize::MAX;
                    }
                    let next = group_of.len();
                    let g = *group_of.entry((st.names[i].as_str(), st.process.as_str())).or_insert(next);
                    if g == counts.len() {
                        counts.push(0);
                    }
                    counts[g] += k;
                    g
                })
                .collect()
        })
        .collect();
    let mut durations: Vec<Vec<T>> = counts.iter().map(|&k| Vec::with_capacity(k)).collect();
    let mut own: Vec<i64> = vec![0; counts.len()];
    for (st, local) in streams.iter().zip(&local) {
        let own_of = own_times(st);
        for (s, o) in st.spans.iter().zip(own_of) {
            let g = local[s.name as usize];
            durations[g].push(narrow(s.dur_us));
            own[g] = own[g].saturating_add(o);
        }
    }
    let mut keys: Vec<((&str, &str), usize)> = group_of.into_iter().collect();
    keys.sort_by_key(|k| k.1);
    sorted(
        keys.into_iter()
            .zip(durations)
            .zip(own)
            .map(|((((name, process), _), mut d), o)| stat_of(name, process, &mut d, Some(o)))
            .collect(),
    )
}

/// Sets each name's own time to the critical path's graph's: a span less
/// its children and less the spans of other tasks it waited on inside it
/// (the contract's waits: `record` waits on the writer's `flush`), which
/// nesting by ids alone ([`own_times`]) cannot see. The tables' own time
/// is then the one `whatif --faster` shortens (less, there, the PostgreSQL
/// round trips the path books under postgres).
pub fn own_from_path(stats: &mut [SpanStat], g: &crate::path::Graph) {
    let own: HashMap<(&str, &str), i64> = g.own_by_name().into_iter().map(|(p, n, o)| ((p, n), o)).collect();
    for s in stats.iter_mut() {
        if let Some(&o) = own.get(&(s.process.as_str(), s.name.as_str())) {
            s.own_us = o;
        }
    }
}

/// Each span's own time: its duration less the union of its children's
/// intervals (children found by parent id in the same stream, clipped to
/// the parent), never below 0. Sorting, no map: 16 bytes a span and 8 a
/// child while it runs.
pub fn own_times(st: &Stream) -> Vec<i64> {
    // A span without children keeps its duration as it is (a negative one too: the total counts it).
    let mut own: Vec<i64> = st.spans.iter().map(|s| s.dur_us).collect();
    let mut by_id: Vec<(u64, u32)> =
        st.spans.iter().enumerate().filter_map(|(i, s)| Some((st.id(s)?, i as u32))).collect();
    if by_id.is_empty() {
        return own;
    }
    by_id.sort_unstable();
    // (parent's index, child's index): 8 bytes a span where the child's
    // times beside it made 24, the largest part of the statistics' peak.
    let mut kids: Vec<(u32, u32)> = st
        .spans
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let p = st.parent(s)?;
            let at = by_id.binary_search_by_key(&p, |x| x.0).ok()?;
            Some((by_id[at].1, i as u32))
        })
        .collect();
    drop(by_id);
    // By parent, then start: ties between starts may fall in any order (the
    // union below is the same), so an unstable sort will do.
    kids.sort_unstable_by_key(|&(p, c)| (p, st.spans[c as usize].ts_us));
    let mut i = 0;
    while i < kids.len() {
        let parent = kids[i].0;
        let (lo, hi) = (st.spans[parent as usize].ts_us, st.spans[parent as usize].end_us());
        let mut covered = 0i64;
        let mut reach = i64::MIN;
        while i < kids.len() && kids[i].0 == parent {
            let kid = &st.spans[kids[i].1 as usize];
            let (a, b) = (kid.ts_us.max(lo).max(reach), kid.end_us().min(hi));
            if b > a {
                covered = covered.saturating_add(b - a);
            }
            reach = reach.max(b);
            i += 1;
        }
        if covered > 0 {
            own[parent as usize] = own[parent as usize].saturating_sub(covered).max(0);
        }
    }
    own
}

/// The statistics of every (name, process)'s durations, largest total first.
pub fn stats_of<K: AsRef<str>>(groups: impl IntoIterator<Item = ((K, K), Vec<i64>)>) -> Vec<SpanStat> {
    sorted(
        groups
            .into_iter()
            .filter(|(_, d)| !d.is_empty())
            .map(|((name, process), mut d)| stat_of(name.as_ref(), process.as_ref(), &mut d, None))
            .collect(),
    )
}

/// One (name, process)'s statistics; `d` is reordered, never empty; `own`
/// None: no nesting known, the total is the own time.
fn stat_of<T: Copy + Ord + Into<i64>>(name: &str, process: &str, d: &mut [T], own: Option<i64>) -> SpanStat {
    let total: i64 = d.iter().map(|&x| x.into()).sum();
    let max = d.iter().copied().max().map_or(0, Into::into);
    // Two selections instead of a sort: same nearest-rank answer, linear time.
    let p95 = select_rank(d, 0.95);
    let p50 = select_rank(d, 0.50);
    SpanStat {
        name: name.to_string(),
        process: process.to_string(),
        count: d.len() as u64,
        total_us: total,
        own_us: own.unwrap_or(total),
        mean_us: total / d.len() as i64,
        p50_us: p50,
        p95_us: p95,
        max_us: max,
    }
}

fn sorted(mut out: Vec<SpanStat>) -> Vec<SpanStat> {
    out.sort_by(|a, b| {
        b.total_us.cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)).then_with(|| a.process.cmp(&b.process))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn selection_agrees_with_sorting() {
        let mut v: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1013).collect();
        let mut sorted = v.clone();
        sorted.sort();
        for q in [0.01, 0.5, 0.95, 0.999, 1.0] {
            assert_eq!(super::select_rank(&mut v, q), percentile(&sorted, q));
        }
    }

    /// Seeded streams, some sharing a process, names and durations from
    /// small sets (negative and past u32 in some rounds: the 8-byte path):
    /// the grouped statistics are those of each group's durations listed.
    #[test]
    fn grouped_statistics_are_each_groups_own() {
        use evalbench_bundle::{Span, Stream};
        let mut r = crate::seeded::Seeded(0x5eed_57a7);
        for round in 0..200 {
            let wide = [0, -5, 1 << 40][round % 3];
            let streams: Vec<Stream> = (0..1 + r.next(4))
                .map(|_| {
                    let names: Vec<String> = (0..1 + r.next(4)).map(|i| format!("n{}", (i + r.next(3)) % 4)).collect();
                    let mut st = Stream { process: format!("p{}", r.next(2)), names, ..Stream::default() };
                    for _ in 0..r.next(60) {
                        let d = if r.next(10) == 0 { wide } else { r.next(50) as i64 };
                        st.push(Span::new(r.next(st.names.len() as u64) as u32, 0, 0, d), "", "");
                    }
                    st
                })
                .collect();
            let mut groups: std::collections::HashMap<(String, String), Vec<i64>> = Default::default();
            for st in &streams {
                for sp in &st.spans {
                    groups.entry((st.names[sp.name as usize].clone(), st.process.clone())).or_default().push(sp.dur_us);
                }
            }
            assert_eq!(super::span_stats(&streams), super::stats_of(groups), "round {round}");
        }
    }

    /// Seeded parents and children (overlapping, reaching past the parent,
    /// some with a parent id nobody has): a span's own time is its
    /// microseconds that no child of it covers, counted one by one.
    #[test]
    fn own_time_is_what_no_child_covers() {
        use evalbench_bundle::{Span, Stream};
        let mut r = crate::seeded::Seeded(0x0e_1f7e);
        for round in 0..300 {
            let mut st = Stream { process: "p".into(), names: vec!["n".into()], ..Stream::default() };
            let n = 1 + r.next(12);
            let mut raw = Vec::new();
            for id in 1..=n {
                let ts = r.next(60) as i64;
                let dur = r.next(40) as i64;
                let parent = if id > 1 && r.next(4) > 0 { Some(1 + r.next(n + 1)) } else { None };
                raw.push((id, ts, dur, parent));
                let s = Span::new(0, 0, ts, dur);
                let s = st.with_ids(s, Some(id), parent, None);
                st.push(s, "", "");
            }
            let own = super::own_times(&st);
            for (i, &(id, ts, dur, _)) in raw.iter().enumerate() {
                let mine = (ts..ts + dur)
                    .filter(|&t| !raw.iter().any(|&(_, cts, cdur, p)| p == Some(id) && (cts..cts + cdur).contains(&t)))
                    .count();
                assert_eq!(own[i], mine as i64, "round {round}, span {id}");
            }
        }
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.95), 95);
        assert_eq!(percentile(&[7], 0.95), 7);
    }
}
