//! Database round trips on the path: where a clean pass captured the
//! server's PostgreSQL traffic (pg.pcap), the stretches of a server span's
//! own time during which a statement was in flight become that statement's
//! (process `postgres`), so the path says how much of the server's time was
//! the database's. pg.pcap's clock is the server host's, like the spans'.

use std::collections::HashMap;
use std::sync::Arc;

use evalbench_bundle::layout;

use super::{Label, Segment};
use crate::Pass;

/// The process name database stretches get.
pub const POSTGRES: &str = "postgres";
/// A statement's name on the path: its normalized text, cut to this many characters.
const NAME_CHARS: usize = 72;

/// A statement's round trip: start, end (pg.pcap's clock), and its label:
/// process [`POSTGRES`], the normalized statement as the name.
pub(super) type Trip = (i64, i64, Arc<Label>);

/// Called with each piece: `[from, to)` and its statement, if any.
pub(super) type Piece<'a> = dyn FnMut(i64, i64, Option<&Arc<Label>>) + 'a;

/// The round trips by start; None without pg.pcap.
fn executions(pass: Pass<'_>) -> Option<Result<Vec<Trip>, String>> {
    let file = pass.dir.join(layout::PG_PCAP);
    if !file.is_file() {
        return None;
    }
    let port = pass.run.and_then(|r| r.runner.as_ref()).and_then(|r| r.capture_ports.as_ref()).map(|p| p.pg);
    let mut names: HashMap<Arc<str>, Arc<Label>> = HashMap::new();
    let mut out = Vec::new();
    let r = evalbench_decode::pg::decode_file(&file, port, &mut |e| {
        let name = names
            .entry(e.sql.clone())
            .or_insert_with(|| {
                let n = evalbench_decode::normalize::normalize_sql(&e.sql);
                let name = match n.char_indices().nth(NAME_CHARS) {
                    Some((at, _)) => format!("{}…", &n[..at]),
                    None => n,
                };
                Label::new(Some(POSTGRES), &name)
            })
            .clone();
        out.push((e.start_us, e.start_us + e.latency_us.max(0), name));
    });
    Some(
        r.map(|_| {
            out.sort_by_key(|x| (x.0, x.1));
            out
        })
        .map_err(|e| e.to_string()),
    )
}

/// What the database took of the path.
#[derive(Debug, Default)]
pub struct Database {
    /// Each statement's time in the pass (its own time).
    pub statements: HashMap<Arc<str>, i64>,
    /// Per server span name, the time of its stretches given to statements.
    pub carved: HashMap<Arc<str>, i64>,
}

/// The round trips by start, and the latest end up to each one: those
/// before the first whose latest end passes t have all ended by t. Kept
/// in the graph after the walk, so that a prediction can shorten a
/// statement, or a server span less the statements inside it.
#[derive(Default)]
pub(super) struct Trips {
    ex: Vec<Trip>,
    reach: Vec<i64>,
}

impl Trips {
    fn new(ex: Vec<Trip>) -> Trips {
        let mut reach = Vec::with_capacity(ex.len());
        let mut m = i64::MIN;
        for x in &ex {
            m = m.max(x.1);
            reach.push(m);
        }
        Trips { ex, reach }
    }

    pub fn is_empty(&self) -> bool {
        self.ex.is_empty()
    }

    /// `[from, to)` of a server span's own time in pieces, in order: the
    /// statement in flight (the one that started first), or None for the
    /// server's own time until the next one starts.
    pub fn pieces(&self, from: i64, to: i64, out: &mut Piece<'_>) {
        let ex = &self.ex;
        let mut t = from;
        while t < to {
            let started = ex.partition_point(|x| x.0 <= t);
            let live = self.reach.partition_point(|&e| e <= t);
            match ex[live.min(started)..started].iter().find(|x| x.1 > t) {
                Some((_, b, label)) => {
                    let end = (*b).min(to);
                    out(t, end, Some(label));
                    t = end;
                }
                None => {
                    let next = ex.get(started).map_or(to, |x| x.0.min(to));
                    out(t, next, None);
                    t = next;
                }
            }
        }
    }

    /// The statements' names, as the path prints them, each once.
    pub fn names(&self) -> Vec<Arc<str>> {
        let mut v: Vec<Arc<str>> = self.ex.iter().map(|x| x.2.name.clone()).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// Splits the server's own stretches where statements were in flight,
/// one segment at a time, as the walk finds them; with a note when
/// pg.pcap could not be read.
pub(super) struct Refiner {
    pub trips: Trips,
    pub db: Database,
}

impl Refiner {
    /// With a note when pg.pcap could not be read (then nothing is split).
    pub fn new(pass: Pass<'_>) -> (Refiner, Option<String>) {
        let (ex, note) = match executions(pass) {
            None => (Vec::new(), None),
            Some(Err(e)) => (Vec::new(), Some(format!("pg.pcap: {e}; database time stays in the server's spans"))),
            Some(Ok(ex)) => (ex, None),
        };
        (Refiner::of(ex), note)
    }

    /// Of round trips (start, end, label), sorted by start.
    pub fn of(ex: Vec<Trip>) -> Refiner {
        let mut db = Database::default();
        for (a, b, n) in &ex {
            *db.statements.entry(n.name.clone()).or_default() += b - a;
        }
        Refiner { trips: Trips::new(ex), db }
    }

    /// `s`, or the pieces of a server stretch: the statements in flight and the server's own time between them.
    pub fn split(&mut self, s: Segment, out: &mut dyn FnMut(Segment)) {
        if self.trips.is_empty() || s.process() != Some(evalbench_bundle::layout::SERVER) {
            out(s);
            return;
        }
        let carved = &mut self.db.carved;
        self.trips.pieces(s.from_us, s.to_us, &mut |a, b, label| match label {
            Some(label) => {
                out(Segment::new(a, b, label.clone(), None));
                *carved.entry(s.label().name.clone()).or_default() += b - a;
            }
            None => out(s.over(a, b)),
        });
    }
}
