//! What a prediction shortens, by the step as the path table names it: a
//! span's own time less the PostgreSQL round trips inside it (those are
//! the statements' steps), a statement's round trips, or a wait. So the
//! time shortened is the same quantity the table gives on the path.

use std::collections::HashMap;
use std::sync::Arc;

use super::graph::{Edge, Graph, Kind, Node, SpanId};

/// A factor per step, per wait and per statement; 1 keeps the measured time.
#[derive(Debug, Clone)]
pub struct Shorten {
    step: Vec<f64>,
    wait: Vec<f64>,
    statement: HashMap<Arc<str>, f64>,
}

/// A weight scaled by `f`; exact when `f` is 1.
pub(super) fn scale(w: i64, f: f64) -> i64 {
    if f == 1.0 {
        w
    } else {
        (w as f64 * f).round() as i64
    }
}

impl Shorten {
    /// Nothing shortened.
    pub fn none(g: &Graph) -> Shorten {
        Shorten { step: vec![1.0; g.steps.len()], wait: vec![1.0; g.waits.len()], statement: HashMap::new() }
    }

    /// Each span step by `factor(step)`; statements and waits as measured.
    #[cfg(test)]
    pub(crate) fn steps(g: &Graph, factor: &dyn Fn(u32) -> f64) -> Shorten {
        let mut s = Shorten::none(g);
        for (i, f) in s.step.iter_mut().enumerate() {
            *f = factor(i as u32);
        }
        s
    }

    pub fn step(&mut self, step: u32, f: f64) {
        self.step[step as usize] *= f;
    }

    pub fn wait(&mut self, wait: u32, f: f64) {
        self.wait[wait as usize] *= f;
    }

    pub fn statement(&mut self, name: &Arc<str>, f: f64) {
        *self.statement.entry(name.clone()).or_insert(1.0) *= f;
    }

    /// Step `i`'s factor (1 for a step it does not know).
    pub(super) fn step_factor_of(&self, i: usize) -> f64 {
        self.step.get(i).copied().unwrap_or(1.0)
    }

    /// Wait `i`'s factor.
    pub(super) fn wait_factor_of(&self, i: usize) -> f64 {
        self.wait.get(i).copied().unwrap_or(1.0)
    }

    /// A piece of a server span's stretch: the statement's factor while
    /// one is in flight, else the span's own `f`.
    fn piece(&self, f: f64, label: Option<&Arc<super::Label>>) -> f64 {
        label.map_or(f, |l| self.statement.get(&l.name).copied().unwrap_or(1.0))
    }
}

impl Graph {
    /// Edge `e` into node `to`, of measured weight `w`, under `sh`; None
    /// when it keeps `w`. A server span's own stretch is split where
    /// statements were in flight, as the path's table splits it, and each
    /// piece is scaled by its own factor.
    pub(super) fn weigh(&self, e: &Edge, to: Node, w: i64, sh: &Shorten) -> Option<i64> {
        let f = match e.kind() {
            Kind::Wait(x) => sh.wait_factor_of(x as usize),
            Kind::Own(s) => self.step_factor(s, sh),
        };
        if f == 1.0 && sh.statement.is_empty() || !self.splits(e) {
            return (f != 1.0).then(|| scale(w, f));
        }
        let (mut total, mut changed) = (0.0f64, false);
        self.trips.pieces(self.time(e.from), self.time(to), &mut |a, b, label| {
            let g = sh.piece(f, label);
            changed |= g != 1.0 && b > a;
            total += (b - a) as f64 * g;
        });
        changed.then(|| total.round() as i64)
    }

    /// The factor of span `s`'s step.
    pub(super) fn step_factor(&self, s: SpanId, sh: &Shorten) -> f64 {
        sh.step_factor_of(self.spans[s].step() as usize)
    }

    /// Whether edge `e` is a server span's measured own stretch, which the
    /// statements in flight split (an explicit weight has no stretch).
    pub(super) fn splits(&self, e: &Edge) -> bool {
        matches!(e.kind(), Kind::Own(s) if self.spans[s].server()) && !e.explicit() && !self.trips.is_empty()
    }

    /// The pieces of a shortened server stretch, laid from `from` on in
    /// the predicted time, each with its label (None: the span's own).
    pub(super) fn shortened_pieces(
        &self,
        e: &Edge,
        to: Node,
        from: i64,
        sh: &Shorten,
        out: &mut Vec<(i64, i64, Option<Arc<super::Label>>)>,
    ) {
        out.clear();
        let Kind::Own(s) = e.kind() else { return };
        if !self.splits(e) {
            return;
        }
        let f = self.step_factor(s, sh);
        let mut t = from as f64;
        self.trips.pieces(self.time(e.from), self.time(to), &mut |a, b, label| {
            let end = t + (b - a) as f64 * sh.piece(f, label);
            out.push((t.round() as i64, end.round() as i64, label.cloned()));
            t = end;
        });
    }
}
