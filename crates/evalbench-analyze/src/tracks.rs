//! Tracks: Perfetto draws complete events of one track as a stack, so every
//! track must nest. Spans of concurrent tasks in one process overlap without
//! nesting; they go on separate tracks, each named after its root span.
//!
//! A span goes on its parent's track when it nests there directly under its
//! parent (exact, through `id`/`parent`). A span without a known parent goes
//! on the first track where it nests by time. Anything else starts a root on
//! a free track of the same root name, or a new track. A span that names its
//! own track (a `track` field: the lab's `evaluator` spans say `evaluator 0`,
//! `evaluator 1`, …) goes on a free track of that name, whatever its parent,
//! so concurrent workers of one process each get a track named for them.

use std::collections::HashMap;

use evalbench_bundle::spans::IdMap;
use evalbench_bundle::Stream;

/// Where each span of a stream goes.
#[derive(Debug, Clone, Default)]
pub struct Tracks {
    /// Track index of each span, in the stream's span order.
    pub of_span: TrackOf,
    /// Name of each track (its first root's name, numbered when repeated).
    pub names: Vec<String>,
}

/// Each span's track, in as few bytes as the stream's tracks need: a
/// stream has few tracks, and the trace writer holds these beside the
/// pass (the server's 3.1M spans at 4.5M were 12 MB as words).
#[derive(Debug, Clone)]
pub enum TrackOf {
    Bytes(Vec<u8>),
    Halves(Vec<u16>),
    Words(Vec<u32>),
}

impl Default for TrackOf {
    fn default() -> TrackOf {
        TrackOf::zeros(0)
    }
}

impl TrackOf {
    fn zeros(n: usize) -> TrackOf {
        TrackOf::Bytes(vec![0; n])
    }

    /// Span `k`'s track is `t`; widened first when `t` does not fit.
    fn set(&mut self, k: usize, t: u32) {
        loop {
            match self {
                TrackOf::Bytes(v) => match u8::try_from(t) {
                    Ok(b) => return v[k] = b,
                    Err(_) => *self = TrackOf::Halves(v.iter().map(|&x| x.into()).collect()),
                },
                TrackOf::Halves(v) => match u16::try_from(t) {
                    Ok(h) => return v[k] = h,
                    Err(_) => *self = TrackOf::Words(v.iter().map(|&x| x.into()).collect()),
                },
                TrackOf::Words(v) => return v[k] = t,
            }
        }
    }

    /// Span `k`'s track.
    pub fn get(&self, k: usize) -> Option<u32> {
        match self {
            TrackOf::Bytes(v) => v.get(k).map(|&t| t.into()),
            TrackOf::Halves(v) => v.get(k).map(|&t| t.into()),
            TrackOf::Words(v) => v.get(k).copied(),
        }
    }
}

struct Track {
    /// Open spans: (end, id or u64::MAX when unknown).
    stack: Vec<(i64, u64)>,
    root: u32,
    /// The name a span gave its track (its `track` field).
    label: Option<String>,
}

/// What tracks are reused by: the root span's name, or the name a span gave.
#[derive(PartialEq, Eq, Hash)]
enum Key {
    Root(u32),
    Label(String),
}

/// Whether a span's fields may name its track: the spans whose fields a
/// load must keep for the tracks, whatever their name.
pub fn names_a_track(fields: &str) -> bool {
    fields.contains("\"track\"")
}

/// The `track` field of a span, when it has one.
fn own_track(stream: &Stream, s: &evalbench_bundle::Span) -> Option<String> {
    if !names_a_track(stream.fields(s)) {
        return None;
    }
    stream.field(s, "track").and_then(|v| v.as_str().map(String::from))
}

impl Track {
    fn pop_ended(&mut self, ts: i64) {
        while let Some(&(end, _)) = self.stack.last() {
            if end <= ts {
                self.stack.pop();
            } else {
                break;
            }
        }
    }
    fn fits(&self, end: i64) -> bool {
        self.stack.last().is_none_or(|&(top_end, _)| top_end >= end)
    }
}

