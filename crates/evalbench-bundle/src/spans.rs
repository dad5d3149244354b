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
    let mut p = Parser {
        out: SpanFile { path: path.to_path_buf(), ..Default::default() },
        index: HashMap::new(),
        names: Vec::new(),
        last: None,
        line_no: 0,
        default_process,
        default_pid,
    };
    let mut buf = Vec::with_capacity(4096);
    loop {
        // Fast path: the whole line is in the reader's buffer; parse it there.
        let avail = r.fill_buf().map_err(io(path))?;
        if avail.is_empty() {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', avail).filter(|&i| i < MAX_LINE) {
            p.line(&avail[..=i], false);
            r.consume(i + 1);
            continue;
        }
        buf.clear();
        let (n, too_long) = read_line_limited(&mut r, &mut buf, MAX_LINE).map_err(io(path))?;
        if n == 0 {
            break;
        }
        p.line(&buf, too_long);
    }
    p.out.physical_lines = p.line_no;
    Ok(p.out)
}

struct Parser {
    out: SpanFile,
    index: HashMap<(Option<String>, String, u32), usize>,
    names: Vec<HashMap<String, u32, Fnv>>,
    last: Option<usize>,
    line_no: u64,
    default_process: String,
    default_pid: u32,
}

impl Parser {
    fn bad(&mut self, reason: String) {
        self.out.malformed_total += 1;
        if self.out.malformed.len() < MAX_LISTED {
            self.out.malformed.push(Malformed { file: self.out.path.clone(), line: self.line_no, reason });
        }
    }

    fn line(&mut self, raw: &[u8], too_long: bool) {
        self.line_no += 1;
        if too_long {
            self.bad(format!("line longer than {MAX_LINE} bytes"));
            return;
        }
        let text = trim_line(raw);
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        self.out.lines += 1;
        let line: Line<'_> = match serde_json::from_slice(text) {
            Ok(l) => l,
            Err(e) => {
                self.bad(format!("not a JSON object: {e}"));
                return;
            }
        };
        if let Some(d) = line.dropped_spans {
            self.out.dropped = self.out.dropped.max(d);
            return;
        }
        let (Some(name), Some(ts_us), Some(dur_us)) = (line.name, line.ts_us, line.dur_us) else {
            self.bad("missing one of name, ts_us, dur_us".into());
            return;
        };
        if dur_us < 0 {
            self.bad(format!("negative dur_us {dur_us}"));
            return;
        }
        let pid = line.pid.unwrap_or(self.default_pid);
        // Almost every line of a file belongs to the stream of the line before.
        let same = self.last.is_some_and(|i: usize| {
            let st = &self.out.streams[i];
            st.pid == pid && st.process == line.process.as_deref().unwrap_or(&self.default_process) && st.host.as_deref() == line.host.as_deref()
        });
        let si = match self.last {
            Some(i) if same => i,
            _ => {
                let process = line.process.map(Cow::into_owned).unwrap_or_else(|| self.default_process.clone());
                let key = (line.host.map(Cow::into_owned), process, pid);
                match self.index.get(&key) {
                    Some(&i) => i,
                    None => {
                        let i = self.out.streams.len();
                        self.out.streams.push(Stream {
                            host: key.0.clone(),
                            process: key.1.clone(),
                            pid,
                            file: self.out.path.clone(),
                            ..Default::default()
                        });
                        self.names.push(HashMap::default());
                        self.index.insert(key, i);
                        i
                    }
                }
            }
        };
        self.last = Some(si);
        let stream = &mut self.out.streams[si];
        let table = &mut self.names[si];
        let mut intern = |s: &str| -> u32 {
            if let Some(&i) = table.get(s) {
                return i;
            }
            let i = stream.names.len() as u32;
            stream.names.push(s.to_string());
            table.insert(s.to_string(), i);
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
        let fields = line.fields.map(|f| stream.push_text(f.get())).unwrap_or_default();
        stream.spans.push(Span { name, target, ts_us, dur_us, id: line.id, parent: line.parent, thread: line.thread, fields, extra });
    }
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
        let (chunk, done) = match memchr::memchr(b'\n', avail) {
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

/// Files above this size are read in chunks, one per core.
const CHUNK: u64 = 16 << 20;

/// Reads bytes `start..end` of a span file; line numbers are relative to `start`.
fn read_span_range(path: &Path, start: u64, end: u64) -> Result<SpanFile, BundleError> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).map_err(io(path))?;
    f.seek(SeekFrom::Start(start)).map_err(io(path))?;
    read_spans(BufReader::with_capacity(256 * 1024, f.take(end - start)), path)
}

