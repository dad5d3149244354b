//! Cuts a byte stream into length-prefixed messages without ever
//! allocating by the length a message claims: content is kept up to a cap
//! for the messages whose content matters, and skipped for the rest.

/// The most of one message's content we keep (SQL text, error fields).
pub const KEEP: usize = 1 << 20;

#[derive(Debug)]
pub struct Msg {
    pub kind: u8,
    /// Whole length on the wire, header included.
    pub wire_len: u64,
    /// Content, at most `KEEP` bytes of it.
    pub body: Vec<u8>,
    pub truncated: bool,
    /// Timestamp of the message's first byte.
    pub ts_us: i64,
}

#[derive(Debug, Default)]
pub struct Framer {
    head: Vec<u8>,
    head_ts: i64,
    /// The message being read, and how many of its bytes are still to come.
    cur: Option<(Msg, u64)>,
    /// Set when the stream cannot be framed (garbage); the caller decides.
    pub broken: bool,
    /// Bodies handed back by the caller, for the next kept messages.
    spare: Vec<Vec<u8>>,
}

/// Whether `kind`'s content is worth keeping.
pub type Keep = fn(u8) -> bool;

impl Framer {
    /// Takes back a message's body, so the next one kept need not allocate.
    pub fn recycle(&mut self, mut body: Vec<u8>) {
        if self.spare.len() < 4 && body.capacity() > 0 && body.capacity() <= 64 * 1024 {
            body.clear();
            self.spare.push(body);
        }
    }

    pub fn reset(&mut self) {
        self.head.clear();
        self.cur = None;
        self.broken = false;
    }

    /// Feeds bytes; `valid` says whether a type byte and length make sense.
    pub fn push(
        &mut self,
        mut data: &[u8],
        ts_us: i64,
        keep: Keep,
        valid: &dyn Fn(u8, u32) -> bool,
        out: &mut dyn FnMut(Msg),
    ) {
        while !data.is_empty() && !self.broken {
            if let Some((msg, left)) = &mut self.cur {
                let take = (*left).min(data.len() as u64) as usize;
                if keep(msg.kind) {
                    let room = KEEP.saturating_sub(msg.body.len());
                    msg.body.extend_from_slice(&data[..take.min(room)]);
                    if take > room {
                        msg.truncated = true;
                    }
                }
                *left -= take as u64;
                data = &data[take..];
                if *left == 0 {
                    out(self.cur.take().expect("current").0);
                }
                continue;
            }
            let need = 5 - self.head.len();
            let take = need.min(data.len());
            if self.head.is_empty() {
                // The message starts in this chunk.
                self.head_ts = ts_us;
            }
            let first_ts = self.head_ts;
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
            let body = if keep(kind) && len > 4 { self.spare.pop().unwrap_or_default() } else { Vec::new() };
            let msg = Msg { kind, wire_len: len as u64 + 1, body, truncated: false, ts_us: first_ts };
            match len as u64 - 4 {
                0 => out(msg),
                left => self.cur = Some((msg, left)),
            }
        }
    }
}
