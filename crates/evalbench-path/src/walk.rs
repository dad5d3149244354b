//! The walks over the graph: an order of its nodes, every node's
//! earliest time under some shortening (the schedule), and the path back
//! from the end along the edges that gave each node its time.

use super::graph::{self, Kind, Node};
use super::{CriticalPath, Graph, PathError, PathStep, Segment, Shorten};
use crate::Clocks;

impl Graph {
    /// The nodes in an order where every edge runs forward, found once: the
    /// weights change between predictions, the edges do not
    /// ([`crate::order::depth_first`]). None when the spans' nesting has a
    /// cycle (a hostile file).
    fn order(&self) -> Option<&[Node]> {
        self.order
            .get_or_init(|| {
                let mut order = Vec::with_capacity(self.nodes());
                crate::order::depth_first(self, &mut |v| order.push(v)).then_some(order)
            })
            .as_deref()
    }

    /// Every node's earliest time with each span's own time scaled by
    /// `factor(step)`: the longest path from the origin. None when the
    /// spans' nesting has a cycle (a hostile file).
    /// (Tests' shorthand; callers shorten with [`Graph::schedule_by`].)
    #[cfg(test)]
    pub(crate) fn schedule(&self, factor: &dyn Fn(u32) -> f64) -> Option<Vec<i64>> {
        self.schedule_by(&Shorten::steps(self, factor))
    }

    /// [`Graph::schedule`] with the steps, statements and waits `sh` shortens.
    pub fn schedule_by(&self, sh: &Shorten) -> Option<Vec<i64>> {
        // Each node's time is found as what it saved against its measured
        // time: an unscaled edge weighed by its ends (runs forward) reaches
        // `to` at time(to) - saved(from), without reading `from`'s span.
        let mut saved = vec![0i64; self.nodes()];
        let mut preds = Vec::new();
        for &v in self.order()? {
            if v == self.origin {
                continue;
            }
            let to = self.time(v);
            let reach = |&(e, w): &(graph::Edge, i64)| {
                let t_from = || self.time(e.from).saturating_sub(saved[e.from.index()]);
                match self.weigh(&e, v, w, sh) {
                    Some(w) => t_from().saturating_add(w),
                    None if e.explicit() => t_from().saturating_add(w),
                    None => to.saturating_sub(saved[e.from.index()]),
                }
            };
            self.weighed_preds(v, &mut preds);
            let t = preds.iter().map(reach).max().unwrap_or(to);
            saved[v.index()] = to.saturating_sub(t);
        }
        for (v, s) in saved.iter_mut().enumerate() {
            *s = self.time(Node::at(v)).saturating_sub(*s);
        }
        Some(saved)
    }

    /// The path to the end under `factor`, from `t0` on.
    /// (Tests' shorthand; callers shorten with [`Graph::path_by`].)
    #[cfg(test)]
    pub(crate) fn path(
        &self,
        t0: i64,
        factor: &dyn Fn(u32) -> f64,
        align: &dyn Clocks,
    ) -> Result<CriticalPath, PathError> {
        self.path_by(t0, &Shorten::steps(self, factor), align)
    }

    /// The path to the end with what `sh` shortens, from `t0` on: its
    /// server stretches split where statements were in flight, as the
    /// measured path's are, so that its steps read like the table's.
    pub fn path_by(&self, t0: i64, sh: &Shorten, align: &dyn Clocks) -> Result<CriticalPath, PathError> {
        let own = self.own_us();
        let mut segs = Vec::new();
        let to_us = self.walk_each(t0, sh, &mut |s| segs.push(s))?;
        segs.reverse();
        let steps = self.steps_of(&segs, to_us.saturating_sub(t0), &self.db, &own);
        Ok(self.assemble(t0, to_us, segs, steps, align, None))
    }

    /// The path's segments to `each`, from the end back to `t0`; returns
    /// when the path ends.
    pub(super) fn walk_each(&self, t0: i64, sh: &Shorten, each: &mut dyn FnMut(Segment)) -> Result<i64, PathError> {
        let t = self.schedule_by(sh).ok_or(PathError::Cycle)?;
        evalbench_host::phase::phase("path: scheduled");
        Ok(self.walk_times(t0, sh, &|v| t[v.index()], true, each))
    }

    /// [`Graph::walk_each`] under the measured weights. Where they give
    /// every node its measured time ([`Graph::measured_is_time`]: every
    /// graph of spans that nest as spans do), the walk reads the times from
    /// the spans, without the schedule (16 bytes a span) or its order (8).
    pub(super) fn walk_measured_each(&self, t0: i64, each: &mut dyn FnMut(Segment)) -> Result<i64, PathError> {
        if self.measured_is_time() {
            evalbench_host::phase::phase("path: measured times");
            return Ok(self.walk_times(t0, &Shorten::none(self), &|v| self.time(v), false, each));
        }
        let t = self.schedule_by(&Shorten::none(self)).ok_or(PathError::Cycle)?;
        Ok(self.walk_times(t0, &Shorten::none(self), &|v| t[v.index()], false, each))
    }

