//! The pass as a graph of waits: every span's start and end is a node, and
//! an edge says "this could not happen before that, plus so long". The
//! edges come from what the spans show (nesting, and the pipeline's known
//! hand-offs across threads and processes) and, where a root span's cause
//! is unknown, from the span that ended last before it (the "last arrival"
//! assumption). With the measured weights, the longest path to every node
//! is its measured time, so the graph reproduces the pass; with some
//! weights shortened it predicts one (`whatif`). docs/ARCHITECTURE.md,
//! "The critical path".

use std::collections::HashMap;
use std::sync::Arc;

use evalbench_bundle::Stream;

use super::prepare::{prepare, prepare_owned, Prepared};
use super::Label;
use crate::Alignment;

pub use super::nodes::{Edge, Flat, Kind, NONE};

/// A wait between spans: what the time was spent waiting for.
pub const WAIT_BEFORE: &str = "before the first span";
pub const WAIT_IDLE: &str = "idle (after the span that ended last)";
pub const WAIT_STATUS: &str = "until the status changed";
pub const WAIT_QUEUE: &str = "queue (behind its process's previous span)";

/// A message from one process's span to the start of another's: the
/// receiver could not start before the sender ended, plus the transit.
/// Paired n-th to n-th per `job`, as the alignment pairs them.
/// The last label is the wait when the receiver queued and nothing in its
/// process explains the queue (see the roots in `edges`).
pub(super) const MESSAGES: [(&str, &str, &str, &str); 2] = [
    ("assign_job", "job", "network (assign_job → job)", "network and queue (assign_job → job)"),
    ("report_eval_result", "job_event", "network (report_eval_result → job_event)", "network and queue (report_eval_result → job_event)"),
];

/// A span that waits for another thread's or process's root span inside
/// it: (outer, inner, what the outer waits on before the inner starts,
/// same host only).
pub(super) const WAITS_ON: [(&str, &str, &str, bool); 3] = [
    ("record", "flush", "mailbox (record → flush)", true),
    ("evaluate_flake", "open", "spawn (evaluate_flake → eval open)", true),
    ("query_known_derivations", "known_derivations", "request (query_known_derivations → known_derivations)", false),
];

pub struct Graph {
    pub spans: Vec<Flat>,
    /// (process, span name) of each step; shared by the path's segments.
    pub steps: Vec<(Arc<str>, Arc<str>)>,
    /// Each step's label, shared by its stretches of a path.
    pub labels: Vec<Arc<Label>>,
    pub waits: Vec<Arc<Label>>,
    /// The origin's and the end's measured times; a span's nodes take
    /// theirs from the span ([`Graph::time`]), not from a vector of their own.
    pub origin_time: i64,
    pub end_time: i64,
    /// Predecessors per node (CSR), in the order the walk prefers them.
    pub pred_at: Vec<u32>,
    pub preds: Vec<Edge>,
    /// The weights of the edges marked [`Edge::explicit`], by their index
    /// in `preds`; every other edge weighs the time between its ends.
    pub explicit: HashMap<u32, i64>,
    pub origin: u32,
    pub end: u32,
    /// Where each stream's spans start among `spans`, and their end.
    pub first_of_stream: Vec<u32>,
    /// A topological order of the nodes, once asked for.
    pub(super) order: std::sync::OnceLock<Option<Vec<u32>>>,
}

/// A node's time as measured: span i starts at node 2i and ends at 2i+1;
/// any other node is the origin or the end.
fn node_time(spans: &[Flat], origin: u32, origin_time: i64, end_time: i64, v: u32) -> i64 {
    match spans.get(v as usize / 2) {
        Some(f) if v.is_multiple_of(2) => f.start,
        Some(f) => f.end,
        None if v == origin => origin_time,
        None => end_time,
    }
}

/// The stream of the pass's `g`-th span, by where each stream starts.
pub(super) fn stream_of(first_of_stream: &[u32], g: u32) -> u32 {
    first_of_stream.partition_point(|&f| f <= g).saturating_sub(1) as u32
}

impl Graph {
    /// Span `g`'s stream, and its index there (the pass's numbering).
    pub fn at(&self, g: u32) -> (u32, u32) {
        let st = stream_of(&self.first_of_stream, g);
        (st, g - self.first_of_stream[st as usize])
    }

    /// Node `v`'s time as measured.
    pub fn time(&self, v: u32) -> i64 {
        node_time(&self.spans, self.origin, self.origin_time, self.end_time, v)
    }

    /// How many nodes: two a span, the origin and the end.
    pub fn nodes(&self) -> usize {
        self.pred_at.len() - 1
    }

