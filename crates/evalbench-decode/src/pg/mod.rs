//! The PostgreSQL frontend/backend protocol (v3) from reassembled TCP:
//! every statement the server was sent, simple or extended, matched to its
//! completion, with latency from its first request byte.

use crate::error::DecodeError;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::framer::{Framer, Msg};
use crate::packet::{for_each_segment_in, PacketStats};
use crate::tcp::{ConnTable, Event, Reassembler};

mod names;
use names::{Names, Recent};

/// One statement execution.
#[derive(Debug, Clone, Serialize)]
pub struct Execution {
    pub conn: u64,
    pub start_us: i64,
    pub latency_us: i64,
    /// Shared with the other executions of the same prepared statement.
    pub sql: Arc<str>,
    /// Rows from the command tag, where the tag has a count.
    pub rows: Option<u64>,
    /// Shared with this connection's earlier executions of the same tag.
    pub tag: Option<Arc<str>>,
    /// "SQLSTATE: message" for an ErrorResponse.
    pub error: Option<String>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The statement text or start is not certain (capture began mid-way, or a gap).
    pub partial: bool,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct PgSummary {
    pub connections: u64,
    pub statements: u64,
    pub errors: u64,
    pub partial: u64,
    pub tls_connections: u64,
    pub not_postgres_connections: u64,
    pub gaps: u64,
    pub unanswered: u64,
    pub packets: PacketStats,
}

#[derive(Debug, PartialEq)]
enum Phase {
    /// Expecting the untyped startup packet (or SSLRequest).
    Startup,
    /// SSLRequest sent; the server answers with one byte.
    SslAsked,
    Typed,
    Tls,
    NotPg,
}

#[derive(Debug)]
enum Pending {
    Simple { sql: Arc<str>, start: i64, bytes_in: u64, bytes_out: u64, answered: bool },
    Extended { sql: Arc<str>, start: i64, bytes_in: u64, bytes_out: u64, partial: bool },
    Sync,
}

struct Conn {
    phase: Phase,
    up: Framer,
    down: Framer,
    startup_buf: Vec<u8>,
    /// Prepared statements' and portals' SQL: shared, as every Bind and
    /// Execute of the unnamed ones would copy it otherwise.
    statements: Names,
    portals: Names,
    pending: VecDeque<Pending>,
    batch_start: Option<i64>,
    batch_bytes: u64,
    /// Started mid-stream or crossed a gap: what we match may be off.
    unsure: bool,
    /// Command tags: most answers repeat one of a handful ("SELECT 1", "UPDATE 1").
    tags: Recent,
    /// Statement texts: drivers parse the unnamed statement again and again
    /// with one of a few texts.
    texts: Recent,
}

const FRONTEND: &[u8] = b"QPBESDCHXdcfpF";
const BACKEND: &[u8] = b"RSKZTDCEI123nst GHWdcNAv";

fn keep_front(k: u8) -> bool {
    matches!(k, b'Q' | b'P' | b'B' | b'E')
}
fn keep_back(k: u8) -> bool {
    matches!(k, b'C' | b'E')
}
fn valid_front(k: u8, len: u32) -> bool {
    FRONTEND.contains(&k) && len < (1 << 30)
}
fn valid_back(k: u8, len: u32) -> bool {
    BACKEND.contains(&k) && k != b' ' && len < (1 << 30)
}

/// The NUL-terminated bytes at `at` (or the rest); `at` moved past the NUL.
fn cbytes<'a>(b: &'a [u8], at: &mut usize) -> &'a [u8] {
    let start = (*at).min(b.len());
    let end = memchr::memchr(0, &b[start..]).map_or(b.len(), |p| start + p);
    *at = end + 1;
    &b[start..end]
}

/// The NUL-terminated string at `at` (or the rest), borrowed where it is UTF-8.
fn cstr<'a>(b: &'a [u8], at: &mut usize) -> Cow<'a, str> {
    text(cbytes(b, at))
}

