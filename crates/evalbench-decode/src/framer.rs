//! Cuts a byte stream into length-prefixed messages without ever
//! allocating by the length a message claims: content is kept up to a cap
//! for the messages whose content matters, and skipped for the rest.

/// The most of one message's content we keep (SQL text, error fields).
pub const KEEP: usize = 1 << 20;

/// One message, its content borrowed: from the chunk that held it whole
/// (nearly always: a message is rarely split across segments), else from
/// the framer's buffer. Copying every body out of its chunk, and handing
/// the copies back, was a fifth of `decode pg --json`.
#[derive(Debug)]
pub struct Msg<'a> {
    pub kind: u8,
    /// Whole length on the wire, header included.
    pub wire_len: u64,
    /// Content, at most `KEEP` bytes of it; empty for kinds not kept.
    pub body: &'a [u8],
    pub truncated: bool,
    /// Timestamp of the message's first byte.
    pub ts_us: i64,
}

/// A message begun in one chunk and not ended in it.
#[derive(Debug)]
struct Partial {
    kind: u8,
    wire_len: u64,
    ts_us: i64,
    /// Its bytes still to come.
    left: u64,
}

#[derive(Debug, Default)]
pub struct Framer {
    head: Vec<u8>,
    head_ts: i64,
    cur: Option<Partial>,
    /// The kept content of `cur`, so far.
    body: Vec<u8>,
    truncated: bool,
    /// Set when the stream cannot be framed (garbage); the caller decides.
    pub broken: bool,
}

/// Whether `kind`'s content is worth keeping.
pub type Keep = fn(u8) -> bool;

/// A split message's buffer larger than this is let go once it is handed
/// out, so that a connection that once carried a large one does not hold it.
const KEEP_BUFFER: usize = 64 * 1024;

impl Framer {
    pub fn reset(&mut self) {
        self.head.clear();
        self.cur = None;
        self.body.clear();
        self.truncated = false;
        self.broken = false;
    }

    /// Feeds bytes; `valid` says whether a type byte and length make sense.
    pub fn push(
        &mut self,
        mut data: &[u8],
        ts_us: i64,
        keep: Keep,
        valid: &dyn Fn(u8, u32) -> bool,
        out: &mut dyn FnMut(Msg<'_>),
    ) {
        while !data.is_empty() && !self.broken {
            if self.cur.is_some() {
                data = self.go_on(data, keep, out);
                continue;
            }
            if self.head.is_empty() && data.len() >= 5 {
                // A header whole in this chunk, and most often its content too.
                let (kind, len) = (data[0], u32::from_be_bytes([data[1], data[2], data[3], data[4]]));
                if len < 4 || !valid(kind, len) {
                    self.broken = true;
                    return;
                }
                let (content, rest) = ((len - 4) as usize, &data[5..]);
                if content <= rest.len() {
                    let kept = if keep(kind) { &rest[..content.min(KEEP)] } else { &rest[..0] };
                    let truncated = keep(kind) && content > KEEP;
                    out(Msg { kind, wire_len: u64::from(len) + 1, body: kept, truncated, ts_us });
                    data = &rest[content..];
                } else {
                    self.cur = Some(Partial { kind, wire_len: u64::from(len) + 1, ts_us, left: content as u64 });
                    data = rest;
                }
                continue;
            }
            // A header split across chunks.
            let take = (5 - self.head.len()).min(data.len());
            if self.head.is_empty() {
                self.head_ts = ts_us;
            }
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.head.len() < 5 {
                continue;
            }
            let kind = self.head[0];
            let len = u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]]);
            self.head.clear();
            if len < 4 || !valid(kind, len) {
                self.broken = true;
                return;
            }
            let (wire_len, ts_us) = (u64::from(len) + 1, self.head_ts);
            match u64::from(len) - 4 {
                0 => out(Msg { kind, wire_len, body: &[], truncated: false, ts_us }),
                left => self.cur = Some(Partial { kind, wire_len, ts_us, left }),
            }
        }
    }

    /// More of the message begun before; handed out when whole. The rest of `data`.
    fn go_on<'d>(&mut self, data: &'d [u8], keep: Keep, out: &mut dyn FnMut(Msg<'_>)) -> &'d [u8] {
        let p = self.cur.as_mut().expect("a message begun");
        let take = p.left.min(data.len() as u64) as usize;
        if keep(p.kind) {
            let room = KEEP.saturating_sub(self.body.len());
            self.body.extend_from_slice(&data[..take.min(room)]);
            self.truncated |= take > room;
        }
        p.left -= take as u64;
        if p.left == 0 {
            let p = self.cur.take().expect("a message begun");
            let msg =
                Msg { kind: p.kind, wire_len: p.wire_len, body: &self.body, truncated: self.truncated, ts_us: p.ts_us };
            out(msg);
            if self.body.capacity() > KEEP_BUFFER {
                self.body = Vec::new();
            }
            self.body.clear();
            self.truncated = false;
        }
        &data[take..]
    }
}
