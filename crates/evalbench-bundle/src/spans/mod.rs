//! Span files (`trace/*.jsonl`; the format is in docs/decisions.md,
//! "Spans"): the model here, the line parser in `parse`, the reader that
//! parses a directory's files (and chunks of large ones) on every core in
//! `parallel`.
//!
//! Tolerant by contract: unknown keys are kept (inside `fields` as they are,
//! at the top level in [`Span::extra`]); a malformed line is counted and
//! listed with its file and line number, never fatal; a line longer than
//! [`MAX_LINE`] is skipped without reading it into memory whole.

mod fast;
mod ids;
mod nesting;
mod parallel;
mod parse;

pub use ids::IdMap;
pub use parallel::{fold_trace_dir, read_trace_dir, Keep, KeepText, SpanText, TraceRead, CHUNK};
pub use parse::{read_span_file, read_spans, read_spans_from_bytes};

/// Whether the fast line reader agrees with serde on `line` (for the fuzz target).
#[doc(hidden)]
pub fn fast_path_agrees(line: &[u8]) -> bool {
    fast::agrees(line)
}
/// Whether every span of `data` read with its fields left in the file has
/// them at bytes of `data` equal to the fields a plain read gives, read
/// through buffers of `buffer` bytes (small ones take every line through
/// the slow reader), with nothing else changed (for the fuzz target and
/// tests).
#[doc(hidden)]
pub fn placed_fields_agree(data: &[u8], buffer: usize) -> bool {
    let path = std::path::Path::new("fuzz.1.jsonl");
    let reader = || std::io::BufReader::with_capacity(buffer.max(1), data);
    let (Ok(plain), Ok(placed)) =
        (read_spans(reader(), path), parse::read_spans_at(reader(), path, 0, Some((&|_| true, &|_| false))))
    else {
        return false;
    };
    let same = |a: &Stream, b: &Stream| {
        a.names == b.names
            && a.spans.len() == b.spans.len()
            && a.spans.iter().zip(&b.spans).all(|(x, y)| {
                let fields = match b.fields_in_file(y) {
                    Some((at, len)) => data.get(at as usize..at as usize + len) == Some(a.fields(x).as_bytes()),
                    None => b.fields(y) == a.fields(x),
                };
                fields
                    && (x.name, x.ts_us, x.dur_us, a.id(x), a.parent(x), a.thread(x))
                        == (y.name, y.ts_us, y.dur_us, b.id(y), b.parent(y), b.thread(y))
                    && a.extra(x) == b.extra(y)
            })
    };
    plain.malformed == placed.malformed
        && plain.streams.len() == placed.streams.len()
        && plain.streams.iter().zip(&placed.streams).all(|(a, b)| same(a, b))
}

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use serde_json::value::RawValue;

/// Lines longer than this are malformed: no span needs a megabyte.
pub const MAX_LINE: usize = 1 << 20;
/// How many malformed lines are listed one by one; the rest are only counted.
pub const MAX_LISTED: usize = 100;

/// One closed span. Names and targets are indices into [`Stream::names`];
/// its `fields` and extra keys are text in [`Stream::text`]; its ids are
/// read through its stream ([`Stream::id`], [`Stream::parent`],
/// [`Stream::thread`]).
///
/// 48 bytes: millions of spans are held at once, so where its text starts,
/// the fields' length, the ids' "known" bits and whether it has extra keys
/// share one word ([`Text`]), not three Options and two lengths; and the
/// three ids share two words, 42 bits each (4 trillion: our layer numbers
/// spans 1, 2, 3, ... and threads by the kernel's ids), with a span whose
/// ids need more keeping them in [`Stream::wide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub name: u32,
    pub target: u32,
    pub ts_us: i64,
    pub dur_us: i64,
    /// id, parent, thread packed ([`pack`]), or [`WIDE`] and an index into
    /// [`Stream::wide`]; each meaningful where its known bit is set.
    ids: [u64; 2],
    text: Text,
}

/// Bits of an id kept in the span itself.
const ID_BITS: u32 = 42;
/// In the ids' second word: they are in [`Stream::wide`], at the index in the first.
const WIDE: u64 = 1 << 63;

/// Three ids of at most [`ID_BITS`] bits in two words.
fn pack([a, b, c]: [u64; 3]) -> [u64; 2] {
    let v = u128::from(a) | u128::from(b) << ID_BITS | u128::from(c) << (2 * ID_BITS);
    [v as u64, (v >> 64) as u64]
}