/// The spans by start, longest first, then by id and index. Compact keys
/// are sorted, not indices into the spans (far fewer cache misses), and
/// only the start goes into them; the spans that start together are then
/// put in order among themselves. Where the stream's starts span few
/// enough microseconds, a key is 8 bytes (start from the first, then the
/// index, in one u64), else 16: at 3.9M spans of one stream the keys were
/// the trace writer's largest cost.
fn start_order(stream: &Stream) -> Vec<u32> {
    let spans = &stream.spans;
    let mut order = by_start(spans);
    let mut from = 0;
    while from < order.len() {
        let ts = spans[order[from] as usize].ts_us;
        let mut to = from + 1;
        while to < order.len() && spans[order[to] as usize].ts_us == ts {
            to += 1;
        }
        if to - from > 1 {
            order[from..to].sort_unstable_by_key(|&i| {
                let s = &spans[i as usize];
                (s.dur_us.saturating_neg(), stream.id(s).unwrap_or(0), i)
            });
        }
        from = to;
    }
    order
}

/// The span indices sorted by (start, index).
fn by_start(spans: &[evalbench_bundle::Span]) -> Vec<u32> {
    let first = spans.iter().map(|s| s.ts_us).min().unwrap_or(0);
    let last = spans.iter().map(|s| s.ts_us).max().unwrap_or(0);
    let index_bits = u64::BITS - (spans.len() as u64).leading_zeros();
    let range = (last as i128 - first as i128) as u128;
    if index_bits < 64 && range < 1u128 << (64 - index_bits) {
        let mut keys: Vec<u64> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.ts_us.wrapping_sub(first) as u64) << index_bits) | i as u64)
            .collect();
        keys.sort_unstable();
        let mask = (1u64 << index_bits) - 1;
        // Taken from the end, the keys given back as they go: the keys and
        // the order side by side were the trace writer's peak.
        let mut order = Vec::with_capacity(keys.len());
        while let Some(k) = keys.pop() {
            order.push((k & mask) as u32);
            if keys.len().is_multiple_of(1 << 16) {
                keys.shrink_to_fit();
            }
        }
        order.reverse();
        return order;
    }
    let mut keys: Vec<(i64, u32)> = spans.iter().enumerate().map(|(i, s)| (s.ts_us, i as u32)).collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k.1).collect()
}

/// A pass's streams laid out for a trace: the order its processes are
/// drawn in, and each one's tracks.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Stream indices in drawing order: server, worker, eval, then any
    /// other process; by host and pid within each.
    pub order: Vec<usize>,
    /// Each stream's tracks, in `order`'s order.
    pub tracks: Vec<Tracks>,
}

/// Where a process is drawn among the pass's: the pipeline's order.
fn process_rank(p: &str) -> u32 {
    match p {
        "server" => 0,
        "worker" => 1,
        "eval" => 2,
        _ => 3,
    }
}

/// Every stream of a pass laid out, each on a core of its own where there
/// are several (a pass's largest stream, the server's, lays out in about
/// a second at a million spans).
pub fn lay_out(streams: &[Stream]) -> Layout {
    let mut order: Vec<usize> = (0..streams.len()).collect();
    order.sort_by_key(|&i| (process_rank(&streams[i].process), streams[i].host.clone(), streams[i].pid));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tracks = if threads == 1 {
        order.iter().map(|&i| assign(&streams[i])).collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots = std::sync::Mutex::new((0..order.len()).map(|_| None).collect::<Vec<Option<Tracks>>>());
        std::thread::scope(|s| {
            for _ in 0..threads.min(order.len().max(1)) {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let t = assign(&streams[i]);
                    slots.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(t);
                });
            }
        });
        let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
        slots.into_iter().map(|t| t.expect("every stream laid out")).collect()
    };
    Layout { order, tracks }
}

