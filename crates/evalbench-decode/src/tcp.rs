//! TCP reassembly per direction: in-order bytes from segments that arrive
//! reordered, retransmitted or overlapping; a capture that starts in the
//! middle of a connection starts at its first segment; a hole that never
//! fills is reported as a gap once too much is waiting behind it.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;

use crate::packet::Segment;

pub type Endpoint = (IpAddr, u16);

/// State per connection, found by the ids [`Reassembler`] gives (1, 2, 3,
/// ...): a window of slots, not a hash map, as each packet looks one up.
/// Connections close roughly in the order they opened, so the window drops
/// closed slots from its front and stays small.
pub struct ConnTable<T> {
    /// The id of `slots[0]`.
    base: u64,
    slots: VecDeque<Option<Box<T>>>,
}

impl<T> Default for ConnTable<T> {
    fn default() -> Self {
        ConnTable { base: 0, slots: VecDeque::new() }
    }
}

impl<T> ConnTable<T> {
    fn index(&self, conn: u64) -> Option<usize> {
        conn.checked_sub(self.base).and_then(|i| usize::try_from(i).ok())
    }
    /// `conn` must be newer than every id inserted before.
    pub fn insert(&mut self, conn: u64, value: T) {
        if self.slots.is_empty() {
            self.base = conn;
        }
        let Some(i) = self.index(conn) else { return };
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.slots[i] = Some(Box::new(value));
    }
    pub fn get_mut(&mut self, conn: u64) -> Option<&mut T> {
        let i = self.index(conn)?;
        self.slots.get_mut(i).and_then(|s| s.as_deref_mut())
    }
    pub fn remove(&mut self, conn: u64) -> Option<T> {
        let i = self.index(conn)?;
        let v = self.slots.get_mut(i).and_then(|s| s.take()).map(|b| *b);
        while self.slots.front().is_some_and(|s| s.is_none()) {
            self.slots.pop_front();
            self.base += 1;
        }
        v
    }
    /// What is still open, in id order.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.slots.drain(..).flatten().map(|b| *b)
    }
}

#[cfg(test)]
mod tests {
    use super::ConnTable;

    #[test]
    fn the_window_follows_what_is_open() {
        let mut t = ConnTable::default();
        for id in 1..=1000u64 {
            t.insert(id, id);
            // Connections 1 and 2 stay open; the rest close two behind.
            if id > 4 {
                assert_eq!(t.remove(id - 2), Some(id - 2));
            }
        }
        // The oldest open connection holds the window's front.
        assert_eq!(t.slots.len(), 1000);
        assert_eq!(t.remove(1), Some(1));
        assert_eq!(t.remove(1), None);
        assert_eq!(t.get_mut(2).copied(), Some(2));
        assert_eq!(t.remove(2), Some(2));
        assert_eq!(t.slots.len(), 2);
        assert_eq!(t.get_mut(999).copied(), Some(999));
        assert_eq!(t.get_mut(5000), None);
        assert_eq!(t.get_mut(0), None);
        assert_eq!(t.drain().collect::<Vec<_>>(), vec![999, 1000]);
    }
}

/// Bytes buffered behind a hole, per direction, before we give up on it.
pub const MAX_PENDING: usize = 1 << 20;

#[derive(Debug)]
pub enum Event<'a> {
    Open {
        conn: u64,
        client: Endpoint,
        server: Endpoint,
        ts_us: i64,
        saw_syn: bool,
    },
    Data {
        conn: u64,
        to_server: bool,
        ts_us: i64,
        bytes: &'a [u8],
    },
    /// Bytes that were never captured; the stream resumes after them.
    Gap {
        conn: u64,
        to_server: bool,
        lost: u64,
    },
    Close {
        conn: u64,
    },
}

fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[derive(Default)]
struct Dir {
    next: Option<u32>,
    pending: BTreeMap<u32, (i64, Vec<u8>)>,
    pending_bytes: usize,
    fin: bool,
    /// Bytes delivered so far.
    delivered: u64,
}

struct Conn {
    id: u64,
    client: Endpoint,
    up: Dir,
    down: Dir,
}

pub struct Reassembler {
    /// Which port is the server's, when known (a capture filter's port).
    pub server_port: Option<u16>,
    /// Looked up once a segment: foldhash, seeded afresh in each process,
    /// where SipHash was 4% of `decode pg --json`. A capture is a file
    /// written before the seed is drawn, so its addresses cannot be chosen
    /// to collide under it.
    conns: HashMap<(Endpoint, Endpoint), Conn, foldhash::fast::RandomState>,
    next_id: u64,
    pub gaps: u64,
    pub retransmitted_bytes: u64,
}

fn key(a: Endpoint, b: Endpoint) -> (Endpoint, Endpoint) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// The client of a new connection: the one not on the server's port when
/// it is known; else the SYN's sender (a SYN-ACK's receiver); else the higher port.
fn client_of(server_port: Option<u16>, s: &Segment<'_>) -> (IpAddr, u16) {
    match server_port {
        Some(p) if s.dst.1 == p => s.src,
        Some(p) if s.src.1 == p => s.dst,
        _ if s.syn && !s.ack => s.src,
        _ if s.syn => s.dst,
        _ => {
            if s.src.1 > s.dst.1 {
                s.src
            } else {
                s.dst
            }
        }
    }
}

