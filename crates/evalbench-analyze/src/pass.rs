//! One pass loaded from its directory: run.json and every span file.

use std::path::PathBuf;

use evalbench_bundle::{layout, read_trace_dir, PassDir, RunInfo, SpanFile, Stream};
use serde::Serialize;

/// Something the reader noticed and went on past.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub file: Option<PathBuf>,
    pub line: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{l}: {}", p.display(), self.message),
            (Some(p), None) => write!(f, "{}: {}", p.display(), self.message),
            _ => f.write_str(&self.message),
        }
    }
}

#[derive(Debug, Default)]
pub struct PassData {
    pub name: String,
    pub dir: PathBuf,
    pub run: Option<RunInfo>,
    pub streams: Vec<Stream>,
    pub dropped: u64,
    pub malformed_total: u64,
    pub warnings: Vec<Warning>,
    /// Spans left out because they started outside the capture window (see [`load_aligned`]).
    pub outside_window: u64,
}

impl PassData {
    pub fn span_count(&self) -> usize {
        self.streams.iter().map(|s| s.spans.len()).sum()
    }

    /// The time span of the pass: first span start and last span end, on
    /// the server's clock. None without spans.
    pub fn extent(&self, alignment: &crate::Alignment) -> Option<(i64, i64)> {
        let mut r: Option<(i64, i64)> = None;
        for st in &self.streams {
            let off = alignment.offset_for(st);
            for s in &st.spans {
                let (a, b) = (s.ts_us.saturating_add(off), s.end_us().saturating_add(off));
                r = Some(match r {
                    None => (a, b),
                    Some((x, y)) => (x.min(a), y.max(b)),
                });
            }
        }
        r
    }
}

/// Loads a pass. Problems with its files become warnings; only an unreadable
/// directory is an error, and even then the caller decides.
pub fn load_pass(pass: &PassDir) -> PassData {
    load_pass_keeping(pass, TextKept::All)
}

/// The span names whose fields an analysis reads beside the views and
/// trace.json: the clock alignment's and the critical path's hand-offs,
/// and the evaluators' (whether one was recycled). What a pass loaded by
/// [`load_aligned_lean`] keeps the text of (a reader of any other span's
/// fields gets nothing there: a new one must add its name), and what
/// [`load_aligned_placed`] keeps in memory at least.
pub fn fields_read(name: &str) -> bool {
    crate::scan::ALIGNMENT_SPANS.contains(&name) || crate::path::graph::reads_fields(name) || name == crate::counters::EVALUATOR
}

