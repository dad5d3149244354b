//! `<run>/trace.json`: Chrome Trace Event JSON for ui.perfetto.dev.
//!
//! One Perfetto process per traced process (server first, then worker, then
//! eval), each split into tracks that nest, as `evalbench_analyze::tracks`
//! laid them out.
//! Timestamps are on the server clock: each stream is moved by its host's
//! offset.
//!
//! A million spans make a quarter-gigabyte file, so the events are cut into
//! segments formatted on every core, and this thread writes the segments in
//! order as they come (on one core, it formats them too). Memory stays at
//! the spans plus a few segments.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use evalbench_analyze::path::CriticalPath;
use evalbench_analyze::{Alignment, Layout, TrackOf, Tracks};
use evalbench_bundle::Stream;

/// Spans per formatting segment: about a megabyte of JSON, small enough to
/// be still in cache when this thread copies it into the file.
const SEGMENT: usize = 4 * 1024;

/// What a segment formatter needs to know about its stream.
struct Lane<'a> {
    stream: &'a Stream,
    pid: u64,
    offset: i64,
    tracks: Tracks,
    names: Vec<Vec<u8>>,
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Writes `path` atomically (temporary file, then rename); returns the number of span events.
pub fn write_trace(
    path: &Path,
    pass: &str,
    streams: &[Stream],
    layout: Layout,
    alignment: &Alignment,
    critical: Option<&CriticalPath>,
) -> io::Result<u64> {
    write_trace_spans(path, pass, streams, layout, alignment)?.finish(critical)
}

/// A trace.json with its spans written and its critical path not yet:
/// the path can then be found after the spans are given up (see
/// `evalbench_analyze::path::critical_path`). Nothing is at `path`
/// until [`PendingTrace::finish`]; dropped unfinished, the temporary file goes.
pub struct PendingTrace {
    tmp: tempfile::NamedTempFile,
    path: std::path::PathBuf,
    /// Per stream (by its index in the pass): its Perfetto pid and each span's track.
    placed: HashMap<usize, (u64, TrackOf)>,
    events: u64,
}

impl PendingTrace {
    /// Appends the critical path (if any) and puts the file at its path;
    /// returns the number of span events.
    /// Where the trace will be once finished.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn finish(self, critical: Option<&CriticalPath>) -> io::Result<u64> {
        let mut file = self.tmp.as_file();
        if let Some(p) = critical {
            critical_events(&mut file, p, &self.placed)?;
        }
        file.write_all(b"\n]}\n")?;
        evalbench_bundle::persist(self.tmp, &self.path)?;
        Ok(self.events)
    }
}

/// The span events of trace.json, in a temporary file beside `path`.
pub fn write_trace_spans(
    path: &Path,
    pass: &str,
    streams: &[Stream],
    layout: Layout,
    alignment: &Alignment,
) -> io::Result<PendingTrace> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // Never written through a link: it points at someone else's directory.
    evalbench_bundle::manifest::refuse_link(dir).map_err(io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    let tmp = evalbench_bundle::readable_temp(dir)?;
    let mut file = tmp.as_file();

    let Layout { order, tracks } = layout;
    let lanes = lanes(streams, &order, tracks, alignment);

    let mut head = Vec::new();
    head.extend_from_slice(b"{\"displayTimeUnit\":\"ms\",\"otherData\":{\"pass\":");
    head.extend_from_slice(&escaped(pass));
    head.extend_from_slice(b",\"clock\":\"server\",\"alignment\":");
    serde_json::to_writer(&mut head, alignment)?;
    head.extend_from_slice(b"},\"traceEvents\":[\n");
    file.write_all(&head)?;

    let segments = segments(&lanes);
    if threads() == 1 {
        // One core: format and write in turn. A formatter thread would only
        // add a channel's hand-offs, and make the work depend on when the
        // writer returns its buffers (bench/self.sh counts it exactly).
        let mut buf = Vec::new();
        for (k, &(l, a, b)) in segments.iter().enumerate() {
            buf.clear();
            format_segment(&mut buf, &lanes[l], a, b, k == 0)?;
            file.write_all(&buf)?;
        }
        return Ok(pending_trace(tmp, path, &order, lanes));
    }
    format_on_every_core(&mut file, &lanes, &segments)?;
    Ok(pending_trace(tmp, path, &order, lanes))
}

