//! The line parser: one span per JSON line, names interned per stream,
//! a borrowed parse of the known keys.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{KeepText, Malformed, Span, SpanFile, Stream, MAX_LINE, MAX_LISTED};
use crate::error::{io, BundleError};
use crate::Fnv;

/// `server-812.jsonl` (Gradient's) or `server.812.jsonl` (evalbench's
/// older) → ("server", 812): the defaults for lines without them.
fn file_identity(path: &Path) -> (String, u32) {
    crate::contract::span_file_identity(path.file_name().and_then(|s| s.to_str()).unwrap_or(""))
}

pub fn read_span_file(path: &Path) -> Result<SpanFile, BundleError> {
    let f = File::open(path).map_err(io(path))?;
    read_spans(BufReader::with_capacity(256 * 1024, f), path)
}

/// Reads span lines from any reader; `path` names them in messages.
pub fn read_spans(r: impl BufRead, path: &Path) -> Result<SpanFile, BundleError> {
    read_spans_at(r, path, 0, None)
}

/// Which spans keep their fields only as a place in the file: those whose
/// name the first accepts, unless the second accepts their fields (and
/// never those with extra keys).
pub type InFile<'a> = (KeepText<'a>, KeepText<'a>);

/// [`read_spans`] of the bytes of `path` from offset `at`; the spans that
/// `in_file` names keep their fields as their place in the file
/// ([`Stream::push_in_file`]).
pub(super) fn read_spans_at(
    mut r: impl BufRead,
    path: &Path,
    at: u64,
    in_file: Option<InFile<'_>>,
) -> Result<SpanFile, BundleError> {
    let (default_process, default_pid) = file_identity(path);
    let mut p = Parser {
        pos: at,
        in_file,
        out: SpanFile { path: path.to_path_buf(), ..Default::default() },
        index: HashMap::new(),
        names: Vec::new(),
        last: None,
        line_no: 0,
        default_process,
        default_pid,
        extra: String::new(),
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
            p.pos += i as u64 + 1;
            continue;
        }
        buf.clear();
        let (n, too_long) = read_line_limited(&mut r, &mut buf, MAX_LINE).map_err(io(path))?;
        if n == 0 {
            break;
        }
        p.line(&buf, too_long);
        p.pos += n as u64;
    }
    p.out.physical_lines = p.line_no;
    Ok(p.out)
}

struct Parser<'k> {
    /// Where in the file the current line starts.
    pos: u64,
    /// Which spans keep their fields as a place in the file.
    in_file: Option<InFile<'k>>,
    out: SpanFile,
    index: HashMap<(Option<String>, String, u32), usize>,
    names: Vec<Names>,
    last: Option<usize>,
    line_no: u64,
    default_process: String,
    default_pid: u32,
    /// The extra keys of the current line, as a JSON object.
    extra: String,
}

/// Per stream: name to index, the last name and target interned, and per
/// name whether the parser's `in_file` accepts it.
type Names = (HashMap<String, u32, Fnv>, [u32; 2], Vec<bool>);

