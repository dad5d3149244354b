//! A pass read without holding its spans, for what needs only aggregates
//! (totals, durations per name, counts): a nixpkgs-sized pass has millions
//! of spans, and [`crate::load`] holds each one with its text.
//!
//! Two reads of the span files, as [`crate::load`] does it in one:
//! the first keeps only the hand-offs clock alignment pairs (a few per job)
//! and aligns; the second folds every span inside the capture window, on
//! the server's clock, into per-core accumulators. Memory holds a chunk of
//! a file per core and what the fold keeps, never the bundle's bytes.

use std::collections::HashMap;

use evalbench_bundle::{fold_trace_dir, layout, read_trace_dir, PassDir, RunInfo, Span, SpanText, Stream, TraceRead};

use crate::pass::{file_warnings, no_spans, read_run, stray_spans};
use crate::{align_pass, window, Alignment, Warning};

/// The span names clock alignment pairs ([`align_pass`]); nothing else is
/// kept by the first read.
pub use evalbench_bundle::contract::ALIGNMENT_SPANS;

/// Per (span name, process): what a fold kept of its spans.
pub type ByName<V> = HashMap<(String, String), V>;

/// What a scan of a pass knows besides its fold.
#[derive(Debug)]
pub struct Scanned {
    pub run: Option<RunInfo>,
    pub align: Alignment,
    /// As [`crate::PassData`]'s: the reading's warnings, in the same order.
    pub warnings: Vec<Warning>,
    pub dropped: u64,
    pub malformed_total: u64,
    /// Spans folded (inside the window), and those left out before it.
    pub spans: u64,
    pub outside_window: u64,
    /// First start and last end of the folded spans, server clock.
    pub extent: Option<(i64, i64)>,
}

/// Per core: the caller's accumulator and the scan's own counts.
struct Core<A> {
    acc: A,
    spans: u64,
    outside: u64,
    extent: Option<(i64, i64)>,
}

/// Reads the pass twice (see the module's doc; files over `chunk` bytes
/// in chunks, [`evalbench_bundle::TRACE_CHUNK`] unless testing) and folds every span inside
/// its capture window: `fold(acc, stream, spans)` sees each stream of each
/// chunk once, with its spans in the window. Returns one accumulator per
/// core, to merge. Order is not kept: a fold must be a sum.
pub fn fold_pass<A: Send>(
    pass: &PassDir,
    chunk: u64,
    init: impl Fn() -> A + Sync,
    fold: impl Fn(&mut A, &Stream, &mut dyn Iterator<Item = &Span>) + Sync,
) -> (Scanned, Vec<A>) {
    let mut warnings = Vec::new();
    let run = read_run(pass, &mut warnings);
    let trace_dir = pass.file(layout::TRACE_DIR);
    let mut scanned = Scanned {
        run: None,
        align: Alignment::default(),
        warnings: Vec::new(),
        dropped: 0,
        malformed_total: 0,
        spans: 0,
        outside_window: 0,
        extent: None,
    };
    let mut accs = Vec::new();
    let any = trace_dir.is_dir() && scanned.first_read(&trace_dir, chunk, &mut warnings);
    if any {
        let (from, to) = window(run.as_ref()).unwrap_or((i64::MIN, i64::MAX));
        let align = &scanned.align;
        let cores = fold_trace_dir(
            &trace_dir,
            chunk,
            || Core { acc: init(), spans: 0, outside: 0, extent: None },
            |core, part| {
                for st in &part.streams {
                    core.fold_stream(st, align.offset_for(st), (from, to), &fold);
                }
            },
        );
        match cores {
            Ok(cores) => accs = cores.into_iter().map(|c| scanned.add(c)).collect(),
            // The first read went through these files: an error now is
            // the files changing underneath, said as load says it.
            Err(e) => warnings.push(Warning { file: Some(trace_dir.clone()), line: None, message: e.to_string() }),
        }
    }
    if !any {
        warnings.push(no_spans(trace_dir));
    }
    warnings.extend(stray_spans(pass));
    scanned.run = run;
    scanned.warnings = warnings;
    (scanned, accs)
}

