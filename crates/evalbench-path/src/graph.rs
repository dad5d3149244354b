//! The pass as a graph of waits: every span's start and end is a node, and
//! an edge says "this could not happen before that, plus so long". The
//! edges come from what the spans show (nesting, and the pipeline's known
//! hand-offs across threads and processes) and, where a root span's cause
//! is unknown, from the span that ended last before it (the "last arrival"
//! assumption). With the measured weights, the longest path to every node
//! is its measured time, so the graph reproduces the pass; with some
//! weights shortened it predicts one (`whatif`). docs/decisions.md,
//! "The critical path".

use std::sync::Arc;

use evalbench_bundle::Stream;

use super::prepare::{prepare, prepare_owned, Prepared};
use super::Label;
use crate::Clocks;

pub use super::nested::Nested;
pub use super::nodes::{Edge, Flat, Kind, Node, SpanId, StreamId, NONE};

/// A wait between spans: what the time was spent waiting for.
pub const WAIT_BEFORE: &str = "before the first span";
pub const WAIT_IDLE: &str = "idle (after the span that ended last)";
pub const WAIT_STATUS: &str = "until the status changed";
pub const WAIT_QUEUE: &str = "queue (behind its process's previous span)";

use evalbench_bundle::contract::HAND_OFFS;

/// A message from one process's span to the start of another's: the
/// receiver could not start before the sender ended, plus the transit.
/// Paired n-th to n-th per job (`contract::pair_by_job`), as the alignment
/// pairs them. The last label is the wait when the receiver queued and
/// nothing in its process explains the queue (see the roots in `edges`).
pub(super) const MESSAGES: [(&str, &str, &str, &str); 2] = [
    (HAND_OFFS[0].0, HAND_OFFS[0].1, "network (assign_job → job)", "network and queue (assign_job → job)"),
    (
        HAND_OFFS[1].0,
        HAND_OFFS[1].1,
        "network (report_eval_result → job_event)",
        "network and queue (report_eval_result → job_event)",
    ),
];

/// A span that waits for another thread's or process's root span inside
/// it: (outer, inner, what the outer waits on before the inner starts,
/// same host only).
pub(super) const WAITS_ON: [(&str, &str, &str, bool); 3] = [
    ("record", "flush", "mailbox (record → flush)", true),
    ("evaluate_flake", "open", "spawn (evaluate_flake → eval open)", true),
    ("query_known_derivations", "known_derivations", "request (query_known_derivations → known_derivations)", false),
];

/// Its fields are the path module's own: callers ask it for a path
/// ([`Graph::path_by`]), a node's time or predecessors.
pub struct Graph {
    pub(super) spans: Vec<Flat>,
    /// (process, span name) of each step; shared by the path's segments.
    pub(super) steps: Vec<(Arc<str>, Arc<str>)>,
    /// Each step's label, shared by its stretches of a path.
    pub(super) labels: Vec<Arc<Label>>,
    pub(super) waits: Vec<Arc<Label>>,
    /// The origin's and the end's measured times; a span's nodes take
    /// theirs from the span ([`Graph::time`]), not from a vector of their own.
    pub(super) origin_time: i64,
    pub(super) end_time: i64,
    /// Each node's predecessors, in the order the walk prefers them.
    pub(super) edges: Nested,
    pub(super) origin: Node,
    pub(super) end: Node,
    /// Where each stream's spans start among `spans`, and their end.
    pub(super) first_of_stream: Vec<u32>,
    /// A topological order of the nodes, once asked for.
    pub(super) order: std::sync::OnceLock<Option<Vec<Node>>>,
    /// The edges laid out in such an order, once asked for (None on a cycle).
    pub(super) plan: std::sync::OnceLock<Option<super::plan::Plan>>,
    /// Whether the plan lays the edges out (else it only checks them).
    pub(super) predicts: bool,
    /// The database's round trips and what they took of the path, once
    /// the measured path is found: a prediction splits the server's own
    /// time as the path's table does.
    pub(super) trips: super::database::Trips,
    pub(super) db: super::database::Database,
}

/// A node's time as measured: its span's start or end, else the
/// origin's or the end's.
fn node_time(spans: &[Flat], origin: Node, origin_time: i64, end_time: i64, v: Node) -> i64 {
    match v.of_span(origin).and_then(|(s, is_end)| Some((spans.get(s.index())?, is_end))) {
        Some((f, false)) => f.start,
        Some((f, true)) => f.end,
        None if v == origin => origin_time,
        None => end_time,
    }
}

/// The stream of the pass's `g`-th span, by where each stream starts.
pub(super) fn stream_of(first_of_stream: &[u32], g: SpanId) -> StreamId {
    StreamId::at(first_of_stream.partition_point(|&f| f as usize <= g.index()).saturating_sub(1))
}

impl Graph {
    /// Span `g`'s stream, and its index there (the pass's numbering).
    pub fn at(&self, g: SpanId) -> (StreamId, u32) {
        let st = stream_of(&self.first_of_stream, g);
        (st, (g.index() - self.first_of_stream[st.index()] as usize) as u32)
    }