fn unpack([lo, hi]: [u64; 2]) -> [u64; 3] {
    let v = u128::from(lo) | u128::from(hi) << 64;
    let mask = (1u128 << ID_BITS) - 1;
    [(v & mask) as u64, (v >> ID_BITS & mask) as u64, (v >> (2 * ID_BITS) & mask) as u64]
}

/// Where a span's text starts in [`Stream::text`] (38 bits: 256 GiB), its
/// fields' length (21 bits: a line is at most [`MAX_LINE`]), the ids'
/// known bits (3), whether the start is instead where the fields are in
/// the stream's file (1, see [`Stream::fields_in_file`]) and whether extra
/// keys follow the fields (1). The extra keys' length is written before
/// them in the text, as [`EXTRA_DIGITS`] decimal digits: few spans have
/// any, so the length costs every span nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Text(u64);

const START_BITS: u32 = 38;
const LEN_BITS: u32 = 21;
const KNOWN_SHIFT: u32 = START_BITS + LEN_BITS;
const IN_FILE_BIT: u64 = 1 << 62;
const EXTRA_BIT: u64 = 1 << 63;
const START_MASK: u64 = (1 << START_BITS) - 1;
/// The longest fields or extra text kept: longer cannot come from a line.
const MAX_TEXT: usize = (1 << LEN_BITS) - 1;
/// Digits of an extra text's length (it is at most [`MAX_TEXT`]).
const EXTRA_DIGITS: usize = 7;

impl Text {
    fn start(self) -> u64 {
        self.0 & START_MASK
    }
    fn fields_len(self) -> usize {
        ((self.0 >> START_BITS) & ((1 << LEN_BITS) - 1)) as usize
    }
    fn has_extra(self) -> bool {
        self.0 & EXTRA_BIT != 0
    }
    fn in_file(self) -> bool {
        self.0 & IN_FILE_BIT != 0
    }
    /// The same ids' known bits, with fields `len` bytes long at `at` in
    /// the stream's file, and no extra keys.
    fn in_file_at(self, at: u64, len: usize) -> Text {
        let known = self.0 & (0b111 << KNOWN_SHIFT);
        Text(known | IN_FILE_BIT | (at & START_MASK) | ((len as u64) << START_BITS))
    }
    /// The same ids' known bits, with this text.
    fn with(self, start: u64, fields_len: usize, extra: bool) -> Text {
        let known = self.0 & (0b111 << KNOWN_SHIFT);
        Text(known | (start & START_MASK) | ((fields_len as u64) << START_BITS) | if extra { EXTRA_BIT } else { 0 })
    }
}

impl Span {
    /// A span without ids or text.
    pub fn new(name: u32, target: u32, ts_us: i64, dur_us: i64) -> Span {
        Span { name, target, ts_us, dur_us, ids: [0; 2], text: Text::default() }
    }

    /// With its `id`, `parent` and `thread`, each where known and of at
    /// most 42 bits: for spans made by hand (tests). Ids read from a file
    /// go through [`Stream::with_ids`], which keeps any id.
    ///
    /// # Panics
    /// When an id needs more than 42 bits.
    #[doc(hidden)]
    pub fn with_ids(mut self, id: Option<u64>, parent: Option<u64>, thread: Option<u64>) -> Span {
        let mut wide = Vec::new();
        self = Stream::ids_into(self, [id, parent, thread], &mut wide);
        assert!(wide.is_empty(), "an id of more than {ID_BITS} bits needs its stream: Stream::with_ids");
        self
    }

    fn known(&self, k: usize) -> bool {
        self.text.0 & (1 << (KNOWN_SHIFT + k as u32)) != 0
    }

    pub fn end_us(&self) -> i64 {
        self.ts_us.saturating_add(self.dur_us)
    }

    /// Moves the span's text by `by` bytes (its stream's text joined after
    /// another's); a text that would start past what the span can say is
    /// dropped.
    pub(crate) fn shift_text(&mut self, by: u64) {
        let t = self.text;
        if t.in_file() {
            return;
        }
        self.text = match t.start().checked_add(by).filter(|&s| s <= START_MASK) {
            Some(s) => t.with(s, t.fields_len(), t.has_extra()),
            None => t.with(0, 0, false),
        };
    }
}

/// All spans of one process: one (host, process, pid).
#[derive(Debug, Clone, Default)]
pub struct Stream {
    pub host: Option<String>,
    pub process: String,
    pub pid: u32,
    pub file: PathBuf,
    pub names: Vec<String>,
    pub spans: Vec<Span>,
    /// Every span's raw `fields` and extra text, end to end.
    pub text: String,
    /// The ids (id, parent, thread) of the spans whose ids do not fit in
    /// the span ([`Span`]); few or none.
    pub wide: Vec<[u64; 3]>,
    /// The lines carried no ids, and each span's id and parent were
    /// inferred from time containment ([`Stream::infer_nesting`]).
    pub nesting_inferred: bool,
}