/// Segments: (lane, first span, end span), in output order.
fn segments(lanes: &[Lane<'_>]) -> Vec<(usize, usize, usize)> {
    let mut segments: Vec<(usize, usize, usize)> = Vec::new();
    for (l, lane) in lanes.iter().enumerate() {
        let n = lane.stream.spans.len();
        let mut start = 0;
        loop {
            let end = (start + SEGMENT).min(n);
            segments.push((l, start, end));
            if end >= n {
                break;
            }
            start = end;
        }
    }
    segments
}

/// The segments formatted on every core and written in order as they come.
fn format_on_every_core(
    file: &mut impl Write,
    lanes: &[Lane<'_>],
    segments: &[(usize, usize, usize)],
) -> io::Result<()> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, io::Result<Vec<u8>>)>(threads() * 2);
    // Written buffers go back to the formatters: fresh ones cost a page fault
    // per page and a cache miss per line.
    let spare: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let result = std::thread::scope(|s| -> io::Result<()> {
        for _ in 0..threads() {
            let tx = tx.clone();
            let (next, failed, spare) = (&next, &failed, &spare);
            s.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if failed.load(Ordering::Relaxed) {
                    break;
                }
                let Some(&(l, a, b)) = segments.get(k) else { break };
                let mut buf = spare.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
                buf.clear();
                let done = format_segment(&mut buf, &lanes[l], a, b, k == 0).map(|()| buf);
                if tx.send((k, done)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        // Write in order; hold early arrivals until their turn.
        let mut pending: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut want = 0;
        for (k, buf) in rx.iter() {
            let buf = buf.inspect_err(|_| failed.store(true, Ordering::Relaxed))?;
            pending.insert(k, buf);
            while let Some(buf) = pending.remove(&want) {
                if let Err(e) = file.write_all(&buf) {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                spare.lock().unwrap_or_else(|e| e.into_inner()).push(buf);
                want += 1;
            }
        }
        Ok(())
    });
    result
}

/// The trace whose span events are written: where each stream's spans went.
fn pending_trace(tmp: tempfile::NamedTempFile, path: &Path, order: &[usize], lanes: Vec<Lane<'_>>) -> PendingTrace {
    let events = lanes.iter().map(|lane| lane.stream.spans.len() as u64).sum();
    let placed = order.iter().zip(lanes).map(|(&i, lane)| (i, (lane.pid, lane.tracks.of_span))).collect();
    PendingTrace { tmp, path: path.to_path_buf(), placed, events }
}

/// The critical path as a process of its own (one slice per stretch, named
/// for its step), and a flow arrow wherever the path crosses from one
/// process's span to another's (Perfetto draws the legacy `s`/`f` pairs).
/// Written out a megabyte at a time: a path of 2M stretches is 300 MB of
/// events.
fn critical_events(file: &mut impl Write, p: &CriticalPath, placed: &HashMap<usize, (u64, TrackOf)>) -> io::Result<()> {
    // Out to the file once a megabyte is formatted.
    fn spill(file: &mut impl Write, buf: &mut Vec<u8>) -> io::Result<()> {
        if buf.len() >= FLUSH {
            file.write_all(buf)?;
            buf.clear();
        }
        Ok(())
    }
    const FLUSH: usize = 1 << 20;
    let mut buf = Vec::with_capacity(FLUSH + 4096);
    let buf = &mut buf;
    // After every stream's lane (one per stream).
    let pid = placed.len() as i64 + 1;
    buf.extend_from_slice(b",\n");
    meta(buf, "process_name", pid, 0, b"name", &escaped("critical path (what the evaluated time waited on)"));
    buf.extend_from_slice(b",\n");
    meta(buf, "process_sort_index", pid, 0, b"sort_index", b"-1");
    // A label is shared by every stretch of its step: escaped once, by
    // where it is (a path has a few dozen labels and a million stretches).
    let mut names: HashMap<*const evalbench_analyze::path::Label, Vec<u8>> = HashMap::new();
    for s in &p.segments {
        let name = names.entry(std::sync::Arc::as_ptr(s.label())).or_insert_with(|| {
            escaped(&match s.process() {
                Some(proc_) => format!("{proc_} {}", s.name()),
                None => format!("wait: {}", s.name()),
            })
        });
        let _ = write!(buf, ",\n{{\"ph\":\"X\",\"name\":");
        buf.extend_from_slice(name);
        let _ = write!(
            buf,
            ",\"cat\":\"critical_path\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":1}}",
            s.from_us,
            s.to_us.saturating_sub(s.from_us)
        );
        spill(file, buf)?;
    }
    // Where a span is: (pid, tid) of its stream's lane and its track.
    let at = |s: &evalbench_analyze::path::Segment| -> Option<(i64, i64)> {
        let (st, k) = s.at()?;
        let (pid, of_span) = placed.get(&st.index())?;
        Some((*pid as i64, of_span.get(k as usize)? as i64 + 1))
    };
    // Each pair of consecutive stretches that are spans, numbered as the
    // pairs come (without a vector of them: 8 bytes a stretch).
    let mut spans = p.segments.iter().filter(|s| s.at().is_some());
    let mut prev = spans.next();
    for (id, b) in spans.enumerate() {
        let Some(a) = prev.replace(b) else { continue };
        let w = [a, b];
        let (Some((pa, ta)), Some((pb, tb))) = (at(w[0]), at(w[1])) else { continue };
        if pa == pb {
            continue;
        }
        // Bound inside each slice: the sender's last microsecond, the receiver's first.
        let (ts_a, ts_b) =
            (w[0].to_us.saturating_sub(1).max(w[0].from_us), w[1].from_us.saturating_add(1).min(w[1].to_us));
        let _ = write!(
            buf,
            ",\n{{\"ph\":\"s\",\"id\":{id},\"name\":\"critical \
                path\",\"cat\":\"critical_path\",\"ts\":{ts_a},\"pid\":{pa},\"tid\":{ta}}}"
        );
        let _ = write!(
            buf,
            ",\n{{\"ph\":\"f\",\"bp\":\"e\",\"id\":{id},\"name\":\"critical \
                path\",\"cat\":\"critical_path\",\"ts\":{ts_b},\"pid\":{pb},\"tid\":{tb}}}"
        );
        spill(file, buf)?;
    }
    file.write_all(buf)
}

/// Each stream in drawing order, with what its segments are formatted with.
fn lanes<'a>(streams: &'a [Stream], order: &[usize], tracks: Vec<Tracks>, alignment: &Alignment) -> Vec<Lane<'a>> {
    order
        .iter()
        .zip(tracks)
        .enumerate()
        .map(|(rank, (&i, tracks))| Lane {
            stream: &streams[i],
            // Synthetic pids: two hosts may reuse a pid number.
            pid: rank as u64 + 1,
            offset: alignment.offset_for(&streams[i]),
            tracks,
            // Names are few: escape each once, not once per span.
            names: streams[i].names.iter().map(|n| escaped(n)).collect(),
        })
        .collect()
}

