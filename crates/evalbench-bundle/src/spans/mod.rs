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
pub use parallel::{read_trace_dir, read_trace_dir_chunked};
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

/// One closed span. Names and targets are indices into [`Stream::names`].
#[derive(Debug, Clone)]
pub struct Span {
    pub name: u32,
    pub target: u32,
    pub ts_us: i64,
    pub dur_us: i64,
    pub id: Option<u64>,
    pub parent: Option<u64>,
    pub thread: Option<u64>,
    /// Where the `fields` object, as written (raw JSON), lies in [`Stream::text`].
    pub fields: TextRef,
    /// Unknown top-level keys, as a raw JSON object, kept for the trace.
    pub extra: Option<Box<str>>,
}

/// A slice of a stream's text arena: one allocation per stream, not per span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextRef {
    pub start: u64,
    pub len: u32,
}

impl Span {
    pub fn end_us(&self) -> i64 {
        self.ts_us.saturating_add(self.dur_us)
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
    /// Every span's raw `fields` text, end to end.
    pub text: String,
}

impl Stream {
    /// The span's `fields` as written (raw JSON object), or "".
    pub fn fields(&self, s: &Span) -> &str {
        let start = s.fields.start as usize;
        self.text.get(start..start + s.fields.len as usize).unwrap_or("")
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

    /// Appends raw fields text to the arena.
    pub fn push_text(&mut self, raw: &str) -> TextRef {
        if raw.len() > u32::MAX as usize {
            return TextRef::default();
        }
        let r = TextRef { start: self.text.len() as u64, len: raw.len() as u32 };
        self.text.push_str(raw);
        r
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