    pub fn preds_of(&self, node: u32) -> &[Edge] {
        &self.preds[self.pred_at[node as usize] as usize..self.pred_at[node as usize + 1] as usize]
    }

    /// Node `to`'s predecessors, each with its measured weight.
    pub fn weighed_preds(&self, to: u32) -> impl Iterator<Item = (&Edge, i64)> + '_ {
        let first = self.pred_at[to as usize];
        self.preds_of(to).iter().zip(first..).map(move |(e, i)| (e, self.weight_of(e, i, to)))
    }

    /// The measured weight of edge `e`, the `i`-th of `preds`, into `to`:
    /// the time between its ends, or the one kept apart (every edge that
    /// runs backwards is).
    pub(super) fn weight_of(&self, e: &Edge, i: u32, to: u32) -> i64 {
        if e.explicit() {
            return self.explicit.get(&i).copied().unwrap_or(0);
        }
        self.time(to).saturating_sub(self.time(e.from)).max(0)
    }
}

pub(super) fn wait_id(waits: &mut Vec<String>, w: &str) -> u32 {
    match waits.iter().position(|x| x == w) {
        Some(i) => i as u32,
        None => {
            waits.push(w.to_string());
            (waits.len() - 1) as u32
        }
    }
}

/// Builds the graph of the spans in `streams` for the evaluation from `t0`
/// to `t1` (server clock).
pub fn build(streams: &[Stream], align: &Alignment, t0: i64, t1: i64) -> Graph {
    edges(prepare(streams, align), t0, t1)
}

/// As [`build`], letting each stream go once it is flattened and its
/// hand-offs' fields taken out: the loaded streams and the flattened
/// spans are never all held side by side, and the edges, and their sorts'
/// scratch, are made without the loaded spans beside them.
pub fn build_owned(mut streams: Vec<Stream>, align: &Alignment, t0: i64, t1: i64) -> Graph {
    // Only the hand-offs' fields are read (job, kind, queue_wait_us): the
    // rest of the text goes first, a third of the spans' memory.
    for st in &mut streams {
        st.keep_text(reads_fields);
    }
    let p = prepare_owned(streams, align);
    crate::phase("path: spans flattened");
    edges(p, t0, t1)
}

/// The span names whose fields the graph reads: the hand-offs'.
pub(crate) fn reads_fields(name: &str) -> bool {
    MESSAGES.iter().any(|m| m.0 == name || m.1 == name) || WAITS_ON.iter().any(|w| w.0 == name || w.1 == name)
}