fn format_segment(buf: &mut Vec<u8>, lane: &Lane<'_>, a: usize, b: usize, first_of_file: bool) -> io::Result<()> {
    let st = lane.stream;
    let mut placed = crate::placed_fields::PlacedFields::new(st);
    buf.reserve((b - a) * 240 + 1024);
    let mut first = first_of_file;
    let pid = lane.pid as i64;
    if a == 0 {
        process_meta(buf, lane, &mut first);
    }
    for k in a..b {
        let s = &st.spans[k];
        sep(buf, &mut first);
        buf.extend_from_slice(b"{\"ph\":\"X\",\"name\":");
        buf.extend_from_slice(&lane.names[s.name as usize]);
        buf.extend_from_slice(b",\"cat\":");
        buf.extend_from_slice(&lane.names[s.target as usize]);
        buf.extend_from_slice(b",\"ts\":");
        push_int(buf, s.ts_us + lane.offset);
        buf.extend_from_slice(b",\"dur\":");
        push_int(buf, s.dur_us);
        buf.extend_from_slice(b",\"pid\":");
        push_int(buf, pid);
        buf.extend_from_slice(b",\"tid\":");
        push_int(buf, lane.tracks.of_span.get(k).expect("a track for every span") as i64 + 1);
        let fields = match st.fields_in_file(s) {
            Some((at, len)) => placed.read(&st.spans[k..b], at, len)?,
            None => st.fields(s),
        };
        span_args(buf, st, s, fields);
    }
    Ok(())
}

/// Events apart: a comma before every one but the file's first.
fn sep(buf: &mut Vec<u8>, first: &mut bool) {
    if *first {
        *first = false;
    } else {
        buf.extend_from_slice(b",\n");
    }
}

/// The process's name and place, and its tracks' (before its first span).
fn process_meta(buf: &mut Vec<u8>, lane: &Lane<'_>, first: &mut bool) {
    let (st, pid) = (lane.stream, lane.pid as i64);
    let label = match &st.host {
        Some(h) => format!("{} {} (pid {})", st.process, h, st.pid),
        None => format!("{} (pid {})", st.process, st.pid),
    };
    sep(buf, first);
    meta(buf, "process_name", pid, 0, b"name", &escaped(&label));
    sep(buf, first);
    meta(buf, "process_sort_index", pid, 0, b"sort_index", (pid - 1).to_string().as_bytes());
    for (t, name) in lane.tracks.names.iter().enumerate() {
        sep(buf, first);
        meta(buf, "thread_name", pid, t as i64 + 1, b"name", &escaped(name));
        sep(buf, first);
        meta(buf, "thread_sort_index", pid, t as i64 + 1, b"sort_index", t.to_string().as_bytes());
    }
}

