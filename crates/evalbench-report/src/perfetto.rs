//! `<run>/trace.json`: Chrome Trace Event JSON for ui.perfetto.dev.
//!
//! One Perfetto process per traced process (server first, then worker, then
//! eval), each split into tracks that nest (see `evalbench_analyze::tracks`).
//! Timestamps are on the server clock: each stream is moved by its host's
//! offset. Written as a stream straight to disk, so a million spans cost
//! only their own memory.

use std::io::{self, BufWriter, Write};
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

/// Writes `path` atomically (temporary file, then rename).
pub fn write_trace(path: &Path, pass: &str, streams: &[Stream], alignment: &Alignment) -> io::Result<u64> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = tempfile::NamedTempFile::new_in(dir)?;
    let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let events = write_events(&mut w, pass, streams, alignment)?;
    w.flush()?;
    drop(w);
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(events)
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
        for (k, s) in st.spans.iter().enumerate() {
            sep(w, &mut first)?;
            w.write_all(b"{\"ph\":\"X\",\"name\":")?;
            json_str(w, st.name(s))?;
            w.write_all(b",\"cat\":")?;
            json_str(w, st.target(s))?;
            write!(w, ",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{},\"args\":{{", s.ts_us + offset, s.dur_us, tracks.of_span[k] + 1)?;
            let mut any = false;
            if let Some(id) = s.id {
                write!(w, "\"span.id\":{id}")?;
                any = true;
            }
            if let Some(p) = s.parent {
                write!(w, "{}\"span.parent\":{p}", if any { "," } else { "" })?;
                any = true;
            }
            if let Some(t) = s.thread {
                write!(w, "{}\"span.thread\":{t}", if any { "," } else { "" })?;
                any = true;
            }
            if let Some(inner) = object_body(&s.fields) {
                if !inner.trim().is_empty() {
                    if any {
                        w.write_all(b",")?;
                    }
                    w.write_all(inner.as_bytes())?;
                    any = true;
                }
            } else if !s.fields.is_empty() {
                write!(w, "{}\"fields\":{}", if any { "," } else { "" }, s.fields)?;
                any = true;
            }
            if let Some(extra) = &s.extra {
                write!(w, "{}\"span.extra\":{extra}", if any { "," } else { "" })?;
            }
            w.write_all(b"}}")?;
            events += 1;
        }
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