fn edges(prepared: Prepared, t0: i64, t1: i64) -> Graph {
    let Prepared { spans, steps, mut waits, inner_wait, sent_by, first_of_stream } = prepared;
    let (inner_wait, sent_by) = (&inner_wait, &sent_by);
    let n = spans.len();
    let origin = (2 * n) as u32;
    let end = origin + 1;
    let first = spans.iter().map(|f| f.start).min().unwrap_or(t0);
    let origin_time = t0.min(first);
    let nodes = 2 * n + 2;
    let time = |v: u32| node_time(&spans, origin, origin_time, t1, v);
    // (target, edge, its weight where not the time between its ends)
    let edge = |from: u32, to: u32, kind: Kind| (to, Edge::new(from, kind), None);
    // Kids of each span, by end.
    let mut kids: Vec<u32> = (0..n as u32).filter(|&i| spans[i as usize].up != NONE).collect();
    kids.sort_by_key(|&i| (spans[i as usize].up, spans[i as usize].end, spans[i as usize].start, i));
    let mut kid_at = vec![0u32; n + 1];
    for &k in &kids {
        kid_at[spans[k as usize].up as usize + 1] += 1;
    }
    for i in 0..n {
        kid_at[i + 1] += kid_at[i];
    }
    // Every span by end (and by stream, then end): where a root looks for
    // the span that ended last before it.
    let by_end = |key: &dyn Fn(u32) -> u32| {
        let mut v: Vec<u32> = (0..n as u32).collect();
        v.sort_by_key(|&i| (key(i), spans[i as usize].end, spans[i as usize].start, i));
        v
    };
    let anywhere = by_end(&|_| 0);
    // By stream, then end: each stream's spans are the range
    // `first_of_stream` gives it, sorted there.
    let by_stream = if sent_by.is_empty() {
        Vec::new()
    } else {
        let mut v: Vec<u32> = (0..n as u32).collect();
        for w in first_of_stream.windows(2) {
            v[w[0] as usize..w[1] as usize].sort_by_key(|&i| (spans[i as usize].end, spans[i as usize].start, i));
        }
        v
    };
    let last_before = |among: &[u32], r: u32| {
        let rf = &spans[r as usize];
        let cnt = among.partition_point(|&q| spans[q as usize].end <= rf.start);
        among[..cnt].iter().rev().copied().find(|&q| {
            let qf = &spans[q as usize];
            q != r && (qf.end < rf.start || qf.start < rf.start)
        })
    };
    let queued = wait_id(&mut waits, WAIT_QUEUE);
    // Every edge, to `push`: run twice, once to count each node's
    // predecessors and once to place them, so that no list of (target,
    // edge) pairs is ever held beside the graph (at a million spans it
    // was 72 MB, and its sort's scratch half as much again).
    let emit_all = |push: &mut dyn FnMut((u32, Edge, Option<i64>))| {
        for s in 0..n as u32 {
            let ks = &kids[kid_at[s as usize] as usize..kid_at[s as usize + 1] as usize];
            let (ss, se) = (2 * s, 2 * s + 1);
            if ks.is_empty() {
                push(edge(ss, se, Kind::Own(s)));
            }
            // The end waited on every kid that nothing in the span started
            // after (a kid followed by another reaches the end through it, and
            // its tail would hold the others' time as the span's own); the
            // latest-ending first, which the walk prefers.
            let last = ks.iter().copied().max_by_key(|&k| (spans[k as usize].start, k));
            for &k in ks.iter().rev() {
                let terminal = Some(k) == last || last.is_some_and(|l| spans[l as usize].start < spans[k as usize].end);
                if !terminal {
                    continue;
                }
                if spans[k as usize].end <= spans[s as usize].end {
                    push(edge(2 * k + 1, se, Kind::Own(s)));
                } else {
                    // A kid that outlived the span (a reply sent before its
                    // worker's span closed): the end waited for what the kid
                    // had done by then.
                    let (from, kind) = reached(&spans, &kids, &kid_at, k, spans[s as usize].end);
                    push(edge(from, se, kind));
                }
            }
            for &k in ks {
                let kf = &spans[k as usize];
                let cnt = ks.partition_point(|&c| spans[c as usize].end <= kf.start);
                let prior = ks[..cnt].iter().rev().copied().find(|&c| {
                    let cf = &spans[c as usize];
                    c != k && (cf.start, c) < (kf.start, k)
                });
                let kind = inner_wait.get(&k).map_or(Kind::Own(s), |&w| Kind::Wait(w));
                push(match prior {
                    Some(c) => edge(2 * c + 1, 2 * k, kind),
                    None => edge(ss, 2 * k, kind),
                });
            }
        }
        // Roots: their message, else the span that ended last before them, else the origin.
        for r in (0..n as u32).filter(|&r| spans[r as usize].up == NONE) {
            let rf = &spans[r as usize];
            // A message that arrives before it was sent (clocks off within their bound) is no edge.
            if let Some(&(s, w, wq, queue)) = sent_by.get(&r).filter(|(s, ..)| spans[*s as usize].end <= rf.start) {
                // A receiver that queued waited, after the message came, for its
                // own process to be free: for the span of its process that ended
                // last, when that ended in the queue. Else the queue is nothing
                // the spans show, and waits after the message, as long as measured.
                let arrived = rf.start.saturating_sub(queue);
                let behind = (queue > 0)
                    .then(|| {
                        let st = stream_of(&first_of_stream, r) as usize;
                        last_before(&by_stream[first_of_stream[st] as usize..first_of_stream[st + 1] as usize], r)
                    })
                    .flatten()
                    .filter(|&q| spans[q as usize].end >= arrived);
                let (from, to) = (2 * s + 1, 2 * r);
                if let Some(q) = behind {
                    let transit = time(to).saturating_sub(time(from)).max(0);
                    push((to, Edge::new(from, Kind::Wait(w)), Some(transit.saturating_sub(queue).max(0))));
                    push(edge(2 * q + 1, 2 * r, Kind::Wait(queued)));
                } else if queue > 0 {
                    push(edge(from, to, Kind::Wait(wq)));
                } else {
                    push(edge(from, to, Kind::Wait(w)));
                }
                continue;
            }
            match last_before(&anywhere, r) {
                Some(q) => push(edge(2 * q + 1, 2 * r, Kind::Wait(1))),
                None => push(edge(origin, 2 * r, Kind::Wait(0))),
            }
        }
        push(end_edge(&spans, &kids, &kid_at, origin, t1));
    };
    // Counted into the slot after each node's; made into where each node's
    // list starts; used as the cursor while placing, which leaves each
    // slot at where the next node's starts; moved up one slot.
    let mut pred_at = vec![0u32; nodes + 1];
    emit_all(&mut |(to, _, _)| pred_at[to as usize + 1] += 1);
    for i in 0..nodes {
        pred_at[i + 1] += pred_at[i];
    }
    // Placed in the order pushed, as a stable sort by target would.
    let mut preds = vec![Edge::new(0, Kind::Own(0)); pred_at[nodes] as usize];
    let mut explicit = HashMap::new();
    emit_all(&mut |(to, mut e, weight)| {
        let at = &mut pred_at[to as usize];
        // An edge that runs backwards weighs nothing: kept apart, so that
        // every edge weighed by its ends runs forward ([`Graph::schedule`]
        // reads none of their starts).
        let weight = weight.or((time(to) < time(e.from)).then_some(0));
        if let Some(w) = weight {
            e.set_explicit();
            explicit.insert(*at, w);
        }
        preds[*at as usize] = e;
        *at += 1;
    });
    pred_at.copy_within(0..nodes, 1);
    pred_at[0] = 0;
    let labels = steps.iter().map(|(p, n)| Label::new(Some(p), n)).collect();
    let steps = steps.into_iter().map(|(p, n)| (Arc::from(p), Arc::from(n))).collect();
    let waits = waits.iter().map(|w| Label::new(None, w)).collect();
    Graph {
        spans,
        steps,
        labels,
        waits,
        origin_time,
        end_time: t1,
        pred_at,
        preds,
        explicit,
        origin,
        end,
        first_of_stream,
        order: std::sync::OnceLock::new(),
    }
}