/// A free track of `key` for span `s`, or a new one.
fn free_or_new(
    tracks: &mut Vec<Track>,
    by_key: &mut HashMap<Key, Vec<u32>>,
    key: Key,
    s: &evalbench_bundle::Span,
) -> u32 {
    let free = by_key.get(&key).and_then(|ts| {
        ts.iter().copied().find(|&t| {
            let tr = &mut tracks[t as usize];
            tr.pop_ended(s.ts_us);
            tr.stack.is_empty()
        })
    });
    free.unwrap_or_else(|| {
        let t = tracks.len() as u32;
        let label = match &key {
            Key::Label(l) => Some(l.clone()),
            Key::Root(_) => None,
        };
        tracks.push(Track { stack: Vec::new(), root: s.name, label });
        by_key.entry(key).or_default().push(t);
        t
    })
}

/// Each track's name: the one a span gave it, or its first root's name,
/// numbered from the second track of that name on.
fn names(stream: &Stream, tracks: &[Track]) -> Vec<String> {
    let mut seen: HashMap<u32, usize> = HashMap::new();
    tracks
        .iter()
        .map(|t| {
            if let Some(l) = &t.label {
                return l.clone();
            }
            let n = seen.entry(t.root).or_insert(0);
            *n += 1;
            let base = &stream.names[t.root as usize];
            if *n == 1 {
                base.clone()
            } else {
                format!("{base} #{n}")
            }
        })
        .collect()
}

