//! A trace directory read on every core: whole files, and large files in
//! chunks cut at line ends, merged back in order with their line numbers.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::parse::{read_spans_at, InFile};
use super::{Span, SpanFile, Stream, MAX_LISTED};
use crate::error::{io, BundleError};
use crate::Fnv;

/// Files above this size are read in chunks, one per core.
pub const CHUNK: u64 = 16 << 20;

/// Reads bytes `start..end` of a span file; line numbers are relative to
/// `start`. The spans `in_file` names keep their fields as their place in
/// the file.
fn read_span_range(path: &Path, start: u64, end: u64, in_file: Option<InFile<'_>>) -> Result<SpanFile, BundleError> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).map_err(io(path))?;
    f.seek(SeekFrom::Start(start)).map_err(io(path))?;
    read_spans_at(BufReader::with_capacity(256 * 1024, f.take(end - start)), path, start, in_file)
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
    // Every part's spans of a stream, counted first: one allocation per
    // stream instead of a copy of everything so far at each part.
    let mut sizes: HashMap<(Option<String>, String, u32), (usize, usize)> = HashMap::new();
    for st in parts.iter().flat_map(|p| &p.streams) {
        let e = sizes.entry((st.host.clone(), st.process.clone(), st.pid)).or_default();
        e.0 += st.spans.len();
        e.1 += st.text.len();
    }
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
            let (spans, text) = sizes.get(&key).copied().unwrap_or_default();
            let si = *index.entry(key).or_insert_with(|| {
                out.streams.push(Stream {
                    host: st.host.clone(),
                    process: st.process.clone(),
                    pid: st.pid,
                    file: st.file.clone(),
                    spans: Vec::with_capacity(spans),
                    text: String::with_capacity(text),
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
            let mut st = st;
            let shift_wide = st.move_wide(&mut target.wide);
            for mut s in std::mem::take(&mut st.spans) {
                s.name = remap[s.name as usize];
                s.target = remap[s.target as usize];
                s.shift_text(base);
                shift_wide(&mut s);
                target.spans.push(s);
            }
        }
    }
    out.physical_lines = base;
    out
}

/// A byte range of a span file: (file's index, start, end).
type Unit = (usize, u64, u64);

/// Which spans a filtered read keeps.
pub type Keep<'a> = &'a (dyn Fn(&Stream, &Span) -> bool + Sync);

/// The directory's span files in name order, and the byte ranges they are
/// read in, whole files up to `chunk` bytes.
fn units_of(dir: &Path, chunk: u64) -> Result<(Vec<PathBuf>, Vec<Unit>), BundleError> {
    let chunk = chunk.max(1);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && p.is_file())
        .collect();
    paths.sort();
    let mut units: Vec<Unit> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        // A file that cannot even be measured or cut is read whole: its
        // read fails on its own, and only it is lost.
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let bounds =
            if size > chunk { chunk_bounds(p, size, chunk).unwrap_or_else(|_| vec![0, size]) } else { vec![0, size] };
        units.extend(bounds.windows(2).map(|w| (i, w[0], w[1])));
    }
    Ok((paths, units))
}

/// Runs `work(thread's state, unit)` for every unit on every core, biggest
/// unit first (so one large chunk does not start last); `state` makes each
/// thread's own state. Returns the states.
fn on_every_core<S: Send>(units: &[Unit], state: impl Fn() -> S + Sync, work: impl Fn(&mut S, usize) + Sync) -> Vec<S> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&u| std::cmp::Reverse(units[u].2 - units[u].1));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(units.len().max(1));
    if threads == 1 {
        // One core: in this thread, in the same order (bench/self.sh counts it exactly).
        let mut st = state();
        for &u in &order {
            work(&mut st, u);
        }
        return vec![st];
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut st = state();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&u) = order.get(k) else { break };
                        work(&mut st, u);
                    }
                    st
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// How a trace directory is read: which spans are kept, what of their
/// text, and in what chunks. What is not kept is dropped chunk by chunk as
/// it is parsed: memory holds what is kept and a chunk per core.
#[derive(Clone, Copy)]
pub struct TraceRead<'a> {
    /// Files over this many bytes are read in chunks, one per core
    /// ([`CHUNK`] unless testing).
    pub chunk: u64,
    /// Only the spans this accepts (None: every span). Every stream is
    /// kept, spans or none: its process and host are still facts of the pass.
    pub spans: Option<Keep<'a>>,
    pub text: SpanText<'a>,
}

/// What of each span's text (its fields and extra keys, most of a line) a
/// read holds.
#[derive(Clone, Copy)]
pub enum SpanText<'a> {
    All,
    /// Only the text of the spans whose name this accepts ([`Stream::keep_text`]).
    Only(KeepText<'a>),
    /// The spans whose name `in_file` accepts keep only their fields' place
    /// in their file ([`Stream::fields_in_file`]), unless `unless` accepts
    /// their fields: a writer that copies the fields out as they are
    /// (trace.json) reads them back from there, the spans held at their
    /// 48 bytes meanwhile.
    InFile {
        in_file: KeepText<'a>,
        unless: KeepText<'a>,
    },
}