/// The last thing inside kid `k` (and its kids) at or before `at`: the
/// end of its latest kid that had ended, or the start of the one running
/// then, descending; with whose own time the rest until `at` was.
fn reached(spans: &[Flat], kids: &[u32], kid_at: &[u32], k: u32, at: i64) -> (u32, Kind) {
    let mut cur = k;
    for _ in 0..256 {
        let ks = &kids[kid_at[cur as usize] as usize..kid_at[cur as usize + 1] as usize];
        let ended = ks.iter().copied().filter(|&c| spans[c as usize].end <= at).max_by_key(|&c| (spans[c as usize].end, c));
        let running =
            ks.iter().copied().filter(|&c| spans[c as usize].start <= at && spans[c as usize].end > at).max_by_key(|&c| (spans[c as usize].start, c));
        match (ended, running) {
            (Some(e), Some(r)) if spans[r as usize].start >= spans[e as usize].end => cur = r,
            (None, Some(r)) => cur = r,
            (Some(e), _) => return (2 * e + 1, Kind::Own(cur)),
            (None, None) => break,
        }
    }
    (2 * cur, Kind::Own(cur))
}

/// What the status change waited on: the server span it happened in (the
/// latest-starting one around it: the deepest), from its last kid that had
/// ended; else the server span that ended last before it.
fn end_edge(spans: &[Flat], kids: &[u32], kid_at: &[u32], origin: u32, t1: i64) -> (u32, Edge, Option<i64>) {
    let server = Flat::server;
    let any_server = spans.iter().any(server);
    let eligible = |f: &Flat| !any_server || server(f);
    let around = (0..spans.len() as u32)
        .filter(|&i| eligible(&spans[i as usize]) && spans[i as usize].start <= t1 && spans[i as usize].end > t1)
        .max_by_key(|&i| (spans[i as usize].start, i));
    // Weighs the time from `from` to the end, as every edge but the queue's.
    let e = |from: u32, kind| Edge::new(from, kind);
    if let Some(x) = around {
        let ks = &kids[kid_at[x as usize] as usize..kid_at[x as usize + 1] as usize];
        let cnt = ks.partition_point(|&c| spans[c as usize].end <= t1);
        return match ks[..cnt].last() {
            Some(&c) => (origin + 1, e(2 * c + 1, Kind::Own(x)), None),
            None => (origin + 1, e(2 * x, Kind::Own(x)), None),
        };
    }
    let last =
        (0..spans.len() as u32).filter(|&i| eligible(&spans[i as usize]) && spans[i as usize].end <= t1).max_by_key(|&i| (spans[i as usize].end, i));
    match last {
        Some(y) => (origin + 1, e(2 * y + 1, Kind::Wait(2)), None),
        None => (origin + 1, e(origin, Kind::Wait(1)), None),
    }
}