impl Stream {
    /// `span` with its `id`, `parent` and `thread`, each where known; ids
    /// that do not fit in the span go to [`Stream::wide`].
    pub fn with_ids(&mut self, span: Span, id: Option<u64>, parent: Option<u64>, thread: Option<u64>) -> Span {
        Stream::ids_into(span, [id, parent, thread], &mut self.wide)
    }

    fn ids_into(mut span: Span, known: [Option<u64>; 3], wide: &mut Vec<[u64; 3]>) -> Span {
        span.text.0 &= !(0b111 << KNOWN_SHIFT);
        let mut ids = [0u64; 3];
        for (k, v) in known.into_iter().enumerate() {
            if let Some(v) = v {
                ids[k] = v;
                span.text.0 |= 1 << (KNOWN_SHIFT + k as u32);
            }
        }
        span.ids = if ids.iter().all(|&v| v >> ID_BITS == 0) {
            pack(ids)
        } else {
            wide.push(ids);
            [wide.len() as u64 - 1, WIDE]
        };
        span
    }

    /// The span's id, parent and thread, known or not.
    fn ids(&self, s: &Span) -> [u64; 3] {
        if s.ids[1] == WIDE {
            return self.wide.get(s.ids[0] as usize).copied().unwrap_or_default();
        }
        unpack(s.ids)
    }

    pub fn id(&self, s: &Span) -> Option<u64> {
        s.known(0).then(|| self.ids(s)[0])
    }
    pub fn parent(&self, s: &Span) -> Option<u64> {
        s.known(1).then(|| self.ids(s)[1])
    }
    pub fn thread(&self, s: &Span) -> Option<u64> {
        s.known(2).then(|| self.ids(s)[2])
    }

    /// Moves the wide ids of `spans`, which were this stream's, to after
    /// `to`'s (the stream joined after another's).
    pub(crate) fn move_wide(&mut self, to: &mut Vec<[u64; 3]>) -> impl Fn(&mut Span) {
        let base = to.len() as u64;
        to.append(&mut self.wide);
        move |s: &mut Span| {
            if s.ids[1] == WIDE {
                s.ids[0] += base;
            }
        }
    }

    fn text_of(&self, start: u64, len: usize) -> &str {
        let start = start as usize;
        self.text.get(start..start + len).unwrap_or("")
    }

    /// The span's `fields` as written (raw JSON object), or "".
    pub fn fields(&self, s: &Span) -> &str {
        if s.text.in_file() {
            return "";
        }
        self.text_of(s.text.start(), s.text.fields_len())
    }

    /// Where the span's fields are in [`Stream::file`] (offset, length),
    /// for a span read with its fields left there
    /// ([`super::SpanText::InFile`]); [`Stream::fields`] is then "",
    /// and [`Stream::field`] reads the file.
    pub fn fields_in_file(&self, s: &Span) -> Option<(u64, usize)> {
        s.text.in_file().then(|| (s.text.start(), s.text.fields_len()))
    }

    /// Unknown top-level keys of the span's line, as a raw JSON object, kept for the trace.
    pub fn extra(&self, s: &Span) -> Option<&str> {
        let (at, len) = self.extra_at(s)?;
        Some(self.text_of(at, len))
    }

    /// Where the span's extra text starts, past its length's digits, and how long it is.
    fn extra_at(&self, s: &Span) -> Option<(u64, usize)> {
        if !s.text.has_extra() || s.text.in_file() {
            return None;
        }
        let digits_at = s.text.start() + s.text.fields_len() as u64;
        let len = self.text_of(digits_at, EXTRA_DIGITS).parse::<usize>().ok()?;
        Some((digits_at + EXTRA_DIGITS as u64, len))
    }

    /// The span's whole text: fields, then the extra keys with their length.
    fn whole_text(&self, s: &Span) -> &str {
        if s.text.in_file() {
            return "";
        }
        let end = match self.extra_at(s) {
            Some((at, len)) => at + len as u64,
            None => s.text.start() + s.text.fields_len() as u64,
        };
        self.text_of(s.text.start(), end.saturating_sub(s.text.start()) as usize)
    }

