//! The graph's parts: a span flattened to what the path reads of it, and
//! an edge. A span is held once per span, so it is packed (24 bytes); the
//! edges are made when asked for (`nested`), 8 bytes each.

pub const NONE: u32 = u32::MAX;

/// A span of the pass, by its place among the graph's spans: the streams'
/// spans one after another ([`super::Graph::at`] gives the stream and the
/// place in it). `spans[s]` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct SpanId(u32);

impl SpanId {
    /// The span at `i` of the graph's spans.
    pub fn at(i: usize) -> SpanId {
        SpanId(i as u32)
    }

    /// Its place among the graph's spans.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The raw id, for the packed fields that keep one beside flag bits.
    pub(super) fn raw(self) -> u32 {
        self.0
    }

    /// A raw id, NONE for none.
    pub(super) fn of_raw(raw: u32) -> Option<SpanId> {
        (raw != NONE).then_some(SpanId(raw))
    }
}

impl std::ops::Index<SpanId> for [Flat] {
    type Output = Flat;
    fn index(&self, s: SpanId) -> &Flat {
        &self[s.index()]
    }
}

impl std::ops::IndexMut<SpanId> for [Flat] {
    fn index_mut(&mut self, s: SpanId) -> &mut Flat {
        &mut self[s.index()]
    }
}

impl std::ops::Index<SpanId> for Vec<Flat> {
    type Output = Flat;
    fn index(&self, s: SpanId) -> &Flat {
        &self[s.index()]
    }
}

impl std::ops::IndexMut<SpanId> for Vec<Flat> {
    fn index_mut(&mut self, s: SpanId) -> &mut Flat {
        &mut self[s.index()]
    }
}

/// A stream of the pass (one process's span file), by its place among the
/// pass's streams: its spans are the graph's from where it starts
/// ([`super::Graph::at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct StreamId(u32);

impl StreamId {
    pub(super) fn at(i: usize) -> StreamId {
        StreamId(i as u32)
    }

    /// Its place among the pass's streams.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A node of the graph: span i starts at node 2i and ends at 2i+1; after
/// every span's two come the origin and the end. The numbering is here
/// alone; everything else asks a node what it is. Past
/// [`super::graph::MAX_SPANS`] there are no nodes (checked, see below).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Node(u32);

impl Node {
    /// Where span `s` starts.
    pub fn start(s: SpanId) -> Node {
        Node(2 * s.0)
    }

    /// Where span `s` ends.
    pub fn end(s: SpanId) -> Node {
        Node(2 * s.0 + 1)
    }

    /// The origin of a graph of `spans` spans (the end is the node after it).
    pub fn origin(spans: usize) -> Node {
        Node((2 * spans) as u32)
    }

    /// The node after this one in the numbering: the end after the origin.
    pub fn next(self) -> Node {
        Node(self.0.saturating_add(1))
    }

    /// The span it is a start or an end of, whether it is its end; None
    /// for the origin and the end (`origin` is the graph's).
    pub fn of_span(self, origin: Node) -> Option<(SpanId, bool)> {
        (self < origin).then_some((SpanId(self.0 / 2), self.0 % 2 == 1))
    }

    /// Its place in a vector with a slot per node.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The node at `i` of a vector with a slot per node.
    pub fn at(i: usize) -> Node {
        Node(i as u32)
    }
}

/// What an edge's time was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// The span's own time (shortened when the span is).
    Own(SpanId),
    /// A wait, by its index in [`Graph::waits`] (never shortened).
    Wait(u32),
}

/// 8 bytes: a million-span pass has over three million edges. Its weight
/// is the time between its ends ([`super::Graph::weighed_preds`]), which the
/// graph has from the spans; the few edges made shorter than that (a
/// message's transit less the queue behind it) keep theirs beside the
/// graph, marked by [`EXPLICIT_BIT`].
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub from: Node,
    /// [`Kind`], the wait bit set for a wait, the explicit bit for a weight
    /// kept apart.
    kind: u32,
}

const WAIT_BIT: u32 = 1 << 31;
/// Span indices and wait ids stay below it: a pass of a billion spans
/// would need 64 GB for its graph first.
const EXPLICIT_BIT: u32 = 1 << 30;

impl Edge {
    pub(crate) fn new(from: Node, kind: Kind) -> Edge {
        let kind = match kind {
            Kind::Own(s) => s.0,
            Kind::Wait(w) => w | WAIT_BIT,
        };
        Edge { from, kind }
    }

    pub fn kind(&self) -> Kind {
        let k = self.kind & !EXPLICIT_BIT;
        if k & WAIT_BIT != 0 {
            Kind::Wait(k & !WAIT_BIT)
        } else {
            Kind::Own(SpanId(k))
        }
    }

    /// Its weight is kept apart, not the time between its ends.
    pub fn explicit(&self) -> bool {
        self.kind & EXPLICIT_BIT != 0
    }

    pub(crate) fn set_explicit(&mut self) {
        self.kind |= EXPLICIT_BIT;
    }
}

/// One span, flattened, on the server's clock. 24 bytes: the graph holds
/// one per span of the pass. Which stream it is of, and where in it, follow
/// from its index in the pass ([`super::Graph::at`]): a stream's spans are
/// flattened one after another.
#[derive(Debug, Clone)]
pub struct Flat {
    pub start: i64,
    pub end: i64,
    /// The step, with [`REMOTE_BIT`] set when `up` is a span it waits
    /// inside and [`SERVER_BIT`] when it is the server's.
    step_bits: u32,
    /// The span it nests in (same process) or waits inside (another), else
    /// NONE: a raw id, so that a span is 24 bytes ([`Flat::up`]).
    up: u32,
}

const REMOTE_BIT: u32 = 1 << 31;
/// Steps stay below it: one per (process, span name).
const SERVER_BIT: u32 = 1 << 30;

impl Flat {
    /// Its (process, span name) in [`super::Graph::steps`].
    pub fn step(&self) -> u32 {
        self.step_bits & !(REMOTE_BIT | SERVER_BIT)
    }

    /// `up` is a span it waits inside, not its parent.
    pub fn remote(&self) -> bool {
        self.step_bits & REMOTE_BIT != 0
    }

    /// A span of the server's (where the status changes).
    pub fn server(&self) -> bool {
        self.step_bits & SERVER_BIT != 0
    }

    /// A span on the server's clock.
    pub(super) fn new(start: i64, end: i64, step: u32, up: Option<SpanId>, server: bool) -> Flat {
        Flat {
            start,
            end,
            step_bits: step & !(REMOTE_BIT | SERVER_BIT) | if server { SERVER_BIT } else { 0 },
            up: up.map_or(NONE, |u| u.0),
        }
    }

    /// The span it nests in (same process) or waits inside (another).
    pub fn up(&self) -> Option<SpanId> {
        SpanId::of_raw(self.up)
    }

    /// Makes `up` the span it waits inside.
    pub(super) fn set_up(&mut self, up: SpanId) {
        self.up = up.0;
    }

    /// Marks `up` as a span it waits inside.
    pub(super) fn set_remote(&mut self) {
        self.step_bits |= REMOTE_BIT;
    }
}

// The packing's limits, checked where they are set: a span's index (in
// `Kind::Own`, `Flat::up`) below the flag bits, its nodes and the origin's
// and the end's below NONE, and steps below SERVER_BIT (one per distinct
// (process, name), so no more than spans).
const _: () = {
    let max = super::graph::MAX_SPANS as u64;
    assert!(max < EXPLICIT_BIT as u64 && max < SERVER_BIT as u64 && 2 * max + 2 < NONE as u64);
};