/// Which spans' text a load keeps.
#[derive(Clone, Copy)]
enum TextKept<'a> {
    All,
    /// Only of the spans whose name it accepts; the rest have none.
    Only(evalbench_bundle::spans::KeepText<'a>),
    /// Only of the spans whose name it accepts; the rest keep their
    /// fields' place in their file.
    ElsePlace(evalbench_bundle::spans::KeepText<'a>),
}

/// [`load_pass`], keeping the text `text` says.
fn load_pass_keeping(pass: &PassDir, text: TextKept<'_>) -> PassData {
    let mut warnings = Vec::new();
    let run = read_run(pass, &mut warnings);
    let trace_dir = pass.file(layout::TRACE_DIR);
    let mut streams = Vec::new();
    let (mut dropped, mut malformed_total) = (0, 0);
    if trace_dir.is_dir() {
        let chunk = evalbench_bundle::spans::CHUNK;
        let read = match text {
            TextKept::All => read_trace_dir(&trace_dir),
            TextKept::Only(keep) => evalbench_bundle::spans::read_trace_dir_text(&trace_dir, chunk, keep),
            TextKept::ElsePlace(keep) => {
                evalbench_bundle::spans::read_trace_dir_located(&trace_dir, chunk, &|n| !keep(n), &crate::tracks::names_a_track)
            }
        };
        match read {
            Ok(files) => {
                for f in files {
                    dropped += f.dropped;
                    malformed_total += f.malformed_total;
                    file_warnings(&f, &mut warnings);
                    streams.extend(f.streams.into_iter().filter(|s| !s.spans.is_empty()));
                }
            }
            Err(e) => warnings.push(Warning { file: Some(trace_dir.clone()), line: None, message: e.to_string() }),
        }
    }
    if streams.is_empty() {
        warnings.push(no_spans(trace_dir));
    }
    if let Some(w) = stray_spans(pass) {
        warnings.push(w);
    }
    PassData { name: pass.name.clone(), dir: pass.path.clone(), run, streams, dropped, malformed_total, warnings, outside_window: 0 }
}

/// The pass's run.json, or a warning saying why there is none.
pub(crate) fn read_run(pass: &PassDir, warnings: &mut Vec<Warning>) -> Option<RunInfo> {
    let run_path = pass.file(layout::RUN_JSON);
    if run_path.is_file() {
        match RunInfo::read(&run_path) {
            Ok(r) => {
                for w in &r.read_warnings {
                    warnings.push(Warning { file: None, line: None, message: w.clone() });
                }
                Some(r)
            }
            Err(e) => {
                warnings.push(Warning { file: Some(run_path), line: None, message: format!("unreadable: {e}") });
                None
            }
        }
    } else {
        warnings.push(Warning {
            file: Some(run_path),
            line: None,
            message: "missing: evaluated time and evaluation_metric unknown; wall time taken from the spans".into(),
        });
        None
    }
}

/// What a span file's reading went past: dropped spans, malformed lines.
pub(crate) fn file_warnings(f: &SpanFile, warnings: &mut Vec<Warning>) {
    if f.dropped > 0 {
        warnings.push(Warning {
            file: Some(f.path.clone()),
            line: None,
            message: format!("the process dropped {} spans (its trace queue was full)", f.dropped),
        });
    }
    for m in &f.malformed {
        warnings.push(Warning { file: Some(m.file.clone()), line: Some(m.line), message: m.reason.clone() });
    }
    let listed = f.malformed.len() as u64;
    if f.malformed_total > listed {
        warnings.push(Warning {
            file: Some(f.path.clone()),
            line: None,
            message: format!("{} more malformed lines not listed", f.malformed_total - listed),
        });
    }
}

/// Span files where Gradient's benchmark leaves the worker's spans before
/// it moves them into `trace/` (`worker/trace/`): not read, and said.
pub(crate) fn stray_spans(pass: &PassDir) -> Option<Warning> {
    let dir = pass.file(layout::WORKER_TRACE_DIR);
    let files = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl") && e.metadata().is_ok_and(|m| m.len() > 0))
        .count();
    (files > 0).then(|| Warning {
        file: Some(dir),
        line: None,
        message: format!(
            "{files} span files left here, not in trace/: not read (Gradient's benchmark moves them into trace/ when it copies them out)"
        ),
    })
}

pub(crate) fn no_spans(trace_dir: PathBuf) -> Warning {
    Warning { file: Some(trace_dir), line: None, message: "this pass has no spans (no trace/*.jsonl with a readable span line)".into() }
}

/// The pass's capture window, from its run.json: Unix µs on the runner's
/// clock, from arming the captures to the evaluation leaving
/// EvaluatingDerivation. None where the runner did not record one (bundles
/// of other tools, and of evalbench before the window was kept).
pub fn window(run: Option<&RunInfo>) -> Option<(i64, i64)> {
    let r = run?.runner.as_ref()?;
    (r.capture_started_us > 0 && r.capture_stopped_us > r.capture_started_us).then_some((r.capture_started_us, r.capture_stopped_us))
}

/// Loads a pass, aligns its clocks, and keeps only the spans that started
/// inside its capture window, on the server's clock: what the scheduler
/// did idling before the request and after the evaluation is not the
/// evaluation's (docs/ARCHITECTURE.md, "Passes"). Alignment is computed
/// from every span first, since its pairs may lie on either side. The
/// runner's clock is the server's in the lab; for a remote target the two
/// are taken as synchronized (NTP).
pub fn load_aligned(pass: &PassDir) -> (PassData, crate::Alignment) {
    aligned(load_pass(pass))
}

/// [`load_aligned`] for an analysis that reads no span's fields but
/// those [`fields_read`] names (totals, counters, the critical path, not
/// the views or trace.json): the rest of the text is dropped as each chunk
/// is parsed, and at 4.5M spans that is 200 MB never held.
pub fn load_aligned_lean(pass: &PassDir) -> (PassData, crate::Alignment) {
    aligned(load_pass_keeping(pass, TextKept::Only(&fields_read)))
}

/// [`load_aligned`] for an analysis that copies most spans' fields out as
/// they are (trace.json) and reads few: the spans whose name `keep`
/// refuses keep their fields' place in their file
/// ([`evalbench_bundle::Stream::fields_in_file`]) instead of the text, but
/// for those that name their track (which the trace's tracks read).
/// `keep` is [`fields_read`] and the names whose fields the caller reads
/// often; `Stream::field` of any other span reads its file, a read a call.
pub fn load_aligned_placed(pass: &PassDir, keep: evalbench_bundle::spans::KeepText<'_>) -> (PassData, crate::Alignment) {
    aligned(load_pass_keeping(pass, TextKept::ElsePlace(keep)))
}

fn aligned(mut data: PassData) -> (PassData, crate::Alignment) {
    let align = crate::align_pass(&data.streams);
    if let Some((from, to)) = window(data.run.as_ref()) {
        let mut outside = 0u64;
        for st in &mut data.streams {
            let off = align.offset_for(st);
            let before = st.spans.len();
            st.spans.retain(|s| (from..=to).contains(&s.ts_us.saturating_add(off)));
            outside += (before - st.spans.len()) as u64;
        }
        data.streams.retain(|s| !s.spans.is_empty());
        data.outside_window = outside;
    }
    (data, align)
}
