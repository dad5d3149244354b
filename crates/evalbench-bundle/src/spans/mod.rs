//! Span files (`trace/*.jsonl`; the format is in docs/ARCHITECTURE.md,
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
mod parallel;
mod parse;

pub use ids::IdMap;
pub use parallel::{fold_trace_dir, read_trace_dir, read_trace_dir_chunked, read_trace_dir_filtered, CHUNK};
pub use parse::{read_span_file, read_spans, read_spans_from_bytes};

/// Whether the fast line reader agrees with serde on `line` (for the fuzz target).
#[doc(hidden)]
pub fn fast_path_agrees(line: &[u8]) -> bool {
    fast::agrees(line)
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
/// its `fields` and extra keys are text in [`Stream::text`].
///
/// 64 bytes: a million spans are held at once, so the optional ids keep
/// their "known" bits beside the extra text's length, not in three Options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub name: u32,
    pub target: u32,
    pub ts_us: i64,
    pub dur_us: i64,
    /// id, parent, thread; each meaningful where its known bit is set.
    ids: [u64; 3],
    /// Where the fields, then the extra keys, start in [`Stream::text`].
    text_start: u64,
    fields_len: u32,
    /// The extra keys' text length (below [`KNOWN_SHIFT`]) and the ids' known bits.
    extra_len_known: u32,
}

/// Lines are at most [`MAX_LINE`] bytes, so a text length needs 21 bits;
/// the top three of `extra_len_known` say which ids are known.
const KNOWN_SHIFT: u32 = 29;
const LEN_MASK: u32 = (1 << KNOWN_SHIFT) - 1;

impl Span {
    /// A span without ids or text.
    pub fn new(name: u32, target: u32, ts_us: i64, dur_us: i64) -> Span {
        Span { name, target, ts_us, dur_us, ids: [0; 3], text_start: 0, fields_len: 0, extra_len_known: 0 }
    }

    /// With its `id`, `parent` and `thread`, each where known.
    pub fn with_ids(mut self, id: Option<u64>, parent: Option<u64>, thread: Option<u64>) -> Span {
        self.extra_len_known &= LEN_MASK;
        for (k, v) in [id, parent, thread].into_iter().enumerate() {
            if let Some(v) = v {
                self.ids[k] = v;
                self.extra_len_known |= 1 << (KNOWN_SHIFT + k as u32);
            }
        }
        self
    }

    fn known(&self, k: usize) -> Option<u64> {
        (self.extra_len_known & (1 << (KNOWN_SHIFT + k as u32)) != 0).then_some(self.ids[k])
    }
    pub fn id(&self) -> Option<u64> {
        self.known(0)
    }
    pub fn parent(&self) -> Option<u64> {
        self.known(1)
    }
    pub fn thread(&self) -> Option<u64> {
        self.known(2)
    }

    pub fn end_us(&self) -> i64 {
        self.ts_us.saturating_add(self.dur_us)
    }

    /// Moves the span's text by `by` bytes (its stream's text joined after another's).
    pub(crate) fn shift_text(&mut self, by: u64) {
        self.text_start += by;
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
}

impl Stream {
    fn text_of(&self, start: u64, len: u32) -> &str {
        let start = start as usize;
        self.text.get(start..start + len as usize).unwrap_or("")
    }

    /// The span's `fields` as written (raw JSON object), or "".
    pub fn fields(&self, s: &Span) -> &str {
        self.text_of(s.text_start, s.fields_len)
    }

    /// Unknown top-level keys of the span's line, as a raw JSON object, kept for the trace.
    pub fn extra(&self, s: &Span) -> Option<&str> {
        let len = s.extra_len_known & LEN_MASK;
        (len > 0).then(|| self.text_of(s.text_start + s.fields_len as u64, len))
    }

    /// One field's value, parsed.
    pub fn field(&self, s: &Span, key: &str) -> Option<serde_json::Value> {
        let text = self.fields(s);
        if text.is_empty() {
            return None;
        }
        let map: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(text).ok()?;
        map.get(key).and_then(|v| serde_json::from_str(v.get()).ok())
    }

    /// Appends `span` with its raw `fields` and `extra` text (either may be
    /// ""). A text longer than a line can be is not kept (lines over
    /// [`MAX_LINE`] never reach here).
    pub fn push(&mut self, mut span: Span, fields: &str, extra: &str) {
        let fits = |t: &str| t.len() <= LEN_MASK as usize;
        let (fields, extra) = (if fits(fields) { fields } else { "" }, if fits(extra) { extra } else { "" });
        span.text_start = self.text.len() as u64;
        span.fields_len = fields.len() as u32;
        span.extra_len_known = (span.extra_len_known & !LEN_MASK) | extra.len() as u32;
        self.text.push_str(fields);
        self.text.push_str(extra);
        self.spans.push(span);
    }

    /// Drops the text (fields and extra keys) of every span whose name
    /// `keep` refuses: a reader done with most fields keeps a stream's
    /// spans at their 64 bytes, where the text is most of a line.
    pub fn keep_text(&mut self, keep: impl Fn(&str) -> bool) {
        let wanted: Vec<bool> = self.names.iter().map(|n| keep(n)).collect();
        let mut text = String::new();
        for s in &mut self.spans {
            let len = s.fields_len as usize + (s.extra_len_known & LEN_MASK) as usize;
            let start = s.text_start as usize;
            if wanted.get(s.name as usize).copied().unwrap_or(false) {
                s.text_start = text.len() as u64;
                text.push_str(self.text.get(start..start + len).unwrap_or(""));
            } else {
                s.text_start = 0;
                s.fields_len = 0;
                s.extra_len_known &= !LEN_MASK;
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_64_bytes_and_keeps_ids_and_text_apart() {
        assert_eq!(std::mem::size_of::<Span>(), 64);
        let mut st = Stream::default();
        st.push(Span::new(0, 0, 1, 2).with_ids(Some(0), None, Some(u64::MAX)), r#"{"a":1}"#, r#"{"zone":"eu"}"#);
        st.push(Span::new(0, 0, 3, 4).with_ids(None, Some(7), None), "", "");
        st.push(Span::new(0, 0, 5, 6), r#"{"b":2}"#, "");
        let [a, b, c] = [st.spans[0], st.spans[1], st.spans[2]];
        assert_eq!((a.id(), a.parent(), a.thread()), (Some(0), None, Some(u64::MAX)));
        assert_eq!((b.id(), b.parent(), b.thread()), (None, Some(7), None));
        assert_eq!((c.id(), c.parent(), c.thread()), (None, None, None));
        assert_eq!((st.fields(&a), st.extra(&a)), (r#"{"a":1}"#, Some(r#"{"zone":"eu"}"#)));
        assert_eq!((st.fields(&b), st.extra(&b)), ("", None));
        assert_eq!((st.fields(&c), st.extra(&c)), (r#"{"b":2}"#, None));
        // A text past what a line can hold is dropped, never spilling into the known bits.
        let long = "x".repeat(LEN_MASK as usize + 1);
        st.push(Span::new(0, 0, 7, 8).with_ids(Some(1), Some(2), Some(3)), "", &long);
        let d = st.spans[3];
        assert_eq!((d.id(), d.parent(), d.thread(), st.extra(&d)), (Some(1), Some(2), Some(3), None));
    }
}