    /// One field's value, parsed. A span whose fields were left in the
    /// file has them read from there, a read a call: loads keep in memory
    /// the fields their readers ask for often.
    pub fn field(&self, s: &Span, key: &str) -> Option<serde_json::Value> {
        let placed;
        let text = match self.fields_in_file(s) {
            Some((at, len)) => {
                placed = self.read_placed(at, len)?;
                placed.as_str()
            }
            None => self.fields(s),
        };
        if text.is_empty() {
            return None;
        }
        let map: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(text).ok()?;
        map.get(key).and_then(|v| serde_json::from_str(v.get()).ok())
    }

    /// The `len` bytes at `at` in the stream's file, where they are text.
    fn read_placed(&self, at: u64, len: usize) -> Option<String> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0; len];
        std::fs::File::open(&self.file).ok()?.read_exact_at(&mut buf, at).ok()?;
        String::from_utf8(buf).ok()
    }

    /// Appends `span` with its raw `fields` and `extra` text (either may be
    /// ""). A text longer than a line can be is not kept (lines over
    /// [`MAX_LINE`] never reach here), nor any text once the stream's is
    /// past what a span can point into.
    pub fn push(&mut self, mut span: Span, fields: &str, extra: &str) {
        let fits = |t: &str| t.len() <= MAX_TEXT;
        let (mut fields, mut extra) = (if fits(fields) { fields } else { "" }, if fits(extra) { extra } else { "" });
        let start = self.text.len() as u64;
        if start > START_MASK {
            (fields, extra) = ("", "");
        }
        span.text = span.text.with(start, fields.len(), !extra.is_empty());
        self.text.push_str(fields);
        if !extra.is_empty() {
            use std::fmt::Write;
            let _ = write!(self.text, "{:0width$}", extra.len(), width = EXTRA_DIGITS);
            self.text.push_str(extra);
        }
        self.spans.push(span);
    }

    /// Appends `span` with its fields left in [`Stream::file`], `len` bytes
    /// at `at` (no extra keys: those are not a copy of the line's bytes).
    /// Fields that cannot be placed so are not kept.
    pub fn push_in_file(&mut self, mut span: Span, at: u64, len: usize) {
        span.text = if len == 0 || len > MAX_TEXT || at > START_MASK {
            span.text.with(0, 0, false)
        } else {
            span.text.in_file_at(at, len)
        };
        self.spans.push(span);
    }

    /// Appends `from`'s span `s`, with its text or its place in the file.
    pub(crate) fn push_from(&mut self, from: &Stream, s: &Span) {
        let span = self.with_ids(*s, from.id(s), from.parent(s), from.thread(s));
        match from.fields_in_file(s) {
            Some((at, len)) => self.push_in_file(span, at, len),
            None => self.push(span, from.fields(s), from.extra(s).unwrap_or("")),
        }
    }

    /// Drops the text (fields and extra keys, or their place in the file)
    /// of every span whose name `keep` refuses: a reader done with most fields keeps a stream's
    /// spans at their 48 bytes, where the text is most of a line.
    pub fn keep_text(&mut self, keep: impl Fn(&str) -> bool) {
        let wanted: Vec<bool> = self.names.iter().map(|n| keep(n)).collect();
        let mut text = String::new();
        for i in 0..self.spans.len() {
            let s = self.spans[i];
            let wanted = wanted.get(s.name as usize).copied().unwrap_or(false);
            self.spans[i].text = if wanted && s.text.in_file() {
                s.text
            } else if wanted {
                let kept = s.text.with(text.len() as u64, s.text.fields_len(), s.text.has_extra());
                text.push_str(self.whole_text(&s));
                kept
            } else {
                s.text.with(0, 0, false)
            };
        }
        text.shrink_to_fit();
        self.text = text;
    }

    pub fn name(&self, s: &Span) -> &str {
        &self.names[s.name as usize]
    }
    pub fn target(&self, s: &Span) -> &str {
        &self.names[s.target as usize]
    }
}

/// A line that was not a span.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Malformed {
    pub file: PathBuf,
    pub line: u64,
    pub reason: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.reason)
    }
}

/// What one span file held.
#[derive(Debug, Clone, Default)]
pub struct SpanFile {
    pub path: PathBuf,
    pub streams: Vec<Stream>,
    pub lines: u64,
    pub malformed: Vec<Malformed>,
    pub malformed_total: u64,
    /// Spans the writing process dropped (its `dropped_spans` lines).
    pub dropped: u64,
    /// Physical lines read, blank ones included (to number lines across chunks).
    pub physical_lines: u64,
    /// Why the file could not be read (it is then empty here): a bad file
    /// loses only itself, its directory's other files are read.
    pub unreadable: Option<String>,
}

/// The job a span belongs to: the contract's ([`crate::contract::job_key`]).
pub use crate::contract::job_key;

#[cfg(test)]
mod tests;