/// A segment's payload at `seq`, where `next` was expected: what is new
/// delivered (and whatever it lets through of the held segments), what is
/// out of order held. Bytes retransmitted and bytes skipped over a gap.
fn deliver(
    dir: &mut Dir,
    id: u64,
    to_server: bool,
    s: &Segment<'_>,
    seq: u32,
    next: u32,
    out: &mut dyn FnMut(Event<'_>),
) -> (u64, u64) {
    let (mut retrans, mut gaps) = (0, 0);
    if seq == next || seq_lt(seq, next) {
        let skip = next.wrapping_sub(seq) as usize;
        if skip < s.payload.len() {
            retrans += skip as u64;
            let fresh = &s.payload[skip..];
            dir.next = Some(next.wrapping_add(fresh.len() as u32));
            dir.delivered += fresh.len() as u64;
            out(Event::Data { conn: id, to_server, ts_us: s.ts_us, bytes: fresh });
            drain(dir, id, to_server, out);
        } else {
            retrans += s.payload.len() as u64;
        }
    } else if !dir.pending.contains_key(&seq) {
        dir.pending_bytes += s.payload.len();
        dir.pending.insert(seq, (s.ts_us, s.payload.to_vec()));
        if dir.pending_bytes > MAX_PENDING {
            gaps += skip_gap(dir, id, to_server, out);
        }
    }
    (retrans, gaps)
}

impl Reassembler {
    pub fn new(server_port: Option<u16>) -> Self {
        Reassembler { server_port, conns: HashMap::default(), next_id: 1, gaps: 0, retransmitted_bytes: 0 }
    }

    pub fn segment(&mut self, s: &Segment<'_>, out: &mut dyn FnMut(Event<'_>)) {
        let k = key(s.src, s.dst);
        // A SYN on a 4-tuple that already carried data, or began to close,
        // starts a new connection (port reuse).
        // So does a client's SYN (no ACK) on a 4-tuple we had the other way round.
        let client_syn = s.syn && !s.ack;
        if s.syn
            && self.conns.get(&k).is_some_and(|c| {
                c.up.fin
                    || c.down.fin
                    || c.up.delivered > 0
                    || c.down.delivered > 0
                    || (client_syn && c.client != s.src)
            })
        {
            if let Some(c) = self.conns.remove(&k) {
                out(Event::Close { conn: c.id });
            }
        }
        // One lookup for the packets of a known connection, the most of them.
        let c = match self.conns.entry(k) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                // Pure ACKs, FINs and RSTs after a close open nothing.
                if s.rst || (!s.syn && s.payload.is_empty()) {
                    return;
                }
                let client = client_of(self.server_port, s);
                let server = if client == s.src { s.dst } else { s.src };
                let id = self.next_id;
                self.next_id += 1;
                out(Event::Open { conn: id, client, server, ts_us: s.ts_us, saw_syn: s.syn });
                v.insert(Conn { id, client, up: Dir::default(), down: Dir::default() })
            }
        };
        let to_server = s.src == c.client;
        let id = c.id;
        let dir = if to_server { &mut c.up } else { &mut c.down };
        let mut seq = s.seq;
        if s.syn {
            seq = seq.wrapping_add(1);
            if dir.next.is_none() {
                dir.next = Some(seq);
            }
        }
        let next = *dir.next.get_or_insert(seq);
        let (retrans, gaps) =
            if s.payload.is_empty() { (0, 0) } else { deliver(dir, id, to_server, s, seq, next, out) };
        if s.fin {
            dir.fin = true;
        }
        let done = s.rst || (c.up.fin && c.down.fin && c.up.pending.is_empty() && c.down.pending.is_empty());
        self.retransmitted_bytes += retrans;
        self.gaps += gaps;
        if done {
            let mut c = self.conns.remove(&k).expect("present");
            self.gaps += flush(&mut c, out);
            out(Event::Close { conn: c.id });
        }
    }

    /// End of capture: whatever waits behind a hole is delivered after a gap.
    pub fn finish(&mut self, out: &mut dyn FnMut(Event<'_>)) {
        let mut conns: Vec<Conn> = self.conns.drain().map(|(_, c)| c).collect();
        conns.sort_by_key(|c| c.id);
        for mut c in conns {
            self.gaps += flush(&mut c, out);
            out(Event::Close { conn: c.id });
        }
    }
}

/// Delivers pending segments that now continue the stream.
fn drain(dir: &mut Dir, id: u64, to_server: bool, out: &mut dyn FnMut(Event<'_>)) {
    loop {
        let Some(next) = dir.next else { return };
        let Some((&seq, _)) = dir.pending.iter().next() else { return };
        if seq_lt(next, seq) {
            return;
        }
        let (ts, data) = dir.pending.remove(&seq).expect("present");
        dir.pending_bytes -= data.len();
        let skip = next.wrapping_sub(seq) as usize;
        if skip < data.len() {
            dir.next = Some(next.wrapping_add((data.len() - skip) as u32));
            dir.delivered += (data.len() - skip) as u64;
            out(Event::Data { conn: id, to_server, ts_us: ts, bytes: &data[skip..] });
        }
    }
}

/// Gives up on the first hole: reports it and resumes at the next segment.
fn skip_gap(dir: &mut Dir, id: u64, to_server: bool, out: &mut dyn FnMut(Event<'_>)) -> u64 {
    let Some((&seq, _)) = dir.pending.iter().next() else { return 0 };
    let next = dir.next.unwrap_or(seq);
    let lost = seq.wrapping_sub(next) as u64;
    out(Event::Gap { conn: id, to_server, lost });
    dir.next = Some(seq);
    drain(dir, id, to_server, out);
    1
}

fn flush(c: &mut Conn, out: &mut dyn FnMut(Event<'_>)) -> u64 {
    let mut gaps = 0;
    for (to_server, dir) in [(true, &mut c.up), (false, &mut c.down)] {
        while !dir.pending.is_empty() {
            gaps += skip_gap(dir, c.id, to_server, out);
        }
    }
    gaps
}