/// Bytes as text, borrowed where they are UTF-8. from_utf8 first: the same
/// answer for UTF-8, which nearly every statement is, checked faster than
/// from_utf8_lossy's chunks (4% of decode pg --json's time).
fn text(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// Rows from a command tag: `SELECT 5`, `INSERT 0 1`, `UPDATE 3`, `COPY 10`.
pub fn tag_rows(tag: &str) -> Option<u64> {
    let mut w = tag.split_whitespace();
    match w.next()? {
        "INSERT" => w.nth(1)?.parse().ok(),
        "SELECT" | "UPDATE" | "DELETE" | "COPY" | "FETCH" | "MOVE" | "MERGE" => w.next()?.parse().ok(),
        _ => None,
    }
}

fn error_text(body: &[u8]) -> String {
    let (mut code, mut msg) = (String::new(), String::new());
    let mut i = 0;
    while i < body.len() && body[i] != 0 {
        let f = body[i];
        i += 1;
        let v = cstr(body, &mut i);
        match f {
            b'C' => code = v.into_owned(),
            b'M' => msg = v.into_owned(),
            _ => {}
        }
    }
    format!("{code}: {msg}")
}

#[derive(Default)]
pub struct PgDecoder {
    conns: ConnTable<Conn>,
    pub summary: PgSummary,
}

impl PgDecoder {
    pub fn event(&mut self, e: Event<'_>, out: &mut dyn FnMut(Execution)) {
        match e {
            Event::Open { conn, saw_syn, .. } => {
                self.summary.connections += 1;
                self.conns.insert(
                    conn,
                    Conn {
                        phase: if saw_syn { Phase::Startup } else { Phase::Typed },
                        up: Framer::default(),
                        down: Framer::default(),
                        startup_buf: Vec::new(),
                        statements: Names::default(),
                        portals: Names::default(),
                        pending: VecDeque::new(),
                        batch_start: None,
                        batch_bytes: 0,
                        unsure: !saw_syn,
                        tags: Recent::default(),
                        texts: Recent::default(),
                    },
                );
            }
            Event::Gap { conn, to_server, .. } => {
                self.summary.gaps += 1;
                if let Some(c) = self.conns.get_mut(conn) {
                    c.unsure = true;
                    // Resynchronise at the next segment boundary.
                    if to_server {
                        c.up.reset()
                    } else {
                        c.down.reset()
                    }
                }
            }
            Event::Close { conn } => {
                if let Some(c) = self.conns.remove(conn) {
                    self.summary.unanswered += c.unanswered();
                    match c.phase {
                        Phase::Tls => self.summary.tls_connections += 1,
                        Phase::NotPg => self.summary.not_postgres_connections += 1,
                        _ => {}
                    }
                }
            }
            Event::Data { conn, to_server, ts_us, bytes } => {
                let Some(c) = self.conns.get_mut(conn) else { return };
                let summary = &mut self.summary;
                let mut emit = |x: Execution| {
                    summary.statements += 1;
                    if x.error.is_some() {
                        summary.errors += 1;
                    }
                    if x.partial {
                        summary.partial += 1;
                    }
                    out(x)
                };
                c.data(conn, to_server, ts_us, bytes, &mut emit);
            }
        }
    }

    pub fn finish(&mut self) {
        for c in self.conns.drain() {
            self.summary.unanswered += c.unanswered();
        }
    }
}

impl Conn {
    /// Statements sent that never got their answer.
    fn unanswered(&self) -> u64 {
        self.pending.iter().filter(|p| !matches!(p, Pending::Sync)).count() as u64
    }

    /// The client's first bytes: an SSL or GSS request, a cancel, or the
    /// startup packet. Once the startup packet is whole, what followed it
    /// (typed traffic), if anything did.
    fn startup(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        self.startup_buf.extend_from_slice(&bytes[..bytes.len().min(10_000)]);
        if self.startup_buf.len() < 8 {
            return None;
        }
        let len = u32::from_be_bytes(self.startup_buf[0..4].try_into().expect("4 bytes")) as usize;
        let code = u32::from_be_bytes(self.startup_buf[4..8].try_into().expect("4 bytes"));
        if !(8..=10_000).contains(&len) {
            self.phase = Phase::NotPg;
            return None;
        }
        match code {
            80877103 | 80877104 if len == 8 => {
                self.phase = Phase::SslAsked;
                self.startup_buf.clear();
                return None;
            }
            80877102 => {
                self.phase = Phase::Typed; // CancelRequest: nothing follows
                return None;
            }
            c if c >> 16 == 3 => {}
            _ => {
                self.phase = Phase::NotPg;
                return None;
            }
        }
        if self.startup_buf.len() < len {
            return None;
        }
        let rest = self.startup_buf.split_off(len);
        self.startup_buf.clear();
        self.phase = Phase::Typed;
        (!rest.is_empty()).then_some(rest)
    }

    fn data(&mut self, id: u64, to_server: bool, ts: i64, mut bytes: &[u8], out: &mut dyn FnMut(Execution)) {
        match self.phase {
            Phase::Tls | Phase::NotPg => return,
            Phase::SslAsked if !to_server => {
                match bytes.first() {
                    Some(b'S') | Some(b'G') => self.phase = Phase::Tls,
                    Some(b'N') => self.phase = Phase::Startup,
                    _ => self.phase = Phase::NotPg,
                }
                bytes = &bytes[1.min(bytes.len())..];
                if self.phase != Phase::Startup {
                    return;
                }
            }
            Phase::Startup | Phase::SslAsked if to_server => {
                // The rest after the startup packet is typed traffic.
                if let Some(rest) = self.startup(bytes) {
                    self.data(id, true, ts, &rest, out);
                }
                return;
            }
            _ => {}
        }
        if bytes.is_empty() {
            return;
        }
        // The framer is taken out while it runs, so that each message it
        // frames, borrowed from `bytes`, is handled as it is found.
        let mut framer = std::mem::take(if to_server { &mut self.up } else { &mut self.down });
        if to_server {
            framer.push(bytes, ts, keep_front, &valid_front, &mut |m| self.frontend(&m));
        } else {
            framer.push(bytes, ts, keep_back, &valid_back, &mut |m| self.backend(id, &m, out));
        }
        if framer.broken {
            if self.unsure {
                // Mid-stream: try again at the next segment.
                framer.reset();
            } else {
                self.phase = Phase::NotPg;
            }
        }
        *(if to_server { &mut self.up } else { &mut self.down }) = framer;
    }

    fn frontend(&mut self, m: &Msg<'_>) {
        let mut at = 0;
        match m.kind {
            b'Q' => {
                let sql = self.texts.get_bytes(cbytes(m.body, &mut at));
                self.pending.push_back(Pending::Simple {
                    sql,
                    start: m.ts_us,
                    bytes_in: m.wire_len,
                    bytes_out: 0,
                    answered: false,
                });
            }
            b'P' => {
                let name = cstr(m.body, &mut at);
                let sql = self.texts.get_bytes(cbytes(m.body, &mut at));
                self.statements.insert(name, sql);
                self.batch(m.ts_us, m.wire_len);
            }
            b'B' => {
                let portal = cstr(m.body, &mut at);
                let stmt = cstr(m.body, &mut at);
                match self.statements.get(&stmt).cloned() {
                    Some(s) => self.portals.insert(portal, s),
                    None => self.portals.remove(&portal),
                }
                self.batch(m.ts_us, m.wire_len);
            }
            b'E' => {
                let portal = cstr(m.body, &mut at);
                self.batch(m.ts_us, m.wire_len);
                let (sql, partial) = match self.portals.get(&portal) {
                    Some(s) => (s.clone(), self.unsure),
                    None => (Arc::from("(statement prepared before the capture began)"), true),
                };
                let start = self.batch_start.take().unwrap_or(m.ts_us);
                self.pending.push_back(Pending::Extended {
                    sql,
                    start,
                    bytes_in: std::mem::take(&mut self.batch_bytes),
                    bytes_out: 0,
                    partial,
                });
            }
            b'S' => {
                self.batch_start = None;
                self.batch_bytes = 0;
                self.pending.push_back(Pending::Sync);
            }
            b'C' => {
                // Close statement or portal.
                let what = m.body.first().copied();
                at = 1;
                let name = cstr(m.body, &mut at);
                if what == Some(b'S') {
                    self.statements.remove(&name);
                } else {
                    self.portals.remove(&name);
                }
                self.batch(m.ts_us, m.wire_len);
            }
            b'd' | b'c' | b'f' => {
                if let Some(p) = self.pending.iter_mut().rev().find(|p| !matches!(p, Pending::Sync)) {
                    match p {
                        Pending::Simple { bytes_in, .. } | Pending::Extended { bytes_in, .. } => {
                            *bytes_in += m.wire_len
                        }
                        Pending::Sync => {}
                    }
                }
            }
            _ => self.batch(m.ts_us, m.wire_len),
        }
    }

    fn batch(&mut self, ts: i64, len: u64) {
        self.batch_start.get_or_insert(ts);
        self.batch_bytes += len;
    }

    fn add_out(&mut self, len: u64) {
        if let Some(p) = self.pending.iter_mut().find(|p| !matches!(p, Pending::Sync)) {
            match p {
                Pending::Simple { bytes_out, .. } | Pending::Extended { bytes_out, .. } => *bytes_out += len,
                Pending::Sync => {}
            }
        }
    }

    fn backend(&mut self, id: u64, m: &Msg<'_>, out: &mut dyn FnMut(Execution)) {
        match m.kind {
            b'C' | b'E' | b'I' | b's' => {
                self.add_out(m.wire_len);
                let (tag, error) = match m.kind {
                    b'C' => {
                        let mut at = 0;
                        (Some(self.tags.get_bytes(cbytes(m.body, &mut at))), None)
                    }
                    b'E' => (None, Some(error_text(m.body))),
                    b's' => (Some(self.tags.get(Cow::Borrowed("(portal suspended)"))), None),
                    _ => (Some(self.tags.get(Cow::Borrowed("(empty query)"))), None),
                };
                let Some(front) = self.pending.iter().position(|p| !matches!(p, Pending::Sync)) else {
                    return; // an answer to something sent before the capture
                };
                // A Sync before the answered statement was already answered; drop it.
                // One answer, one Execution: the tag and error move into it.
                let mk = move |sql: Arc<str>, start: i64, bytes_in: u64, bytes_out: u64, partial: bool| Execution {
                    conn: id,
                    start_us: start,
                    latency_us: (m.ts_us - start).max(0),
                    sql,
                    rows: tag.as_deref().and_then(tag_rows),
                    tag,
                    error,
                    bytes_in,
                    bytes_out,
                    partial,
                };
                let is_simple = matches!(self.pending[front], Pending::Simple { .. });
                if is_simple {
                    if let Pending::Simple { sql, start, bytes_in, bytes_out, answered } = &mut self.pending[front] {
                        out(mk(sql.clone(), *start, *bytes_in, *bytes_out, self.unsure));
                        *answered = true;
                        // Several statements in one Query: the next one's latency starts here.
                        *start = m.ts_us;
                        *bytes_in = 0;
                        *bytes_out = 0;
                    }
                } else if let Some(Pending::Extended { sql, start, bytes_in, bytes_out, partial }) =
                    self.pending.remove(front)
                {
                    out(mk(sql, start, bytes_in, bytes_out, partial));
                    if m.kind == b'E' {
                        // The server skips to the next Sync: those Executes never ran.
                        while let Some(p) = self.pending.front() {
                            if matches!(p, Pending::Sync) {
                                break;
                            }
                            self.pending.pop_front();
                        }
                    }
                }
            }
            b'Z' => {
                // ReadyForQuery ends a simple query or an extended batch.
                if let Some(i) = self.pending.iter().position(|p| matches!(p, Pending::Simple { .. } | Pending::Sync)) {
                    self.pending.drain(..=i);
                }
            }
            _ => self.add_out(m.wire_len),
        }
    }
}

/// Decodes a capture file; `server_port` tells the server side when known.
pub fn decode_file(
    path: &Path,
    server_port: Option<u16>,
    out: &mut dyn FnMut(Execution),
) -> Result<PgSummary, DecodeError> {
    let f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    decode_from(f, &path.display().to_string(), server_port, out)
}

/// Decodes a capture from any reader; `name` is what errors call it.
/// With two cores or more, the capture is read and its TCP reassembled on
/// a thread of its own while this one decodes the protocol: the two were
/// about even shares of `decode pg`'s time, one after the other. On one
/// core (and so under bench/self.sh's count) both run here, in turn.
pub fn decode_from(
    r: impl std::io::Read + Send,
    name: &str,
    server_port: Option<u16>,
    out: &mut dyn FnMut(Execution),
) -> Result<PgSummary, DecodeError> {
    let mut pg = PgDecoder::default();
    let stats = if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        reassembled(r, name, server_port, &mut |e| pg.event(e, out))?
    } else {
        reassembled_beside(r, name, server_port, &mut |e| pg.event(e, out))?
    };
    pg.finish();
    pg.summary.packets = stats;
    Ok(pg.summary)
}

