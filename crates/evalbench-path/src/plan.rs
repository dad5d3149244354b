//! The graph's edges laid out once, node after node in an order where
//! every edge runs forward, each with its measured weight and what would
//! shorten it. A prediction that only needs the end's time
//! (`whatif::buys`: two shares for each of the top steps, ten schedules of
//! the whole pass) then reads one array front to back, where
//! [`Graph::schedule_by`] asks the nesting for every node's predecessors
//! and jumps to their spans: 75 ms a schedule at 1.1M spans, most of it
//! cache misses. Shortening a step moves nearly every node after it (the
//! roots wait on the span that ended last), so no schedule can be spared:
//! each is made cheap instead.
//!
//! Built by the same depth-first walk that proves the graph has no cycle
//! ([`Graph::measured_is_time`]), so the order is found once per run.

use super::graph::{Edge, Graph, Kind, Node};
use super::shorten::{scale, Shorten};

/// An edge: where it comes from (a position in the order), its measured
/// weight in µs, and its class: what shortens it.
type Laid = [u32; 3];

/// The class's top bit: the last edge into its node.
const LAST: u32 = 1 << 31;
/// The class's kind, two bits below it; the rest is an index.
const KIND: u32 = 3 << 29;
const OWN: u32 = 0;
const WAIT: u32 = 1 << 29;
/// A server stretch the statements in flight split: weighed by the graph.
const SPLIT: u32 = 2 << 29;
/// A node without predecessors: its measured time, kept apart.
const ALONE: u32 = 3 << 29;
const INDEX: u32 = (1 << 29) - 1;

/// The graph laid out for predictions; `edges` is None where something
/// did not fit its packing (a weight of more than 71 minutes, more than
/// 2^29 steps): then predictions schedule the graph itself.
pub(crate) struct Plan {
    edges: Option<Vec<Laid>>,
    alone: Vec<i64>,
    split: Vec<(Edge, Node)>,
    /// The end's position in the order.
    end: u32,
    /// Whether the measured weights give every node its measured time
    /// ([`Graph::measured_is_time`]).
    pub(crate) measured_is_time: bool,
}

/// Lays an edge out as it is made.
struct Layer {
    edges: Vec<Laid>,
    fits: bool,
}

impl Layer {
    fn push(&mut self, from: u32, w: i64, class: u32, index: usize) {
        if !self.fits {
            return;
        }
        match (u32::try_from(w), u32::try_from(index)) {
            (Ok(w), Ok(i)) if i <= INDEX => self.edges.push([from, w, class | i]),
            _ => {
                self.fits = false;
                self.edges = Vec::new();
            }
        }
    }
}

impl Plan {
    /// The plan of `g`, by a depth-first walk; None on a cycle. Without
    /// `lay_out` (a caller that predicts nothing: compare's steps) only
    /// the check is made, and predictions would schedule the graph.
    pub(crate) fn new(g: &Graph, lay_out: bool) -> Option<Plan> {
        let n = g.nodes();
        let mut position = vec![u32::MAX; if lay_out { n } else { 0 }];
        let mut placed = 0u32;
        let fits = lay_out && n < u32::MAX as usize;
        let mut layer = Layer { edges: Vec::with_capacity(if fits { n + n / 8 } else { 0 }), fits };
        let (mut alone, mut split) = (Vec::new(), Vec::new());
        let mut tight_everywhere = true;
        let mut preds = Vec::new();
        let acyclic = crate::order::depth_first(g, &mut |v| {
            if let Some(p) = position.get_mut(v.index()) {
                *p = placed;
                placed = placed.wrapping_add(1);
            }
            g.weighed_preds(v, &mut preds);
            let to = g.time(v);
            if preds.is_empty() || v == g.origin {
                // The schedule keeps such a node's measured time.
                layer.push(0, 0, ALONE, alone.len());
                alone.push(to);
            } else {
                let mut tight = false;
                for &(e, w) in &preds {
                    // As `measured_is_time` asks: every edge forward and no
                    // longer than its ends' gap, one of them exactly as long.
                    match to.checked_sub(g.time(e.from)).filter(|&gap| gap >= 0) {
                        Some(gap) if w <= gap => tight |= w == gap,
                        _ => tight_everywhere = false,
                    }
                    let from = position.get(e.from.index()).copied().unwrap_or(u32::MAX);
                    match e.kind() {
                        _ if g.splits(&e) => {
                            layer.push(from, w, SPLIT, split.len());
                            split.push((e, v));
                        }
                        Kind::Own(s) => layer.push(from, w, OWN, g.spans[s].step() as usize),
                        Kind::Wait(x) => layer.push(from, w, WAIT, x as usize),
                    }
                }
                tight_everywhere &= tight;
            }
            if let Some(last) = layer.edges.last_mut() {
                last[2] |= LAST;
            }
        });
        if !acyclic {
            return None;
        }
        let end = position.get(g.end.index()).copied().unwrap_or(u32::MAX);
        let edges = layer.fits.then_some(layer.edges);
        Some(Plan { edges, alone, split, end, measured_is_time: tight_everywhere })
    }

    /// The end's time with what `sh` shortens, as [`Graph::schedule_by`]
    /// finds it; None where the plan could not lay the graph out.
    /// `t` is scratch (a time per node), kept between calls.
    pub(crate) fn end_by(&self, g: &Graph, sh: &Shorten, t: &mut Vec<u32>) -> Option<i64> {
        let edges = self.edges.as_ref()?;
        // Every node's time is at least the earliest of the nodes without
        // predecessors (weights are never negative), so the times are kept
        // after it in 32 bits (71 minutes of µs: half the scratch of i64);
        // a pass that does not fit is scheduled by the graph instead.
        let base = *self.alone.iter().min()?;
        t.clear();
        let mut best = i64::MIN;
        for &[from, w, class] in edges {
            let i = (class & INDEX) as usize;
            let w = i64::from(w);
            let at = |t: &[u32]| base + i64::from(t[from as usize]);
            let reach = match class & KIND {
                OWN => at(t).saturating_add(scale(w, sh.step_factor_of(i))),
                WAIT => at(t).saturating_add(scale(w, sh.wait_factor_of(i))),
                SPLIT => {
                    let (e, to) = &self.split[i];
                    at(t).saturating_add(g.weigh(e, *to, w, sh).unwrap_or(w))
                }
                _ => self.alone[i],
            };
            best = best.max(reach);
            if class & LAST != 0 {
                t.push(u32::try_from(best.checked_sub(base)?).ok()?);
                best = i64::MIN;
            }
        }
        t.get(self.end as usize).map(|&x| base + i64::from(x))
    }
}
