//! Reading span files (`trace/*.jsonl`, DESIGN.md "Span format").
//!
//! Tolerant by contract: unknown keys are kept (inside `fields` as they are,
//! at the top level in [`Span::extra`]); a malformed line is counted and
//! listed with its file and line number, never fatal; a line longer than
//! [`MAX_LINE`] is skipped without reading it into memory whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{io, BundleError};

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
    /// The `fields` object as it was written (raw JSON), or empty.
    pub fields: Box<str>,
    /// Unknown top-level keys, as a raw JSON object, kept for the trace.
    pub extra: Option<Box<str>>,
}

impl Span {
    pub fn end_us(&self) -> i64 {
        self.ts_us.saturating_add(self.dur_us)
    }

    /// One field's raw JSON value, found without parsing the others.
    pub fn field(&self, key: &str) -> Option<serde_json::Value> {
        if self.fields.is_empty() {
            return None;
        }
        let map: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(&self.fields).ok()?;
        map.get(key).and_then(|v| serde_json::from_str(v.get()).ok())
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
}

impl Stream {
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
}

/// `server.812.jsonl` → ("server", 812): the defaults for lines without them.
fn file_identity(path: &Path) -> (String, u32) {
    let stem = path.file_name().and_then(|s| s.to_str()).unwrap_or("").trim_end_matches(".jsonl");
    match stem.rsplit_once('.') {
        Some((p, pid)) => (p.to_string(), pid.parse().unwrap_or(0)),
        None => (stem.to_string(), 0),
    }
}

pub fn read_span_file(path: &Path) -> Result<SpanFile, BundleError> {
    let f = File::open(path).map_err(io(path))?;
    read_spans(BufReader::with_capacity(256 * 1024, f), path)
}

/// Reads span lines from any reader; `path` names them in messages.
pub fn read_spans(mut r: impl BufRead, path: &Path) -> Result<SpanFile, BundleError> {
    let (default_process, default_pid) = file_identity(path);
    let mut out = SpanFile { path: path.to_path_buf(), ..Default::default() };
    let mut index: HashMap<(Option<String>, String, u32), usize> = HashMap::new();
    let mut names: Vec<HashMap<String, u32>> = Vec::new();
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let (n, too_long) = read_line_limited(&mut r, &mut buf, MAX_LINE).map_err(io(path))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let mut bad = |reason: String| {
            out.malformed_total += 1;
            if out.malformed.len() < MAX_LISTED {
                out.malformed.push(Malformed { file: path.to_path_buf(), line: line_no, reason });
            }
        };
        if too_long {
            bad(format!("line longer than {MAX_LINE} bytes"));
            continue;
        }
        let text = trim_line(&buf);
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        out.lines += 1;
        let line: Line<'_> = match serde_json::from_slice(text) {
            Ok(l) => l,
            Err(e) => {
                bad(format!("not a JSON object: {e}"));
                continue;
            }
        };
        if let Some(d) = line.dropped_spans {
            out.dropped = out.dropped.max(d);
            continue;
        }
        let (Some(name), Some(ts_us), Some(dur_us)) = (line.name, line.ts_us, line.dur_us) else {
            bad("missing one of name, ts_us, dur_us".into());
            continue;
        };
        if dur_us < 0 {
            bad(format!("negative dur_us {dur_us}"));
            continue;
        }
        let process = line.process.map(Cow::into_owned).unwrap_or_else(|| default_process.clone());
        let pid = line.pid.unwrap_or(default_pid);
        let host = line.host.map(Cow::into_owned);
        let key = (host, process, pid);
        let si = match index.get(&key) {
            Some(&i) => i,
            None => {
                let i = out.streams.len();
                out.streams.push(Stream {
                    host: key.0.clone(),
                    process: key.1.clone(),
                    pid,
                    file: path.to_path_buf(),
                    ..Default::default()
                });
                names.push(HashMap::new());
                index.insert(key, i);
                i
            }
        };
        let stream = &mut out.streams[si];
        let mut intern = |s: &str| -> u32 {
            if let Some(&i) = names[si].get(s) {
                return i;
            }
            let i = stream.names.len() as u32;
            stream.names.push(s.to_string());
            names[si].insert(s.to_string(), i);
            i
        };
        let name = intern(&name);
        let target = intern(line.target.as_deref().unwrap_or(""));
        let extra = if line.extra.is_empty() {
            None
        } else {
            let mut s = String::from("{");
            for (i, (k, v)) in line.extra.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&serde_json::to_string(k.as_ref()).unwrap_or_default());
                s.push(':');
                s.push_str(v.get());
            }
            s.push('}');
            Some(s.into_boxed_str())
        };
        stream.spans.push(Span {
            name,
            target,
            ts_us,
            dur_us,
            id: line.id,
            parent: line.parent,
            thread: line.thread,
            fields: line.fields.map(|f| Box::from(f.get())).unwrap_or_default(),
            extra,
        });
    }
    Ok(out)
}