/// The capture's TCP reassembled, each event to `each` as it comes.
fn reassembled(
    r: impl std::io::Read + Send,
    name: &str,
    server_port: Option<u16>,
    each: &mut dyn FnMut(Event<'_>),
) -> Result<crate::packet::PacketStats, DecodeError> {
    let mut tcp = Reassembler::new(server_port);
    let stats = for_each_segment_in(r, name, &mut |seg| tcp.segment(&seg, each))?;
    tcp.finish(each);
    Ok(stats)
}

/// As [`reassembled`], on a thread of its own, handing its events over in
/// batches (their bytes copied once, into the batch), and gives each to
/// `each` here, in order.
fn reassembled_beside(
    r: impl std::io::Read + Send,
    name: &str,
    server_port: Option<u16>,
    each: &mut dyn FnMut(Event<'_>),
) -> Result<crate::packet::PacketStats, DecodeError> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Batch>(4);
    // Emptied batches go back, so that their memory is used again.
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Batch>();
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut batch = Batch::default();
            let send = |batch: &mut Batch| {
                let next = empty_rx.try_recv().unwrap_or_default();
                let _ = full_tx.send(std::mem::replace(batch, next));
            };
            let stats = reassembled(r, name, server_port, &mut |e| {
                batch.push(e);
                if batch.is_full() {
                    send(&mut batch);
                }
            });
            send(&mut batch);
            stats
        });
        for mut batch in full_rx {
            batch.replay(each);
            let _ = empty_tx.send(batch);
        }
        reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Events of the reassembler, owned: a data event's bytes are a range of `bytes`.