    /// Back from the end along the predecessor that gave each node its
    /// time `t` (the first of the latest, in the order the edges prefer).
    /// With `split`, a server stretch is given in the pieces the
    /// statements in flight make of it (a measured path is split after
    /// the walk instead, by `database::Refiner`, which counts them too).
    fn walk_times(
        &self,
        t0: i64,
        sh: &Shorten,
        t: &dyn Fn(Node) -> i64,
        split: bool,
        each: &mut dyn FnMut(Segment),
    ) -> i64 {
        let mut v = self.end;
        let mut preds = Vec::new();
        let mut pieces = Vec::new();
        for _ in 0..self.nodes() {
            if v == self.origin {
                break;
            }
            self.weighed_preds(v, &mut preds);
            let Some((e, _)) = preds
                .iter()
                .map(|(e, w)| (e, t(e.from).saturating_add(self.weigh(e, v, *w, sh).unwrap_or(*w))))
                .fold(None::<(&graph::Edge, i64)>, |best, (e, at)| match best {
                    Some(b) if b.1 >= at => Some(b),
                    _ => Some((e, at)),
                })
            else {
                break;
            };
            let (from, to) = (t(e.from).max(t0), t(v).max(t0));
            if split {
                self.shortened_pieces(e, v, t(e.from), sh, &mut pieces);
            }
            if pieces.is_empty() || !split {
                if to > from {
                    each(self.segment(e.kind(), from, to));
                }
            } else {
                // Backwards, as the walk goes.
                for (a, b, label) in pieces.iter().rev() {
                    let (a, b) = ((*a).clamp(from, to), (*b).clamp(from, to));
                    if b > a {
                        match label {
                            Some(l) => each(Segment::new(a, b, l.clone(), None)),
                            None => each(self.segment(e.kind(), a, b)),
                        }
                    }
                }
            }
            v = e.from;
        }
        t(self.end)
    }

    /// Whether the longest times under the measured weights are the nodes'
    /// measured times: no cycle, every edge runs forward in time and is no
    /// longer than the time between its ends, and every node with
    /// predecessors has one exactly that long (then, in a topological
    /// order, each node's longest time is its own). `graph::edges` makes
    /// every edge so (a queue's edge is the one made shorter, beside an
    /// exact one); a hostile file may not, and is scheduled. Found by the
    /// walk that lays out the [`Plan`](super::plan::Plan), kept for the
    /// predictions after it.
    pub(super) fn measured_is_time(&self) -> bool {
        self.plan().is_some_and(|p| p.measured_is_time)
    }

    /// The graph laid out for predictions, once; None on a cycle.
    fn plan(&self) -> Option<&super::plan::Plan> {
        self.plan.get_or_init(|| super::plan::Plan::new(self, self.predicts)).as_ref()
    }

    /// The end's time with what `sh` shortens: [`Graph::schedule_by`]'s
    /// time of the end, from the laid-out edges where they fit. None on a
    /// cycle. `scratch` is kept between calls (four bytes a node).
    pub fn end_by(&self, sh: &Shorten, scratch: &mut Vec<u32>) -> Option<i64> {
        let plan = self.plan()?;
        match plan.end_by(self, sh, scratch) {
            Some(t) => Some(t),
            None => self.schedule_by(sh).map(|t| t[self.end.index()]),
        }
    }

    pub(super) fn assemble(
        &self,
        t0: i64,
        to_us: i64,
        segments: Vec<Segment>,
        steps: Vec<PathStep>,
        align: &dyn Clocks,
        note: Option<String>,
    ) -> CriticalPath {
        let total_us = segments.iter().fold(0i64, |a, s| a.saturating_add(s.to_us.saturating_sub(s.from_us)));
        let bound_us = align.bound_us();
        CriticalPath { from_us: t0, to_us, total_us, bound_us, steps, segments, note }
    }

    pub(super) fn segment(&self, kind: Kind, from_us: i64, to_us: i64) -> Segment {
        match kind {
            Kind::Own(s) => {
                let f = &self.spans[s];
                Segment::new(from_us, to_us, self.labels[f.step() as usize].clone(), Some(self.at(s)))
            }
            Kind::Wait(w) => Segment::new(from_us, to_us, self.waits[w as usize].clone(), None),
        }
    }
}