/// A span's `args` and the event's end: our ids, then the span's own
/// fields (a non-object stays whole under "fields"), then its extra ones.
#[inline]
fn span_args(buf: &mut Vec<u8>, st: &Stream, s: &evalbench_bundle::Span, fields: &str) {
    buf.extend_from_slice(b",\"args\":{");
    let mut any = false;
    let mut key = |buf: &mut Vec<u8>, k: &[u8]| {
        if any {
            buf.push(b',');
        }
        any = true;
        buf.extend_from_slice(k);
    };
    if let Some(id) = st.id(s) {
        key(buf, b"\"span.id\":");
        push_u64(buf, id);
    }
    if let Some(p) = st.parent(s) {
        key(buf, b"\"span.parent\":");
        push_u64(buf, p);
    }
    if let Some(t) = st.thread(s) {
        key(buf, b"\"span.thread\":");
        push_u64(buf, t);
    }
    match object_body(fields) {
        Some(inner) if inner.trim().is_empty() => {}
        Some(inner) => key(buf, inner.as_bytes()),
        None if fields.is_empty() => {}
        None => {
            key(buf, b"\"fields\":");
            buf.extend_from_slice(fields.as_bytes());
        }
    }
    if let Some(extra) = st.extra(s) {
        key(buf, b"\"span.extra\":");
        buf.extend_from_slice(extra.as_bytes());
    }
    buf.extend_from_slice(b"}}");
}

fn meta(buf: &mut Vec<u8>, name: &str, pid: i64, tid: i64, key: &[u8], value: &[u8]) {
    buf.extend_from_slice(b"{\"ph\":\"M\",\"name\":\"");
    buf.extend_from_slice(name.as_bytes());
    buf.extend_from_slice(b"\",\"pid\":");
    push_int(buf, pid);
    buf.extend_from_slice(b",\"tid\":");
    push_int(buf, tid);
    buf.extend_from_slice(b",\"args\":{\"");
    buf.extend_from_slice(key);
    buf.extend_from_slice(b"\":");
    buf.extend_from_slice(value);
    buf.extend_from_slice(b"}}");
}

/// Decimal digits of an integer, without `fmt` machinery.
/// `v` in decimal, appended: two digits a step, written in place (digits
/// built in a scratch array and copied out were read back before their
/// stores landed, and there are four numbers an event).
fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    const PAIRS: &[u8; 200] =
        b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
          5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    let n = v.checked_ilog10().map_or(1, |l| l as usize + 1);
    let len = out.len();
    out.resize(len + n, b'0');
    let digits = &mut out[len..];
    let mut i = n;
    while i >= 2 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        digits[i - 2] = PAIRS[pair];
        digits[i - 1] = PAIRS[pair + 1];
        i -= 2;
    }
    if i == 1 {
        digits[0] = b'0' + v as u8;
    }
}

fn push_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, n.unsigned_abs());
}

fn escaped(s: &str) -> Vec<u8> {
    serde_json::to_vec(s).unwrap_or_else(|_| b"\"\"".to_vec())
}

/// The inside of a raw JSON object, so its keys can join ours.
fn object_body(raw: &str) -> Option<&str> {
    let t = raw.trim();
    t.strip_prefix('{')?.strip_suffix('}')
}

#[cfg(test)]
mod tests {
    use super::{push_int, push_u64};

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        let mut values = vec![0, 1, 9, 10, 99, 100, 101, 999, 1000, u64::MAX, u64::MAX - 1, i64::MAX as u64];
        values.extend((0..20).map(|k| 10u64.pow(k)));
        values.extend((1..20).map(|k| 10u64.pow(k) - 1));
        let mut x = 0x853c49e6748fea9bu64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        let mut out = b"head".to_vec();
        let mut expected = b"head".to_vec();
        for &v in &values {
            push_u64(&mut out, v);
            out.push(b',');
            push_int(&mut out, (v as i64).wrapping_neg());
            out.push(b' ');
            expected.extend_from_slice(format!("{v},{} ", (v as i64).wrapping_neg()).as_bytes());
        }
        assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(expected).unwrap());
    }
}
