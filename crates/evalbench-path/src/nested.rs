//! The graph's edges, made when a node's predecessors are asked for, from
//! the spans' nesting: a list of every edge (8 bytes an edge, with a CSR
//! index beside it: 130 MB at 4.5M spans) was the largest part of the
//! graph, and everything the edges are made of is held anyway or costs
//! 12 bytes a span (each span's kids by end, where they start, and each
//! root's span that ended last before it).
//!
//! A node's predecessors come from one place only, so each list is made
//! on its own, in the order the walk prefers:
//! - a span's end: its own time if it has no kids, then its terminal
//!   kids, the latest-ending first;
//! - a kid's start: the sibling that ended last before it, else its
//!   parent's start;
//! - a root's start: its message (and the span it queued behind), else the
//!   span that ended last before it, else the origin;
//! - the end: what the status change waited on ([`end_edge`]).

use std::collections::HashMap;

use super::graph::{stream_of, Kind, StreamId};
use super::nodes::{Edge, Flat, Node, SpanId, NONE};

/// A message to a receiver root, as paired ([`super::prepare`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    /// The sender's span.
    pub sender: SpanId,
    /// The wait it is (network), and the wait where the receiver queued too.
    pub wait: u32,
    pub wait_queued: u32,
    /// How long the receiver said it queued, µs.
    pub queue_us: i64,
}

/// A message, with the span of the receiver's own process it queued
/// behind, where one ended after the message came.
#[derive(Debug, Clone, Copy)]
struct Message {
    sent: Sent,
    behind: Option<SpanId>,
}

/// In [`Nested::before`]: the root's message is what it waited for.
const MESSAGE: u32 = NONE - 1;

pub struct Nested {
    /// The spans that nest in another, grouped by that span, each group by
    /// (end, start, index); `kid_at` says where each span's group starts.
    kids: Vec<SpanId>,
    kid_at: Vec<u32>,
    /// Per span, what its start waited on: for a root, the span that ended
    /// last before it, or [`MESSAGE`] where its message is what it waited
    /// for; for a kid, the sibling that ended last before it; [`NONE`] for
    /// none. Found once: each is a binary search (among every span, or
    /// among a parent's kids, a million for some), a cache miss per step,
    /// and the nodes are asked for again by every prediction.
    before: Vec<u32>,
    inner_wait: HashMap<SpanId, u32>,
    sent_by: HashMap<SpanId, Message>,
    /// The wait behind a receiver's previous span.
    queued: u32,
    end_edge: Edge,
}