/// Chunk boundaries of a file, each just after a newline.
fn chunk_bounds(path: &Path, size: u64, chunk: u64) -> Result<Vec<u64>, BundleError> {
    use std::io::{Seek, SeekFrom};
    let n = size.div_ceil(chunk).max(1);
    let mut bounds = vec![0];
    let mut f = File::open(path).map_err(io(path))?;
    let mut buf = vec![0u8; 64 * 1024];
    for k in 1..n {
        let mut pos = (k * size / n).max(*bounds.last().unwrap_or(&0));
        f.seek(SeekFrom::Start(pos)).map_err(io(path))?;
        loop {
            let got = f.read(&mut buf).map_err(io(path))?;
            if got == 0 {
                pos = size;
                break;
            }
            if let Some(i) = memchr::memchr(b'\n', &buf[..got]) {
                pos += i as u64 + 1;
                break;
            }
            pos += got as u64;
        }
        if pos < size && pos > *bounds.last().unwrap_or(&0) {
            bounds.push(pos);
        }
    }
    bounds.push(size);
    Ok(bounds)
}

/// Joins the chunks of one file, in order: streams merged by identity, names
/// re-interned, malformed line numbers made absolute.
fn merge(path: &Path, parts: Vec<SpanFile>) -> SpanFile {
    let mut out = SpanFile { path: path.to_path_buf(), ..Default::default() };
    let mut index: HashMap<(Option<String>, String, u32), usize> = HashMap::new();
    let mut names: Vec<HashMap<String, u32, Fnv>> = Vec::new();
    let mut base = 0u64;
    for part in parts {
        out.lines += part.lines;
        out.malformed_total += part.malformed_total;
        out.dropped = out.dropped.max(part.dropped);
        for mut m in part.malformed {
            if out.malformed.len() < MAX_LISTED {
                m.line += base;
                out.malformed.push(m);
            }
        }
        base += part.physical_lines;
        for st in part.streams {
            let key = (st.host.clone(), st.process.clone(), st.pid);
            let si = *index.entry(key).or_insert_with(|| {
                out.streams.push(Stream {
                    host: st.host.clone(),
                    process: st.process.clone(),
                    pid: st.pid,
                    file: st.file.clone(),
                    ..Default::default()
                });
                names.push(HashMap::default());
                out.streams.len() - 1
            });
            let target = &mut out.streams[si];
            let remap: Vec<u32> = st
                .names
                .iter()
                .map(|n| {
                    *names[si].entry(n.clone()).or_insert_with(|| {
                        target.names.push(n.clone());
                        target.names.len() as u32 - 1
                    })
                })
                .collect();
            let base = target.text.len() as u64;
            target.text.push_str(&st.text);
            target.spans.reserve(st.spans.len());
            for mut s in st.spans {
                s.name = remap[s.name as usize];
                s.target = remap[s.target as usize];
                s.fields.start += base;
                target.spans.push(s);
            }
        }
    }
    out.physical_lines = base;
    out
}

/// Reads every `*.jsonl` file of a directory, in name order. Files, and
/// chunks of large files, are parsed on every core.
pub fn read_trace_dir(dir: &Path) -> Result<Vec<SpanFile>, BundleError> {
    read_trace_dir_chunked(dir, CHUNK)
}

/// [`read_trace_dir`] with a chosen chunk size (tests use small ones).
#[doc(hidden)]
pub fn read_trace_dir_chunked(dir: &Path, chunk: u64) -> Result<Vec<SpanFile>, BundleError> {
    let chunk = chunk.max(1);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    paths.sort();
    let mut units: Vec<(usize, u64, u64)> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let size = std::fs::metadata(p).map_err(io(p))?.len();
        let bounds = if size > chunk { chunk_bounds(p, size, chunk)? } else { vec![0, size] };
        units.extend(bounds.windows(2).map(|w| (i, w[0], w[1])));
    }
    // Biggest first, so one large chunk does not start last.
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| std::cmp::Reverse(units[u].2 - units[u].1));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(units.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<Result<SpanFile, BundleError>>> = (0..units.len()).map(|_| None).collect();
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&u) = order.get(k) else { break };
                let (i, start, end) = units[u];
                let r = read_span_range(&paths[i], start, end);
                slots.lock().unwrap_or_else(|e| e.into_inner())[u] = Some(r);
            });
        }
    });
    let mut per_file: Vec<Vec<SpanFile>> = (0..paths.len()).map(|_| Vec::new()).collect();
    for (u, r) in results.into_iter().enumerate() {
        per_file[units[u].0].push(r.expect("every chunk was read")?);
    }
    Ok(per_file
        .into_iter()
        .zip(&paths)
        .map(|(parts, p)| if parts.len() == 1 { parts.into_iter().next().unwrap_or_default() } else { merge(p, parts) })
        .collect())
}

#[doc(hidden)]
pub fn read_spans_from_bytes(bytes: &[u8], name: &str) -> Result<SpanFile, BundleError> {
    read_spans(BufReader::new(bytes), Path::new(name))
}

/// FNV-1a: span names are short and trusted to be few; SipHash's DoS
/// resistance costs more than it buys here.
#[derive(Default, Clone, Copy)]
pub struct Fnv;

pub struct FnvHasher(u64);

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x100000001b3);
        }
    }
}

impl std::hash::BuildHasher for Fnv {
    type Hasher = FnvHasher;
    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xcbf29ce484222325)
    }
}