/// Lays out one stream; `offset` does not matter (it moves every span alike).
pub fn assign(stream: &Stream) -> Tracks {
    let spans = &stream.spans;
    let order = start_order(stream);
    let mut tracks: Vec<Track> = Vec::new();
    let mut by_key: HashMap<Key, Vec<u32>> = HashMap::new();
    let mut track_of_id = IdMap::new(stream);
    let mut of_span = TrackOf::zeros(spans.len());
    for &i in &order {
        let s = &spans[i as usize];
        let end = s.end_us();
        let (id, parent) = (stream.id(s), stream.parent(s));
        let id_or_max = id.unwrap_or(u64::MAX);
        let own = own_track(stream, s);
        let mut placed = None;
        match parent.and_then(|p| track_of_id.get(p).map(|t| (p, t))).filter(|_| own.is_none()) {
            Some((parent, t)) => {
                let tr = &mut tracks[t as usize];
                tr.pop_ended(s.ts_us);
                if tr.stack.last().is_some_and(|&(pe, pid)| pid == parent && pe >= end) {
                    placed = Some(t);
                }
            }
            None if own.is_none() && parent.is_none() && id.is_none() => {
                // No ids at all: nest by time on the first track that takes it.
                for (t, tr) in tracks.iter_mut().enumerate() {
                    tr.pop_ended(s.ts_us);
                    if !tr.stack.is_empty() && tr.fits(end) {
                        placed = Some(t as u32);
                        break;
                    }
                }
            }
            None => {}
        }
        if placed.is_none() {
            // A root here (or a span naming its track): a free track of the
            // same name, or a new one.
            let key = match own {
                Some(label) => Key::Label(label),
                None => Key::Root(s.name),
            };
            placed = Some(free_or_new(&mut tracks, &mut by_key, key, s));
        }
        let t = placed.expect("placed");
        tracks[t as usize].stack.push((end, id_or_max));
        if let Some(id) = id {
            track_of_id.insert(id, t);
        }
        of_span.set(i as usize, t);
    }
    let names = names(stream, &tracks);
    Tracks { of_span, names }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalbench_bundle::Span;

    /// The order is the sort of every span by (start, longest first, id,
    /// index): seeded spans with few distinct starts, durations and ids;
    /// every other round with starts too far apart for the 8-byte keys.
    #[test]
    fn the_start_order_is_the_full_keys_sort() {
        let mut r = crate::seeded::Seeded(0x2545_f491_4f6c_dd1du64);
        let mut next = |n: u64| r.next(n);
        for round in 0..300 {
            let step = if round % 2 == 0 { 1 } else { i64::MAX / 3 };
            let mut st = Stream::default();
            for _ in 0..next(80) {
                let id = (next(4) > 0).then(|| next(5));
                let s = st.with_ids(Span::new(0, 0, (next(6) as i64 - 2) * step, next(5) as i64 - 1), id, None, None);
                st.spans.push(s);
            }
            let mut full: Vec<u32> = (0..st.spans.len() as u32).collect();
            full.sort_by_key(|&i| {
                let s = &st.spans[i as usize];
                (s.ts_us, -s.dur_us, st.id(s).unwrap_or(0), i)
            });
            assert_eq!(start_order(&st), full, "round {round}");
        }
    }

    fn span(name: u32, ts: i64, dur: i64, id: Option<u64>, parent: Option<u64>) -> Span {
        Span::new(name, 0, ts, dur).with_ids(id, parent, None)
    }

    /// A span's track is kept in a byte until a track needs more, then
    /// in two, then in four, each track set before kept as it was.
    #[test]
    fn tracks_widen_as_they_grow_and_keep_what_was_set() {
        let mut of = TrackOf::zeros(5);
        let tracks = [7, 255, 256, 65_535, 65_536];
        for (k, &t) in tracks.iter().enumerate() {
            of.set(k, t);
            let kind = match &of {
                TrackOf::Bytes(_) => 1,
                TrackOf::Halves(_) => 2,
                TrackOf::Words(_) => 4,
            };
            assert_eq!(kind, [1, 1, 2, 2, 4][k], "after track {t}");
            assert!((0..=k).all(|j| of.get(j) == Some(tracks[j])), "after track {t}: {of:?}");
        }
        assert_eq!(of.get(5), None);
    }

    fn nests(stream: &Stream, t: &Tracks) -> bool {
        for (i, a) in stream.spans.iter().enumerate() {
            for (j, b) in stream.spans.iter().enumerate() {
                if i == j || t.of_span.get(i) != t.of_span.get(j) {
                    continue;
                }
                let overlap = a.ts_us < b.end_us() && b.ts_us < a.end_us();
                let a_in_b = a.ts_us >= b.ts_us && a.end_us() <= b.end_us();
                let b_in_a = b.ts_us >= a.ts_us && b.end_us() <= a.end_us();
                if overlap && !a_in_b && !b_in_a {
                    return false;
                }
            }
        }
        true
    }

    #[test]
    fn concurrent_tasks_get_their_own_tracks_and_children_follow_parents() {
        let stream = Stream {
            names: vec!["job".into(), "wave".into()],
            spans: vec![
                span(0, 0, 100, Some(1), None),
                span(0, 50, 100, Some(2), None),
                span(1, 10, 20, Some(3), Some(1)),
                span(1, 60, 20, Some(4), Some(2)),
                span(1, 200, 5, Some(5), None),
            ],
            ..Default::default()
        };
        let t = assign(&stream);
        assert!(nests(&stream, &t));
        let of = |k| t.of_span.get(k).unwrap();
        assert_ne!(of(0), of(1));
        assert_eq!(of(2), of(0));
        assert_eq!(of(3), of(1));
        assert_eq!(t.names[of(1) as usize], "job #2");
    }

    proptest::proptest! {
        #[test]
        fn every_track_nests(raw in proptest::collection::vec((0u32..3, 0i64..1000, 0i64..300, proptest::bool::ANY),
            1..60)) {
            let spans: Vec<Span> = raw.iter().enumerate().map(|(i, &(n, ts, dur, with_ids))| {
                let id = with_ids.then_some(i as u64 + 1);
                let parent = (with_ids && i > 0).then_some(i as u64);
                span(n, ts, dur, id, parent)
            }).collect();
            let stream = Stream { names: vec!["a".into(), "b".into(), "c".into()], spans, ..Default::default() };
            let t = assign(&stream);
            proptest::prop_assert!(nests(&stream, &t));
        }
    }
}