impl Nested {
    /// The edges of `spans` (flattened, one stream after another from
    /// `first_of_stream`), with the status change at `t1`.
    pub(super) fn new(
        spans: &[Flat],
        first_of_stream: &[u32],
        inner_wait: HashMap<SpanId, u32>,
        sent_by: HashMap<SpanId, Sent>,
        queued: u32,
        origin: Node,
        t1: i64,
    ) -> Nested {
        let n = spans.len();
        // The roots' causes (a sort of every span by end) on a thread of
        // their own, beside the kids' sort: each is a third of the edges'
        // making, and neither reads the other.
        let ((sent_by, mut before), (kids, kid_at)) = std::thread::scope(|s| {
            let roots = s.spawn(|| {
                let sent_by = queued_behind(spans, first_of_stream, sent_by);
                let anywhere = by_end(spans, 0..n as u32);
                let message = |r: SpanId| sent_by.get(&r).is_some_and(|m| spans[m.sent.sender].end <= spans[r].start);
                let mut before = vec![NONE; n];
                for r in (0..n).map(SpanId::at).filter(|&r| spans[r].up().is_none()) {
                    before[r.index()] =
                        if message(r) { MESSAGE } else { last_before(spans, &anywhere, r).map_or(NONE, SpanId::raw) };
                }
                (sent_by, before)
            });
            let kids = kids_by_parent(spans);
            (roots.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), kids)
        });
        for &k in &kids {
            let kf = &spans[k];
            let up = kf.up().map_or(0, SpanId::index);
            let ks = &kids[kid_at[up] as usize..kid_at[up + 1] as usize];
            let cnt = ks.partition_point(|&c| spans[c].end <= kf.start);
            let prior = ks[..cnt].iter().rev().copied().find(|&c| {
                let cf = &spans[c];
                c != k && (cf.start, c) < (kf.start, k)
            });
            before[k.index()] = prior.map_or(NONE, SpanId::raw);
        }
        let end_edge = end_edge(spans, &kids, &kid_at, origin, t1);
        Nested { kids, kid_at, before, inner_wait, sent_by, queued, end_edge }
    }

    fn kids_of(&self, s: SpanId) -> &[SpanId] {
        kids_of(&self.kids, &self.kid_at, s)
    }

    /// Node `v`'s predecessors to `out`, each with the weight it was given
    /// where it has one (else it weighs the time between its ends), in the
    /// order the walk prefers.
    pub(super) fn preds(&self, spans: &[Flat], origin: Node, v: Node, out: &mut dyn FnMut((Edge, Option<i64>))) {
        let e = |from: Node, kind: Kind| (Edge::new(from, kind), None);
        let Some((s, is_end)) = v.of_span(origin) else {
            if v == origin.next() {
                out((self.end_edge, None));
            }
            return;
        };
        if is_end {
            // The end waited on every kid that nothing in the span started
            // after (a kid followed by another reaches the end through it,
            // and its tail would hold the others' time as the span's own);
            // the latest-ending first.
            let ks = self.kids_of(s);
            if ks.is_empty() {
                out(e(Node::start(s), Kind::Own(s)));
            }
            let last = ks.iter().copied().max_by_key(|&k| (spans[k].start, k));
            for &k in ks.iter().rev() {
                let terminal = Some(k) == last || last.is_some_and(|l| spans[l].start < spans[k].end);
                if !terminal {
                    continue;
                }
                if spans[k].end <= spans[s].end {
                    out(e(Node::end(k), Kind::Own(s)));
                } else {
                    // A kid that outlived the span (a reply sent before its
                    // worker's span closed): the end waited for what the kid
                    // had done by then.
                    let (from, kind) = reached(spans, &self.kids, &self.kid_at, k, spans[s].end);
                    out(e(from, kind));
                }
            }
            return;
        }
        let k = s;
        let kf = &spans[k];
        if let Some(up) = kf.up() {
            // Only a kid that waits inside another's span has a wait of its own.
            let kind = if kf.remote() {
                self.inner_wait.get(&k).map_or(Kind::Own(up), |&w| Kind::Wait(w))
            } else {
                Kind::Own(up)
            };
            out(match SpanId::of_raw(self.before[k.index()]) {
                None => e(Node::start(up), kind),
                Some(c) => e(Node::end(c), kind),
            });
            return;
        }
        // A root: its message, else the span that ended last before it, else the origin.
        let rf = kf;
        let before = self.before[k.index()];
        if let Some(&Message { sent: Sent { sender, wait: w, wait_queued: wq, queue_us: queue }, behind }) =
            self.sent_by.get(&k).filter(|_| before == MESSAGE)
        {
            // A receiver that queued waited, after the message came, for its
            // own process to be free: for the span of its process that ended
            // last, when that ended in the queue. Else the queue is nothing
            // the spans show, and waits after the message, as long as measured.
            let from = Node::end(sender);
            if let Some(q) = behind {
                let transit = rf.start.saturating_sub(spans[sender].end).max(0);
                out((Edge::new(from, Kind::Wait(w)), Some(transit.saturating_sub(queue).max(0))));
                out(e(Node::end(q), Kind::Wait(self.queued)));
            } else if queue > 0 {
                out(e(from, Kind::Wait(wq)));
            } else {
                out(e(from, Kind::Wait(w)));
            }
            return;
        }
        out(match SpanId::of_raw(before).filter(|_| before != MESSAGE) {
            None => e(origin, Kind::Wait(0)),
            Some(q) => e(Node::end(q), Kind::Wait(1)),
        });
    }
}

/// The spans that nest in another, grouped by that span, each group by
/// (end, start, index), and where each span's group starts.
fn kids_by_parent(spans: &[Flat]) -> (Vec<SpanId>, Vec<u32>) {
    let n = spans.len();
    let mut kids: Vec<SpanId> = (0..n).map(SpanId::at).filter(|&i| spans[i].up().is_some()).collect();
    // Stable, though the keys are unique: the spans come nearly in this
    // order (a stream's lines are written as its spans end), whose runs
    // the stable sort finds (the unstable one took as long, at 8% more
    // of compare's instructions, bench/self.sh).
    kids.sort_by_key(|&i| (spans[i].up(), spans[i].end, spans[i].start, i));
    let mut kid_at = vec![0u32; n + 1];
    for up in kids.iter().filter_map(|&k| spans[k].up()) {
        kid_at[up.index() + 1] += 1;
    }
    for i in 0..n {
        kid_at[i + 1] += kid_at[i];
    }
    (kids, kid_at)
}

/// Span `s`'s kids, by (end, start, index).
fn kids_of<'a>(kids: &'a [SpanId], kid_at: &[u32], s: SpanId) -> &'a [SpanId] {
    &kids[kid_at[s.index()] as usize..kid_at[s.index() + 1] as usize]
}