    /// Node `v`'s time as measured.
    pub fn time(&self, v: Node) -> i64 {
        node_time(&self.spans, self.origin, self.origin_time, self.end_time, v)
    }

    /// How many nodes: two a span, the origin and the end.
    pub fn nodes(&self) -> usize {
        2 * self.spans.len() + 2
    }

    /// Node `to`'s predecessors, each with its measured weight, to `out`
    /// (cleared first): the time between its ends, or the one kept apart
    /// (every edge that runs backwards is; its [`Edge::explicit`] is set).
    pub fn weighed_preds(&self, to: Node, out: &mut Vec<(Edge, i64)>) {
        out.clear();
        self.edges.preds(&self.spans, self.origin, to, &mut |(mut e, given)| {
            // An edge that runs backwards weighs nothing: kept apart, so
            // that every edge weighed by its ends runs forward
            // ([`Graph::schedule`] reads none of their starts).
            let w = match given.or((self.time(to) < self.time(e.from)).then_some(0)) {
                Some(w) => {
                    e.set_explicit();
                    w
                }
                None => self.gap(e.from, to),
            };
            out.push((e, w));
        });
    }

    /// The time from node `from` to node `to`, as measured; never negative.
    fn gap(&self, from: Node, to: Node) -> i64 {
        self.time(to).saturating_sub(self.time(from)).max(0)
    }
}

/// The order reads a pass's graph by the spans' nesting, unweighed.
impl crate::order::Predecessors for Graph {
    fn nodes(&self) -> usize {
        Graph::nodes(self)
    }
    fn each_pred(&self, v: Node, f: &mut dyn FnMut(Node)) {
        self.edges.preds(&self.spans, self.origin, v, &mut |(e, _)| f(e.from));
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

/// The most spans a graph holds: a span's index must stay below the
/// bits [`Edge`] and [`Flat`] pack beside it (2^30), and its two nodes,
/// with the origin and the end after them, inside a u32 below [`NONE`].
/// Steps and waits are fewer than spans. Past it, an error: never a
/// wrapped index (a pass of 2^30 spans would need some 60 GB first).
pub const MAX_SPANS: usize = (1 << 30) - 1;

/// Whether a pass of `spans` spans can be a graph.
pub fn fits(spans: usize) -> Result<(), super::PathError> {
    if spans > MAX_SPANS {
        return Err(super::PathError::TooManySpans { spans, limit: MAX_SPANS });
    }
    Ok(())
}

/// Builds the graph of the spans in `streams` for the evaluation from `t0`
/// to `t1` (server clock).
pub fn build(streams: &[Stream], align: &dyn Clocks, t0: i64, t1: i64) -> Graph {
    edges(prepare(streams, align), t0, t1)
}

/// As [`build`], letting each stream go once it is flattened and its
/// hand-offs' fields taken out: the loaded streams and the flattened
/// spans are never all held side by side, and the edges, and their sorts'
/// scratch, are made without the loaded spans beside them.
pub fn build_owned(mut streams: Vec<Stream>, align: &dyn Clocks, t0: i64, t1: i64) -> Graph {
    // Only the hand-offs' fields are read (job, kind, queue_wait_us): the
    // rest of the text goes first, a third of the spans' memory.
    for st in &mut streams {
        st.keep_text(reads_fields);
    }
    let p = prepare_owned(streams, align);
    evalbench_host::phase::phase("path: spans flattened");
    edges(p, t0, t1)
}

/// The span names whose fields the graph reads: the hand-offs'.
pub fn reads_fields(name: &str) -> bool {
    MESSAGES.iter().any(|m| m.0 == name || m.1 == name) || WAITS_ON.iter().any(|w| w.0 == name || w.1 == name)
}

fn edges(prepared: Prepared, t0: i64, t1: i64) -> Graph {
    let Prepared { spans, steps, mut waits, inner_wait, sent_by, first_of_stream } = prepared;
    let n = spans.len();
    let origin = Node::origin(n);
    let first = spans.iter().map(|f| f.start).min().unwrap_or(t0);
    let queued = wait_id(&mut waits, WAIT_QUEUE);
    let nested = Nested::new(&spans, &first_of_stream, inner_wait, sent_by, queued, origin, t1);
    evalbench_host::phase::phase("path: nesting's edges");
    let labels = steps.iter().map(|(p, n)| Label::new(Some(p), n)).collect();
    let steps = steps.into_iter().map(|(p, n)| (Arc::from(p), Arc::from(n))).collect();
    let waits = waits.iter().map(|w| Label::new(None, w)).collect();
    Graph {
        spans,
        steps,
        labels,
        waits,
        origin_time: t0.min(first),
        end_time: t1,
        edges: nested,
        origin,
        end: origin.next(),
        first_of_stream,
        order: std::sync::OnceLock::new(),
        plan: std::sync::OnceLock::new(),
        predicts: true,
        trips: Default::default(),
        db: Default::default(),
    }
}
