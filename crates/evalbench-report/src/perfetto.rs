//! `<run>/trace.json`: Chrome Trace Event JSON for ui.perfetto.dev.
//!
//! One Perfetto process per traced process (server first, then worker, then
//! eval), each split into tracks that nest (see `evalbench_analyze::tracks`).
//! Timestamps are on the server clock: each stream is moved by its host's
//! offset. Written as a stream straight to disk, so a million spans cost
//! only their own memory.

use std::io::{self, Write};
use std::path::Path;

use evalbench_analyze::{assign_tracks, Alignment};
use evalbench_bundle::Stream;

fn process_rank(p: &str) -> u32 {
    match p {
        "server" => 0,
        "worker" => 1,
        "eval" => 2,
        _ => 3,
    }
}

/// Writes `path` atomically (temporary file, then rename). Events are
/// formatted in blocks on this thread while another thread writes the
/// previous block: formatting and the kernel's copy overlap.
pub fn write_trace(path: &Path, pass: &str, streams: &[Stream], alignment: &Alignment) -> io::Result<u64> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = tempfile::NamedTempFile::new_in(dir)?;
    let file = tmp.as_file().try_clone()?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let writer = std::thread::spawn(move || -> io::Result<()> {
        let mut file = file;
        for block in rx {
            file.write_all(&block)?;
            let mut block = block;
            block.clear();
            let _ = back_tx.send(block);
        }
        file.flush()
    });
    let mut sink = BlockSink { buf: Vec::with_capacity(BLOCK * 2), tx: Some(tx), back: back_rx };
    let events = write_events(&mut sink, pass, streams, alignment);
    let sent = sink.finish();
    let written = writer.join().unwrap_or_else(|_| Err(io::Error::other("trace writer thread panicked")));
    let events = events?;
    sent?;
    written?;
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(events)
}

const BLOCK: usize = 1 << 20;

/// A `Write` that hands full blocks to the writer thread and reuses the
/// buffers it gives back.
struct BlockSink {
    buf: Vec<u8>,
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    back: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl BlockSink {
    fn ship(&mut self) -> io::Result<()> {
        let fresh = self.back.try_recv().unwrap_or_else(|_| Vec::with_capacity(BLOCK * 2));
        let full = std::mem::replace(&mut self.buf, fresh);
        match &self.tx {
            Some(tx) => tx.send(full).map_err(|_| io::Error::other("trace writer stopped (disk error?)")),
            None => Ok(()),
        }
    }
    fn finish(mut self) -> io::Result<()> {
        let r = if self.buf.is_empty() { Ok(()) } else { self.ship() };
        self.tx = None;
        r
    }
}

impl Write for BlockSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= BLOCK {
            self.ship()?;
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Decimal digits of an integer, without `fmt` machinery.
fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&tmp[i..]);
}

fn escaped(s: &str) -> Vec<u8> {
    serde_json::to_vec(s).unwrap_or_else(|_| b"\"\"".to_vec())
}

fn write_events(w: &mut impl Write, pass: &str, streams: &[Stream], alignment: &Alignment) -> io::Result<u64> {
    let mut order: Vec<usize> = (0..streams.len()).collect();
    order.sort_by_key(|&i| (process_rank(&streams[i].process), streams[i].host.clone(), streams[i].pid));
    w.write_all(b"{\"displayTimeUnit\":\"ms\",\"otherData\":{\"pass\":")?;
    json_str(w, pass)?;
    w.write_all(b",\"clock\":\"server\",\"alignment\":")?;
    serde_json::to_writer(&mut *w, alignment)?;
    w.write_all(b"},\"traceEvents\":[\n")?;
    let mut first = true;
    let mut events = 0u64;
    for (rank, &i) in order.iter().enumerate() {
        let st = &streams[i];
        // Synthetic pids: two hosts may reuse a pid number.
        let pid = rank as u64 + 1;
        let offset = alignment.offset_for(st);
        let label = match &st.host {
            Some(h) => format!("{} {} (pid {})", st.process, h, st.pid),
            None => format!("{} (pid {})", st.process, st.pid),
        };
        sep(w, &mut first)?;
        write!(w, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":")?;
        json_str(w, &label)?;
        w.write_all(b"}}")?;
        sep(w, &mut first)?;
        write!(w, "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{rank}}}}}")?;
        let tracks = assign_tracks(st);
        for (t, name) in tracks.names.iter().enumerate() {
            sep(w, &mut first)?;
            write!(w, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{},\"args\":{{\"name\":", t + 1)?;
            json_str(w, name)?;
            w.write_all(b"}}")?;
            sep(w, &mut first)?;
            write!(w, "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{},\"args\":{{\"sort_index\":{t}}}}}", t + 1)?;
        }
        // Names are few: escape each once, not once per span.
        let names: Vec<Vec<u8>> = st.names.iter().map(|n| escaped(n)).collect();
        let pid_s = pid.to_string();
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        for (k, s) in st.spans.iter().enumerate() {
            if first {
                first = false;
            } else {
                buf.extend_from_slice(b",\n");
            }
            buf.extend_from_slice(b"{\"ph\":\"X\",\"name\":");
            buf.extend_from_slice(&names[s.name as usize]);
            buf.extend_from_slice(b",\"cat\":");
            buf.extend_from_slice(&names[s.target as usize]);
            buf.extend_from_slice(b",\"ts\":");
            push_int(&mut buf, s.ts_us + offset);
            buf.extend_from_slice(b",\"dur\":");
            push_int(&mut buf, s.dur_us);
            buf.extend_from_slice(b",\"pid\":");
            buf.extend_from_slice(pid_s.as_bytes());
            buf.extend_from_slice(b",\"tid\":");
            push_int(&mut buf, tracks.of_span[k] as i64 + 1);
            buf.extend_from_slice(b",\"args\":{");
            let mut any = false;
            let mut key = |buf: &mut Vec<u8>, k: &[u8]| {
                if any {
                    buf.push(b',');
                }
                any = true;
                buf.extend_from_slice(k);
            };
            if let Some(id) = s.id {
                key(&mut buf, b"\"span.id\":");
                push_int(&mut buf, id as i64);
            }
            if let Some(p) = s.parent {
                key(&mut buf, b"\"span.parent\":");
                push_int(&mut buf, p as i64);
            }
            if let Some(t) = s.thread {
                key(&mut buf, b"\"span.thread\":");
                push_int(&mut buf, t as i64);
            }
            match object_body(&s.fields) {
                Some(inner) if inner.trim().is_empty() => {}
                Some(inner) => key(&mut buf, inner.as_bytes()),
                None if s.fields.is_empty() => {}
                None => {
                    key(&mut buf, b"\"fields\":");
                    buf.extend_from_slice(s.fields.as_bytes());
                }
            }
            if let Some(extra) = &s.extra {
                key(&mut buf, b"\"span.extra\":");
                buf.extend_from_slice(extra.as_bytes());
            }
            buf.extend_from_slice(b"}}");
            events += 1;
            if buf.len() >= 60 * 1024 {
                w.write_all(&buf)?;
                buf.clear();
            }
        }
        w.write_all(&buf)?;
    }
    w.write_all(b"\n]}\n")?;
    Ok(events)
}

/// The inside of a raw JSON object, so its keys can join ours.
fn object_body(raw: &str) -> Option<&str> {
    let t = raw.trim();
    t.strip_prefix('{')?.strip_suffix('}')
}

fn sep(w: &mut impl Write, first: &mut bool) -> io::Result<()> {
    if *first {
        *first = false;
        Ok(())
    } else {
        w.write_all(b",\n")
    }
}

pub(crate) fn json_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::from)
}
