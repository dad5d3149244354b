//! WebSocket from reassembled TCP (`/proto`): the HTTP upgrade, then frames
//! per direction (masking, fragmentation, control frames). Payloads are
//! counted, never kept. Round trips are a worker message followed by the
//! next server message, and the other way round.

use crate::error::DecodeError;
use std::path::Path;

use serde::Serialize;

use crate::packet::{for_each_segment_in, PacketStats};
use crate::tcp::{ConnTable, Event, Reassembler};

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub conn: u64,
    pub ts_us: i64,
    /// "worker" (client to server) or "server".
    pub from: &'static str,
    /// text, binary, close, ping, pong
    pub kind: &'static str,
    pub bytes: u64,
    pub frames: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Dist {
    pub count: u64,
    pub min: i64,
    pub p50: i64,
    pub p95: i64,
    pub max: i64,
    pub total: i64,
}

impl Dist {
    pub fn of(mut v: Vec<i64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_unstable();
        let n = v.len();
        let at = |q: f64| v[crate::rank::nearest_rank(n, q) - 1];
        Dist { count: n as u64, min: v[0], p50: at(0.5), p95: at(0.95), max: v[n - 1], total: v.iter().sum() }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct WsSummary {
    pub connections: u64,
    /// Connections whose HTTP upgrade the capture saw.
    pub upgrades: u64,
    /// Connections the capture joined after they began (no SYN, no upgrade):
    /// their frames are decoded from the first whole frame on.
    pub midstream_connections: u64,
    pub frames_from_worker: u64,
    pub frames_from_server: u64,
    pub control_frames: u64,
    pub message_bytes_from_worker: Dist,
    pub message_bytes_from_server: Dist,
    /// Worker message to the next server message, µs.
    pub round_trip_worker_to_server_us: Dist,
    /// Server message to the next worker message, µs.
    pub round_trip_server_to_worker_us: Dist,
    pub not_websocket_connections: u64,
    pub gaps: u64,
    pub packets: PacketStats,
}

#[derive(Default)]
struct Dir {
    http_done: bool,
    http: Vec<u8>,
    head: Vec<u8>,
    /// Payload bytes still to skip in the current frame.
    left: u64,
    msg_bytes: u64,
    msg_frames: u32,
    msg_ts: i64,
    msg_kind: Option<&'static str>,
    broken: bool,
}

/// Frames seen in one direction, control frames among them.
#[derive(Default)]
struct FrameCounts {
    frames: u64,
    control: u64,
}

struct Conn {
    up: Dir,
    down: Dir,
    midstream: bool,
}

fn kind(op: u8) -> Option<&'static str> {
    Some(match op {
        0x1 => "text",
        0x2 => "binary",
        0x8 => "close",
        0x9 => "ping",
        0xa => "pong",
        _ => return None,
    })
}

impl Dir {
    /// The HTTP upgrade, up to the blank line that ends its request or
    /// response: what follows it in `data` once it has ended.
    fn past_upgrade<'d>(&mut self, data: &'d [u8]) -> Option<&'d [u8]> {
        let room = (64 * 1024usize).saturating_sub(self.http.len());
        self.http.extend_from_slice(&data[..data.len().min(room)]);
        match self.http.windows(4).position(|w| w == b"\r\n\r\n") {
            Some(i) => {
                let consumed_before = self.http.len() - data.len().min(room);
                let end = i + 4;
                self.http_done = true;
                let skip = end.saturating_sub(consumed_before);
                self.http.clear();
                self.http.shrink_to_fit();
                Some(&data[skip.min(data.len())..])
            }
            None => {
                if self.http.len() >= 64 * 1024 {
                    self.broken = true;
                }
                None
            }
        }
    }

    /// Consumes bytes, emitting whole messages.
    fn push(
        &mut self,
        conn: u64,
        from: &'static str,
        ts: i64,
        mut data: &[u8],
        counts: &mut FrameCounts,
        out: &mut dyn FnMut(Message),
    ) {
        if !self.http_done {
            match self.past_upgrade(data) {
                Some(rest) => data = rest,
                None => return,
            }
        }
        while !data.is_empty() && !self.broken {
            if self.left > 0 {
                let take = (self.left as usize).min(data.len());
                self.left -= take as u64;
                data = &data[take..];
                continue;
            }
            self.head.push(data[0]);
            data = &data[1..];
            if self.head.len() == 1 {
                self.msg_ts = if self.msg_frames == 0 { ts } else { self.msg_ts };
            }
            if self.head.len() < 2 {
                continue;
            }
            let len7 = (self.head[1] & 0x7f) as usize;
            let masked = self.head[1] & 0x80 != 0;
            let ext = match len7 {
                126 => 2,
                127 => 8,
                _ => 0,
            };
            let need = 2 + ext + if masked { 4 } else { 0 };
            if self.head.len() < need {
                continue;
            }
            let fin = self.head[0] & 0x80 != 0;
            let op = self.head[0] & 0x0f;
            if self.head[0] & 0x70 != 0 || (op != 0 && kind(op).is_none()) {
                self.broken = true; // reserved bits or opcode: not a frame boundary
                return;
            }
            let len = match ext {
                0 => len7 as u64,
                2 => u16::from_be_bytes([self.head[2], self.head[3]]) as u64,
                _ => u64::from_be_bytes(self.head[2..10].try_into().expect("8 bytes")),
            };
            self.head.clear();
            counts.frames += 1;
            if op >= 0x8 {
                counts.control += 1;
                out(Message { conn, ts_us: ts, from, kind: kind(op).unwrap_or("control"), bytes: len, frames: 1 });
            } else {
                if op != 0 {
                    self.msg_kind = kind(op);
                    self.msg_ts = ts;
                }
                self.msg_bytes += len;
                self.msg_frames += 1;
                if fin {
                    out(Message {
                        conn,
                        ts_us: self.msg_ts,
                        from,
                        kind: self.msg_kind.unwrap_or("continuation"),
                        bytes: self.msg_bytes,
                        frames: self.msg_frames,
                    });
                    self.msg_bytes = 0;
                    self.msg_frames = 0;
                }
            }
            self.left = len;
        }
    }
}