/// The spans of `range` by (end, start, index): the order
/// [`last_before`] searches.
fn by_end(spans: &[Flat], range: std::ops::Range<u32>) -> Vec<SpanId> {
    let mut v: Vec<SpanId> = range.map(|i| SpanId::at(i as usize)).collect();
    v.sort_by_key(|&i| (spans[i].end, spans[i].start, i));
    v
}

/// Among `among` (sorted by end, start, index), the span that ended last
/// before `r` started, not `r` itself.
fn last_before(spans: &[Flat], among: &[SpanId], r: SpanId) -> Option<SpanId> {
    let rf = &spans[r];
    let cnt = among.partition_point(|&q| spans[q].end <= rf.start);
    among[..cnt].iter().rev().copied().find(|&q| {
        let qf = &spans[q];
        q != r && (qf.end < rf.start || qf.start < rf.start)
    })
}

/// Each message with the span its receiver queued behind: the span of the
/// receiver's process that ended last before the receiver started, when it
/// ended after the message arrived. Found once here, by stream and end, for
/// the few receivers (one a job), so no such order is kept.
fn queued_behind(spans: &[Flat], first_of_stream: &[u32], sent_by: HashMap<SpanId, Sent>) -> HashMap<SpanId, Message> {
    let queued: Vec<StreamId> = {
        let mut v: Vec<StreamId> =
            sent_by.iter().filter(|(_, m)| m.queue_us > 0).map(|(&r, _)| stream_of(first_of_stream, r)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let by_end: HashMap<StreamId, Vec<SpanId>> = queued
        .into_iter()
        .map(|st| (st, by_end(spans, first_of_stream[st.index()]..first_of_stream[st.index() + 1])))
        .collect();
    sent_by
        .into_iter()
        .map(|(r, sent)| {
            let arrived = spans[r].start.saturating_sub(sent.queue_us);
            let behind = (sent.queue_us > 0)
                .then(|| last_before(spans, &by_end[&stream_of(first_of_stream, r)], r))
                .flatten()
                .filter(|&q| spans[q].end >= arrived);
            (r, Message { sent, behind })
        })
        .collect()
}

/// The last thing inside kid `k` (and its kids) at or before `at`: the
/// end of its latest kid that had ended, or the start of the one running
/// then, descending; with whose own time the rest until `at` was.
fn reached(spans: &[Flat], kids: &[SpanId], kid_at: &[u32], k: SpanId, at: i64) -> (Node, Kind) {
    let mut cur = k;
    for _ in 0..256 {
        let ks = kids_of(kids, kid_at, cur);
        let ended = ks.iter().copied().filter(|&c| spans[c].end <= at).max_by_key(|&c| (spans[c].end, c));
        let running = ks
            .iter()
            .copied()
            .filter(|&c| spans[c].start <= at && spans[c].end > at)
            .max_by_key(|&c| (spans[c].start, c));
        match (ended, running) {
            (Some(e), Some(r)) if spans[r].start >= spans[e].end => cur = r,
            (None, Some(r)) => cur = r,
            (Some(e), _) => return (Node::end(e), Kind::Own(cur)),
            (None, None) => break,
        }
    }
    (Node::start(cur), Kind::Own(cur))
}

/// What the status change waited on: the server span it happened in (the
/// latest-starting one around it: the deepest), from its last kid that had
/// ended; else the server span that ended last before it.
fn end_edge(spans: &[Flat], kids: &[SpanId], kid_at: &[u32], origin: Node, t1: i64) -> Edge {
    let server = Flat::server;
    let any_server = spans.iter().any(server);
    let eligible = |f: &Flat| !any_server || server(f);
    let around = (0..spans.len())
        .map(SpanId::at)
        .filter(|&i| eligible(&spans[i]) && spans[i].start <= t1 && spans[i].end > t1)
        .max_by_key(|&i| (spans[i].start, i));
    if let Some(x) = around {
        let ks = kids_of(kids, kid_at, x);
        let cnt = ks.partition_point(|&c| spans[c].end <= t1);
        return match ks[..cnt].last() {
            Some(&c) => Edge::new(Node::end(c), Kind::Own(x)),
            None => Edge::new(Node::start(x), Kind::Own(x)),
        };
    }
    let last = (0..spans.len())
        .map(SpanId::at)
        .filter(|&i| eligible(&spans[i]) && spans[i].end <= t1)
        .max_by_key(|&i| (spans[i].end, i));
    match last {
        Some(y) => Edge::new(Node::end(y), Kind::Wait(2)),
        None => Edge::new(origin, Kind::Wait(1)),
    }
}
