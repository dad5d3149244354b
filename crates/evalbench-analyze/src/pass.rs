//! One pass loaded from its directory: run.json and every span file.

use std::path::PathBuf;

use evalbench_bundle::{layout, read_trace_dir, PassDir, RunInfo, SpanFile, SpanText, Stream, TraceRead};
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
    /// Spans left out because they started outside the capture window (see [`load`]).
    pub outside_window: u64,
    /// Span files that did not read: their spans are missing, so the run's
    /// critical path is partial and left out of every median (named).
    pub unreadable_files: Vec<PathBuf>,
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

/// The span names whose fields an analysis reads beside the views and
/// trace.json: the clock alignment's and the critical path's hand-offs,
/// and the evaluators' (whether one was recycled). What a pass loaded by
/// with [`Fields::Read`] keeps the text of (a reader of any other span's
/// fields gets nothing there: a new one must add its name), and what
/// [`Fields::Placed`] keeps in memory at least.
pub fn fields_read(name: &str) -> bool {
    crate::scan::ALIGNMENT_SPANS.contains(&name)
        || crate::path::graph::reads_fields(name)
        || name == crate::counters::EVALUATOR
}

/// What a load keeps of the spans' fields. Every span is kept, with its
/// times; the fields are most of a line, and most analyses read few.
#[derive(Clone, Copy)]
pub enum Fields<'a> {
    /// Every span's (the views, and anything that reads any field).
    All,
    /// Only those an analysis reads ([`fields_read`]): totals, counters,
    /// the critical path; the rest of the text is dropped as each chunk is
    /// parsed (at 4.5M spans, 200 MB never held).
    Read,
    /// For a reader that copies most spans' fields out as they are
    /// (trace.json) and reads few: the spans whose name `keep` refuses keep
    /// their fields' place in their file instead of the text
    /// ([`evalbench_bundle::Stream::fields_in_file`]), but for those that
    /// name their track. `keep` is [`fields_read`] and the names whose
    /// fields the caller reads often; `Stream::field` of any other span
    /// reads its file, a read a call.
    Placed(evalbench_bundle::spans::KeepText<'a>),
}

/// Loads a pass keeping the fields `fields` says, aligns its clocks, and
/// keeps only the spans that started inside its capture window, on the
/// server's clock: what the scheduler did idling before the request and
/// after the evaluation is not the evaluation's (docs/decisions.md,
/// "Passes"). Alignment is computed from every span first, since its pairs
/// may lie on either side. The runner's clock is the server's in the lab;
/// for a remote target the two are taken as synchronized (NTP). Problems
/// with the pass's files become warnings.
pub fn load(pass: &PassDir, fields: Fields<'_>) -> (PassData, crate::Alignment) {
    aligned(read_pass(pass, fields))
}

/// The pass as its files are, every problem a warning: only an unreadable
/// directory is an error, and even then the caller decides.
fn read_pass(pass: &PassDir, fields: Fields<'_>) -> PassData {
    let mut warnings = Vec::new();
    let run = read_run(pass, &mut warnings);
    let trace_dir = pass.file(layout::TRACE_DIR);
    let mut streams = Vec::new();
    let mut unreadable_files = Vec::new();
    let (mut dropped, mut malformed_total) = (0, 0);
    if trace_dir.is_dir() {
        let outside = |n: &str| match fields {
            Fields::Placed(keep) => !keep(n),
            _ => false,
        };
        let text = match fields {
            Fields::All => SpanText::All,
            Fields::Read => SpanText::Only(&fields_read),
            Fields::Placed(_) => SpanText::InFile { in_file: &outside, unless: &crate::tracks::names_a_track },
        };
        let read = read_trace_dir(&trace_dir, &TraceRead { text, ..TraceRead::default() });
        match read {
            Ok(files) => {
                for f in files {
                    dropped += f.dropped;
                    malformed_total += f.malformed_total;
                    file_warnings(&f, &mut warnings);
                    if f.unreadable.is_some() {
                        unreadable_files.push(f.path.clone());
                    }
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
    PassData {
        name: pass.name.clone(),
        dir: pass.path.clone(),
        run,
        streams,
        dropped,
        malformed_total,
        warnings,
        outside_window: 0,
        unreadable_files,
    }
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
                if let Some(bad) = r.evaluated_s.filter(|s| !(s.is_finite() && *s >= 0.0)) {
                    warnings.push(Warning {
                        file: Some(run_path),
                        line: None,
                        message: format!(
                            "evaluated_s is {bad}, not a finite non-negative number of seconds: the run is left out of \
                                the evaluated figure"
                        ),
                    });
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
            message: "missing: the run's evaluated time is unknown, and left out of the evaluated figure".into(),
        });
        None
    }
}

/// What a span file's reading went past: dropped spans, malformed lines.
pub(crate) fn file_warnings(f: &SpanFile, warnings: &mut Vec<Warning>) {
    if let Some(why) = &f.unreadable {
        warnings.push(Warning {
            file: Some(f.path.clone()),
            line: None,
            message: format!("unreadable, its spans left out (the run's other files are read): {why}"),
        });
    }
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
            message: match f.malformed_total - listed {
                1 => "1 more malformed line not listed".to_string(),
                n => format!("{n} more malformed lines not listed"),
            },
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
            "{files} span files left here, not in trace/: not read (Gradient's benchmark moves them into trace/ when \
                it copies them out)"
        ),
    })
}

pub(crate) fn no_spans(trace_dir: PathBuf) -> Warning {
    Warning {
        file: Some(trace_dir),
        line: None,
        message: "this pass has no spans (no trace/*.jsonl with a readable span line)".into(),
    }
}

/// The pass's capture window, from its run.json: Unix µs on the runner's
/// clock, from arming the captures to the evaluation leaving
/// EvaluatingDerivation. None where the runner did not record one (bundles
/// of other tools, and of evalbench before the window was kept).
pub fn window(run: Option<&RunInfo>) -> Option<(i64, i64)> {
    let r = run?.runner.as_ref()?;
    (r.capture_started_us > 0 && r.capture_stopped_us > r.capture_started_us)
        .then_some((r.capture_started_us, r.capture_stopped_us))
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