fn trim_line(b: &[u8]) -> &[u8] {
    let mut e = b.len();
    while e > 0 && (b[e - 1] == b'\n' || b[e - 1] == b'\r') {
        e -= 1;
    }
    &b[..e]
}

/// Reads one line into `buf`, keeping at most `limit` bytes; the rest of an
/// over-long line is consumed and thrown away. Returns (bytes consumed, too long).
fn read_line_limited(r: &mut impl BufRead, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut too_long = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok((consumed, too_long));
        }
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..=i], true),
            None => (avail, false),
        };
        let n = chunk.len();
        if !too_long {
            if buf.len() + n > limit {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        r.consume(n);
        consumed += n;
        if done {
            return Ok((consumed, too_long));
        }
    }
}

/// A string that borrows from the input when it has no escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// One line as written, before it is checked.
#[derive(Default)]
struct Line<'a> {
    name: Option<Cow<'a, str>>,
    target: Option<Cow<'a, str>>,
    process: Option<Cow<'a, str>>,
    host: Option<Cow<'a, str>>,
    ts_us: Option<i64>,
    dur_us: Option<i64>,
    pid: Option<u32>,
    id: Option<u64>,
    parent: Option<u64>,
    thread: Option<u64>,
    fields: Option<&'a RawValue>,
    dropped_spans: Option<u64>,
    extra: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'de> Deserialize<'de> for Line<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Line<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a span object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut l = Line::default();
                while let Some(Str(k)) = m.next_key::<Str<'de>>()? {
                    match k.as_ref() {
                        "name" => l.name = Some(m.next_value::<Str<'de>>()?.0),
                        "target" => l.target = Some(m.next_value::<Str<'de>>()?.0),
                        "process" => l.process = Some(m.next_value::<Str<'de>>()?.0),
                        "host" => l.host = m.next_value::<Option<Str<'de>>>()?.map(|s| s.0),
                        "ts_us" => l.ts_us = Some(m.next_value()?),
                        "dur_us" => l.dur_us = Some(m.next_value()?),
                        "pid" => l.pid = Some(m.next_value()?),
                        "id" => l.id = m.next_value()?,
                        "parent" => l.parent = m.next_value()?,
                        "thread" => l.thread = m.next_value()?,
                        "fields" => l.fields = Some(m.next_value()?),
                        "dropped_spans" => l.dropped_spans = Some(m.next_value()?),
                        _ => l.extra.push((k, m.next_value()?)),
                    }
                }
                Ok(l)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads every `*.jsonl` file of a directory, in name order.
pub fn read_trace_dir(dir: &Path) -> Result<Vec<SpanFile>, BundleError> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    paths.sort();
    // Files are independent: read them on every core, keep their order.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(paths.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<SpanFile, BundleError>>> = (0..paths.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = paths.get(i) else { break };
                let r = read_span_file(p);
                slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results.into_iter().map(|r| r.expect("every file was read")).collect()
}

#[doc(hidden)]
pub fn read_spans_from_bytes(bytes: &[u8], name: &str) -> Result<SpanFile, BundleError> {
    read_spans(BufReader::new(bytes.chain(&b""[..])), Path::new(name))
}