#[derive(Default)]
struct Batch {
    events: Vec<Owned>,
    bytes: Vec<u8>,
}

enum Owned {
    Open { conn: u64, client: crate::tcp::Endpoint, server: crate::tcp::Endpoint, ts_us: i64, saw_syn: bool },
    Data { conn: u64, to_server: bool, ts_us: i64, from: usize, to: usize },
    Gap { conn: u64, to_server: bool, lost: u64 },
    Close { conn: u64 },
}

impl Batch {
    /// Handed over past this many bytes or events: a few hundred batches
    /// for a capture of a hundred megabytes, each small enough to stay in cache.
    const BYTES: usize = 256 * 1024;
    const EVENTS: usize = 4096;

    fn is_full(&self) -> bool {
        self.bytes.len() >= Self::BYTES || self.events.len() >= Self::EVENTS
    }

    fn push(&mut self, e: Event<'_>) {
        self.events.push(match e {
            Event::Open { conn, client, server, ts_us, saw_syn } => {
                Owned::Open { conn, client, server, ts_us, saw_syn }
            }
            Event::Data { conn, to_server, ts_us, bytes } => {
                let from = self.bytes.len();
                self.bytes.extend_from_slice(bytes);
                Owned::Data { conn, to_server, ts_us, from, to: self.bytes.len() }
            }
            Event::Gap { conn, to_server, lost } => Owned::Gap { conn, to_server, lost },
            Event::Close { conn } => Owned::Close { conn },
        });
    }

    /// Each event to `each`, in order; the batch left empty.
    fn replay(&mut self, each: &mut dyn FnMut(Event<'_>)) {
        for e in self.events.drain(..) {
            each(match e {
                Owned::Open { conn, client, server, ts_us, saw_syn } => {
                    Event::Open { conn, client, server, ts_us, saw_syn }
                }
                Owned::Data { conn, to_server, ts_us, from, to } => {
                    Event::Data { conn, to_server, ts_us, bytes: &self.bytes[from..to] }
                }
                Owned::Gap { conn, to_server, lost } => Event::Gap { conn, to_server, lost },
                Owned::Close { conn } => Event::Close { conn },
            });
        }
        self.bytes.clear();
    }
}