/// Decodes /proto traffic of a capture; `server_port` tells the server side when known.
pub fn decode_file(
    path: &Path,
    server_port: Option<u16>,
    out: &mut dyn FnMut(&Message),
) -> Result<WsSummary, DecodeError> {
    let f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    decode_from(f, &path.display().to_string(), server_port, out)
}

/// Decodes /proto traffic from any reader; `name` is what errors call it.
pub fn decode_from(
    r: impl std::io::Read + Send,
    name: &str,
    server_port: Option<u16>,
    out: &mut dyn FnMut(&Message),
) -> Result<WsSummary, DecodeError> {
    let mut tcp = Reassembler::new(server_port);
    let mut conns: ConnTable<Conn> = ConnTable::default();
    let mut s = WsSummary::default();
    let mut messages: Vec<Message> = Vec::new();
    let (mut fw, mut fs) = (FrameCounts::default(), FrameCounts::default());
    let mut handle = |e: Event<'_>, s: &mut WsSummary| match e {
        Event::Open { conn, saw_syn, .. } => {
            s.connections += 1;
            let mk = || Dir { http_done: !saw_syn, ..Dir::default() };
            conns.insert(conn, Conn { up: mk(), down: mk(), midstream: !saw_syn });
        }
        Event::Data { conn, to_server, ts_us, bytes } => {
            if let Some(c) = conns.get_mut(conn) {
                let mut emit = |m: Message| messages.push(m);
                if to_server {
                    c.up.push(conn, "worker", ts_us, bytes, &mut fw, &mut emit);
                } else {
                    c.down.push(conn, "server", ts_us, bytes, &mut fs, &mut emit);
                }
            }
        }
        Event::Gap { conn, .. } => {
            s.gaps += 1;
            if let Some(c) = conns.get_mut(conn) {
                c.up.broken = true;
                c.down.broken = true;
            }
        }
        Event::Close { conn } => {
            if let Some(c) = conns.remove(conn) {
                if c.midstream {
                    s.midstream_connections += 1;
                } else if c.up.http_done && c.down.http_done {
                    s.upgrades += 1;
                }
                if c.up.broken || c.down.broken {
                    s.not_websocket_connections += 1;
                }
            }
        }
    };
    let stats = for_each_segment_in(r, name, &mut |seg| tcp.segment(&seg, &mut |e| handle(e, &mut s)))?;
    tcp.finish(&mut |e| handle(e, &mut s));
    messages.sort_by_key(|m| (m.ts_us, m.conn));
    let data: Vec<&Message> = messages.iter().filter(|m| m.kind == "binary" || m.kind == "text").collect();
    s.message_bytes_from_worker =
        Dist::of(data.iter().filter(|m| m.from == "worker").map(|m| m.bytes as i64).collect());
    s.message_bytes_from_server =
        Dist::of(data.iter().filter(|m| m.from == "server").map(|m| m.bytes as i64).collect());
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for w in data.windows(2) {
        if w[0].conn == w[1].conn && w[0].from != w[1].from {
            let d = w[1].ts_us - w[0].ts_us;
            if w[0].from == "worker" {
                up.push(d)
            } else {
                down.push(d)
            }
        }
    }
    s.round_trip_worker_to_server_us = Dist::of(up);
    s.round_trip_server_to_worker_us = Dist::of(down);
    s.frames_from_worker = fw.frames;
    s.frames_from_server = fs.frames;
    s.control_frames = fw.control + fs.control;
    s.packets = stats;
    for m in &messages {
        out(m);
    }
    Ok(s)
}