impl Parser<'_> {
    fn bad(&mut self, reason: String) {
        self.out.malformed_total += 1;
        if self.out.malformed.len() < MAX_LISTED {
            self.out.malformed.push(Malformed { file: self.out.path.clone(), line: self.line_no, reason });
        }
    }

    /// The index of the line's stream, made on its first line.
    fn stream_of(&mut self, host: Option<Cow<'_, str>>, process: Option<Cow<'_, str>>, pid: u32) -> usize {
        // Almost every line of a file belongs to the stream of the line before.
        let same = self.last.is_some_and(|i: usize| {
            let st = &self.out.streams[i];
            st.pid == pid
                && st.process == process.as_deref().unwrap_or(&self.default_process)
                && st.host.as_deref() == host.as_deref()
        });
        match self.last {
            Some(i) if same => i,
            _ => {
                let process = process.map(Cow::into_owned).unwrap_or_else(|| self.default_process.clone());
                let key = (host.map(Cow::into_owned), process, pid);
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
                        self.names.push((HashMap::default(), [u32::MAX; 2], Vec::new()));
                        self.index.insert(key, i);
                        i
                    }
                }
            }
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
        let parsed = match super::fast::line(text) {
            Some(l) => Ok(l),
            None => serde_json::from_slice::<Line<'_>>(text),
        };
        let mut line = match parsed {
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
        let si = self.stream_of(line.host.take(), line.process.take(), pid);
        self.last = Some(si);
        let stream = &mut self.out.streams[si];
        let (table, recent, located) = &mut self.names[si];
        // Runs of one name are common (a loop's spans close one after another):
        // the last name or target seen is compared before the table is hashed.
        let mut intern = |s: &str, last: &mut u32| -> u32 {
            if stream.names.get(*last as usize).is_some_and(|n| n == s) {
                return *last;
            }
            let i = match table.get(s) {
                Some(&i) => i,
                None => {
                    let i = stream.names.len() as u32;
                    stream.names.push(s.to_string());
                    table.insert(s.to_string(), i);
                    i
                }
            };
            *last = i;
            i
        };
        let name = intern(&name, &mut recent[0]);
        let target = intern(line.target.as_deref().unwrap_or(""), &mut recent[1]);
        let extra = &mut self.extra;
        join_extra(extra, &line.extra);
        let span = stream.with_ids(Span::new(name, target, ts_us, dur_us), line.id, line.parent, line.thread);
        let fields = line.fields.unwrap_or("");
        // The fields' place in the file: they are a slice of the line as read.
        let offset =
            (fields.as_ptr() as usize).checked_sub(raw.as_ptr() as usize).filter(|&o| o + fields.len() <= raw.len());
        if let (Some((by_name, unless)), Some(o), true) = (self.in_file, offset, extra.is_empty()) {
            while located.len() < stream.names.len() {
                located.push(by_name(&stream.names[located.len()]));
            }
            if located[name as usize] && !unless(fields) {
                stream.push_in_file(span, self.pos + o as u64, fields.len());
                return;
            }
        }
        stream.push(span, fields, extra);
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

/// A span's fields other than ours, as one JSON object (empty for none).
fn join_extra(extra: &mut String, fields: &[(Cow<'_, str>, &str)]) {
    extra.clear();
    if !fields.is_empty() {
        extra.push('{');
        for (i, (k, v)) in fields.iter().enumerate() {
            if i > 0 {
                extra.push(',');
            }
            extra.push_str(&serde_json::to_string(k.as_ref()).unwrap_or_default());
            extra.push(':');
            extra.push_str(v);
        }
        extra.push('}');
    }
}

/// One line as written, before it is checked.
#[derive(Default, Debug, PartialEq)]
pub(super) struct Line<'a> {
    pub name: Option<Cow<'a, str>>,
    pub target: Option<Cow<'a, str>>,
    pub process: Option<Cow<'a, str>>,
    pub host: Option<Cow<'a, str>>,
    pub ts_us: Option<i64>,
    pub dur_us: Option<i64>,
    pub pid: Option<u32>,
    pub id: Option<u64>,
    pub parent: Option<u64>,
    pub thread: Option<u64>,
    /// The `fields` value's text, as written.
    pub fields: Option<&'a str>,
    pub dropped_spans: Option<u64>,
    pub extra: Vec<(Cow<'a, str>, &'a str)>,
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
                        "fields" => l.fields = Some(m.next_value::<&'de RawValue>()?.get()),
                        "dropped_spans" => l.dropped_spans = Some(m.next_value()?),
                        _ => l.extra.push((k, m.next_value::<&'de RawValue>()?.get())),
                    }
                }
                Ok(l)
            }
        }
        d.deserialize_map(V)
    }
}

#[doc(hidden)]
pub fn read_spans_from_bytes(bytes: &[u8], name: &str) -> Result<SpanFile, BundleError> {
    read_spans(BufReader::new(bytes), Path::new(name))
}