impl Default for TraceRead<'_> {
    /// Everything, in chunks of [`CHUNK`].
    fn default() -> Self {
        TraceRead { chunk: CHUNK, spans: None, text: SpanText::All }
    }
}

/// Which spans' text (fields and extra keys) a read keeps, by span name.
pub type KeepText<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// Reads every `*.jsonl` file of a directory, in name order, keeping what
/// `read` says. Files, and chunks of large files, are parsed on every core.
pub fn read_trace_dir(dir: &Path, read: &TraceRead<'_>) -> Result<Vec<SpanFile>, BundleError> {
    let (text, in_file) = match read.text {
        SpanText::All => (None, None),
        SpanText::Only(keep) => (Some(keep), None),
        SpanText::InFile { in_file, unless } => (None, Some((in_file, unless))),
    };
    read_filtered(dir, read.chunk, read.spans, text, in_file)
}

/// Only the spans of `st` that `keep` accepts, with their text.
fn retain(st: Stream, keep: Keep<'_>) -> Stream {
    let mut out = Stream {
        host: st.host.clone(),
        process: st.process.clone(),
        pid: st.pid,
        file: st.file.clone(),
        names: st.names.clone(),
        ..Default::default()
    };
    for s in st.spans.iter().filter(|s| keep(&st, s)) {
        out.push_from(&st, s);
    }
    out
}

fn read_filtered(
    dir: &Path,
    chunk: u64,
    keep: Option<Keep<'_>>,
    text: Option<KeepText<'_>>,
    in_file: Option<InFile<'_>>,
) -> Result<Vec<SpanFile>, BundleError> {
    let (paths, units) = units_of(dir, chunk)?;
    let slots: std::sync::Mutex<Vec<Option<Result<SpanFile, BundleError>>>> =
        std::sync::Mutex::new((0..units.len()).map(|_| None).collect());
    on_every_core(
        &units,
        || (),
        |_, u| {
            let (i, start, end) = units[u];
            let r = read_span_range(&paths[i], start, end, in_file).map(|mut part| {
                if let Some(keep) = keep {
                    part.streams = std::mem::take(&mut part.streams).into_iter().map(|st| retain(st, keep)).collect();
                }
                if let Some(text) = text {
                    for st in &mut part.streams {
                        st.keep_text(text);
                    }
                }
                part
            });
            slots.lock().unwrap_or_else(|e| e.into_inner())[u] = Some(r);
        },
    );
    let results = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut per_file: Vec<Vec<SpanFile>> = (0..paths.len()).map(|_| Vec::new()).collect();
    let mut unreadable: Vec<Option<String>> = vec![None; paths.len()];
    for (u, r) in results.into_iter().enumerate() {
        let i = units[u].0;
        match r.expect("every chunk was read") {
            Ok(part) => per_file[i].push(part),
            // A file that does not read is dropped whole (a part of it
            // would be a process with a hole), and said; the others stay.
            Err(e) => {
                let why = match e {
                    BundleError::Io { source, .. } => source.to_string(),
                    other => other.to_string(),
                };
                unreadable[i] = Some(unreadable[i].take().unwrap_or(why));
            }
        }
    }
    Ok(per_file
        .into_iter()
        .zip(&paths)
        .zip(unreadable)
        .map(|((parts, p), unreadable)| {
            if let Some(why) = unreadable {
                return SpanFile { path: p.clone(), unreadable: Some(why), ..Default::default() };
            }
            let mut file =
                if parts.len() == 1 { parts.into_iter().next().unwrap_or_default() } else { merge(p, parts) };
            // Lines without ids (Gradient's): nesting by time, once the file is whole.
            for st in &mut file.streams {
                st.infer_nesting();
            }
            file
        })
        .collect())
}

/// Folds every span of a directory's `*.jsonl` files without holding them:
/// each chunk (a file, or `chunk` bytes of a large one, cut at a line end;
/// [`CHUNK`] unless testing) is parsed on some core, handed to `fold` with
/// that core's accumulator, and dropped. Memory holds a chunk per core and the accumulators, never
/// the directory. Chunks arrive in no set order, and one process's spans
/// may arrive in several: `fold` must not depend on either, and the caller
/// merges the accumulators (one per core).
pub fn fold_trace_dir<A: Send>(
    dir: &Path,
    chunk: u64,
    init: impl Fn() -> A + Sync,
    fold: impl Fn(&mut A, &SpanFile) + Sync,
) -> Result<Vec<A>, BundleError> {
    let (paths, units) = units_of(dir, chunk)?;
    // Malformed lines, dropped spans and unreadable files are not the
    // fold's: the caller learns them from a read of the whole directory
    // (read_trace_dir or `TraceRead::spans`), which left out a file that
    // does not read, as the fold does here.
    let accs = on_every_core(&units, &init, |acc, u| {
        let (i, start, end) = units[u];
        if let Ok(part) = read_span_range(&paths[i], start, end, None) {
            fold(acc, &part);
        }
    });
    Ok(accs)
}