impl Scanned {
    /// The first read: only the spans the alignment needs, and the files'
    /// counts and warnings. Whether the pass has any process.
    fn first_read(&mut self, trace_dir: &std::path::Path, chunk: u64, warnings: &mut Vec<Warning>) -> bool {
        let keep = |st: &Stream, s: &Span| ALIGNMENT_SPANS.contains(&st.name(s));
        match read_trace_dir(trace_dir, &TraceRead { chunk, spans: Some(&keep), text: SpanText::All }) {
            Ok(files) => {
                let mut streams = Vec::new();
                for f in files {
                    self.dropped += f.dropped;
                    self.malformed_total += f.malformed_total;
                    file_warnings(&f, warnings);
                    streams.extend(f.streams);
                }
                self.align = align_pass(&streams);
                // Every stream the parser made had a span: all of them are
                // the pass's processes, as in load.
                !streams.is_empty()
            }
            Err(e) => {
                warnings.push(Warning { file: Some(trace_dir.to_path_buf()), line: None, message: e.to_string() });
                false
            }
        }
    }

    /// A core's counts added in; its accumulator handed back.
    fn add<A>(&mut self, c: Core<A>) -> A {
        self.spans += c.spans;
        self.outside_window += c.outside;
        self.extent = match (self.extent, c.extent) {
            (Some((a, b)), Some((x, y))) => Some((a.min(x), b.max(y))),
            (e, None) | (None, e) => e,
        };
        c.acc
    }
}

impl<A> Core<A> {
    /// One stream's spans inside the window folded, every span counted.
    fn fold_stream(
        &mut self,
        st: &Stream,
        off: i64,
        (from, to): (i64, i64),
        fold: &impl Fn(&mut A, &Stream, &mut dyn Iterator<Item = &Span>),
    ) {
        let Core { acc, spans, outside, extent } = self;
        let mut inside = st.spans.iter().filter(|s| {
            let ts = s.ts_us.saturating_add(off);
            let ok = (from..=to).contains(&ts);
            if ok {
                let end = s.end_us().saturating_add(off);
                *extent = Some(extent.map_or((ts, end), |(a, b)| (a.min(ts), b.max(end))));
                *spans += 1;
            } else {
                *outside += 1;
            }
            ok
        });
        fold(acc, st, &mut inside);
        // What the fold did not pull is counted here: every
        // span is counted once, whatever the fold read.
        inside.for_each(drop);
    }
}

/// Every span's duration by (name, process), inside the window: the
/// statistics' input, 8 bytes a span. With the scan. `chunk`: see
/// [`fold_trace_dir`] ([`evalbench_bundle::TRACE_CHUNK`] unless testing).
pub fn durations(pass: &PassDir, chunk: u64) -> (Scanned, ByName<Vec<i64>>) {
    let (scanned, cores) = fold_pass(pass, chunk, ByName::<Vec<i64>>::new, |acc, st, spans| {
        // By the stream's name table first: one hash lookup per name and chunk, not per span.
        let mut local: Vec<Vec<i64>> = vec![Vec::new(); st.names.len()];
        for s in spans {
            local[s.name as usize].push(s.dur_us);
        }
        for (i, d) in local.into_iter().enumerate().filter(|(_, d)| !d.is_empty()) {
            acc.entry((st.names[i].clone(), st.process.clone())).or_default().extend(d);
        }
    });
    (scanned, merge(cores, |into, from| into.extend(from)))
}

/// Every span's total duration by (name, process), inside the window,
/// with the spans counted: memory grows with the names alone. With the scan.
pub fn totals(pass: &PassDir, chunk: u64) -> (Scanned, ByName<(i64, u64)>) {
    let (scanned, cores) = fold_pass(pass, chunk, ByName::<(i64, u64)>::new, add_totals);
    (
        scanned,
        merge(cores, |into, from| {
            into.0 += from.0;
            into.1 += from.1;
        }),
    )
}

/// Adds `spans` of `st` to `acc`: total duration and count by (name,
/// process). Also what [`crate::runs::totals`] sums a loaded pass with.
pub(crate) fn add_totals(acc: &mut ByName<(i64, u64)>, st: &Stream, spans: &mut dyn Iterator<Item = &Span>) {
    // By the stream's name table first: one hash lookup per name, not per span.
    let mut local: Vec<(i64, u64)> = vec![(0, 0); st.names.len()];
    for s in spans {
        let t = &mut local[s.name as usize];
        t.0 += s.dur_us;
        t.1 += 1;
    }
    for (i, t) in local.into_iter().enumerate().filter(|(_, t)| t.1 > 0) {
        let e = acc.entry((st.names[i].clone(), st.process.clone())).or_default();
        e.0 += t.0;
        e.1 += t.1;
    }
}

/// The per-core maps joined into one.
fn merge<V: Default>(cores: Vec<ByName<V>>, join: impl Fn(&mut V, V)) -> ByName<V> {
    let mut cores = cores.into_iter();
    let mut out = cores.next().unwrap_or_default();
    for c in cores {
        for (k, v) in c {
            join(out.entry(k).or_default(), v);
        }
    }
    out
}
