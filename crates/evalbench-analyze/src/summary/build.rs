//! Building a bundle's [`Summary`]: each pass loaded once, its statistics
//! computed beside whatever the caller writes of its spans (the report's
//! trace.json, through a [`TraceSink`]), then its critical path walked with
//! the spans given up, then what the top steps would buy beside the path's
//! slices the sink appends. One pass at a time: the memory peak is one
//! pass's.

use std::path::Path;
use std::time::Instant;

use evalbench_bundle::{layout, Bundle, PassDir};

use super::Summary;
use super::{answers, path_summary, NoPath, NotSummarized, PassCounters, PassSettings, PassSummary, RepeatGroup};
use crate::path::CriticalPath;
use crate::tracks::Layout;
use crate::{load, Alignment, Fields, PassData, Warning};

/// Where each pass's spans go while its summary is made (the report's
/// trace.json): handed the spans on the calling thread while the
/// statistics are computed on another, then the path once it is walked,
/// on a thread beside the predictions.
pub trait TraceSink: Sync {
    /// What [`TraceSink::spans`] leaves to be finished with the path.
    type Pending: Send;
    type Error: Send;
    /// Whether it takes the spans at all (their layout is made only then).
    fn takes_spans(&self) -> bool {
        true
    }
    /// The pass's spans (only for a pass that has some), laid out on their
    /// tracks. None: nothing to finish.
    fn spans(
        &self,
        pass: &PassDir,
        data: &PassData,
        alignment: &Alignment,
        layout: Layout,
    ) -> Result<Option<Self::Pending>, Self::Error>;
    /// The path (None where there is none), to finish what `spans` began.
    fn finish(&self, pending: Self::Pending, path: Option<&CriticalPath>) -> Result<(), Self::Error>;
}

/// A pass done: what the progress line says of it.
#[derive(Debug, Clone)]
pub struct PassDone<'a> {
    pub pass: &'a str,
    pub spans: usize,
    pub processes: usize,
    pub seconds: f64,
}

/// Why a bundle has no summary.
#[derive(Debug)]
pub enum SummaryError<E> {
    /// The sink failed (the report could not write a trace).
    Sink(E),
    /// No pass has spans or a readable run.json, and no run was left
    /// incomplete or warming up: the warnings say why.
    NothingUsable { warnings: Vec<String> },
}

/// The summary of `bundle`: every pass (the incomplete runs' too: the sink
/// gets their spans, the summary no figure of theirs), the answer over runs
/// per clean pass, the repeats' spreads, counters and instructions.
pub fn summary<S: TraceSink>(
    bundle: &Bundle,
    sink: &S,
    progress: &mut dyn FnMut(PassDone<'_>),
) -> Result<Summary, SummaryError<S::Error>> {
    let mut summary = Summary {
        evalbench_version: env!("CARGO_PKG_VERSION"),
        bundle: bundle.source.display().to_string(),
        provenance: bundle.provenance(),
        passes: Vec::new(),
        answers: Vec::new(),
        repeats: Vec::new(),
        not_summarized: Vec::new(),
        nix_stats: Vec::new(),
        pg_settings: Vec::new(),
        warnings: Vec::new(),
        instructions: Vec::new(),
        pass_status: crate::outcomes::of_bundle(bundle),
        attributes: Vec::new(),
    };
    let (counted, counted_warnings) = crate::instructions::passes(bundle);
    summary.instructions = counted;
    summary.warnings.extend(counted_warnings.into_iter().map(|message| Warning { file: None, line: None, message }));
    let mut usable = 0usize;
    // The runs that did not complete go to the sink (what they show is
    // worth seeing), never into a figure.
    for pass in bundle.passes.iter().chain(&bundle.incomplete) {
        let t = Instant::now();
        let (spans, processes) = one_pass(&mut summary, bundle, pass, sink, &mut usable)?;
        progress(PassDone { pass: &pass.name, spans, processes, seconds: t.elapsed().as_secs_f64() });
    }
    if usable == 0 && bundle.incomplete.is_empty() && bundle.warmups.is_empty() {
        let warnings = summary.warnings.iter().map(|w| w.to_string()).collect();
        return Err(SummaryError::NothingUsable { warnings });
    }
    summary.repeats = RepeatGroup::group(&summary.passes);
    summary.answers = answers(&summary.passes);
    Ok(summary)
}

/// One pass into `summary`: its spans and processes counted.
fn one_pass<S: TraceSink>(
    summary: &mut Summary,
    bundle: &Bundle,
    pass: &PassDir,
    sink: &S,
    usable: &mut usize,
) -> Result<(usize, usize), SummaryError<S::Error>> {
    let counts = pass.outcome.counts();
    // Spans outside the capture window are not the evaluation's: left
    // out of the statistics and of the sink's spans alike.
    let (data, alignment) = load(pass, Fields::Placed(&crate::fields_read));
    crate::phase("loaded the pass");
    let spans = data.span_count();
    // Warnings name files inside the bundle as the bundle names them.
    summary.warnings.extend(data.warnings.iter().cloned().map(|w| relative(w, &bundle.root)));
    if counts && (spans > 0 || data.run.is_some()) {
        *usable += 1;
    }
    if let Some(set) = data.run.as_ref().and_then(|r| r.pg_settings()) {
        summary.pg_settings.push(PassSettings { pass: pass.name.clone(), settings: set.clone() });
    }
    if let Some(c) = crate::counters::of_pass(&data).filter(|_| counts) {
        summary.nix_stats.push(PassCounters {
            pass: pass.name.clone(),
            counters: evalbench_bundle::nix_stats::to_json(&c),
            recycled_evaluators: crate::counters::recycled_evaluators(&data),
        });
    }
    if let Some(a) = crate::attributes::of_pass(pass).filter(|_| counts) {
        summary.attributes.push(a);
    }
    let processes = data.streams.len();
    let unreadable: Vec<String> = data
        .unreadable_files
        .iter()
        .map(|f| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let wants_summary = counts && layout::is_clean(&pass.name) && !(spans == 0 && data.run.is_none());
    let mut pass_summary = statistics_and_path(pass, data, &alignment, wants_summary, sink)?;
    if let Some(p) = pass_summary.as_mut() {
        if !unreadable.is_empty() {
            // Its spans are not all there: a partial path in a median would pull it down.
            p.critical_path = Err(NoPath::Partial(unreadable));
        }
        p.rank_by_own();
    }
    file_pass(summary, pass, counts, pass_summary);
    Ok((spans, processes))
}

/// The statistics beside the sink's spans, on a thread of their own (a
/// trace's writer leaves most of a second core idle): their scratch added
/// up (at 1.1M spans 25 and 9 MiB) stays below the path's peak. Then the
/// critical path, with the spans given up (its walk would double the peak
/// beside them); last what the top steps would buy, beside the sink's
/// finish with the path.
fn statistics_and_path<S: TraceSink>(
    pass: &PassDir,
    data: PassData,
    alignment: &Alignment,
    wants_summary: bool,
    sink: &S,
) -> Result<Option<PassSummary>, SummaryError<S::Error>> {
    let has_spans = data.span_count() > 0;
    let (mut pass_summary, pending) = std::thread::scope(|s| {
        let statistics =
            s.spawn(|| wants_summary.then(|| PassSummary::with_path(&data, alignment, Err(NoPath::Pending))));
        let pending = if has_spans && sink.takes_spans() {
            sink.spans(pass, &data, alignment, crate::tracks::lay_out(&data.streams))
        } else {
            Ok(None)
        };
        let statistics = statistics.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (statistics, pending)
    });
    let pending = pending.map_err(SummaryError::Sink)?;
    crate::phase("statistics and trace.json's spans");
    let (_, critical) = crate::path::critical_path(data, alignment);
    crate::phase("path walked");
    // Neither the predictions nor the sink's finish changes the path: both only read it.
    let (buys, finished) = std::thread::scope(|s| {
        let writer = pending.map(|pending| {
            let path = critical.as_ref().ok().map(|(_, p)| p);
            s.spawn(move || sink.finish(pending, path))
        });
        let mut buys = Vec::new();
        if let (Ok((g, p)), Some(s)) = (critical.as_ref(), pass_summary.as_mut()) {
            buys = crate::path::whatif::buys(g, p, crate::over_runs::BUYS);
            crate::stats::own_from_path(&mut s.spans, g);
        }
        (buys, writer.map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
    });
    if let Some(finished) = finished {
        finished.map_err(SummaryError::Sink)?;
    }
    let critical = critical.map(|(_, p)| (p, buys));
    if let Some(p) = pass_summary.as_mut() {
        p.critical_path = path_summary(&critical);
    }
    crate::phase("what the top steps would buy, and the path's slices");
    Ok(pass_summary)
}

/// The pass's place in the summary: a figure for a clean pass that
/// completed, the reason there is none for the rest.
fn file_pass(summary: &mut Summary, pass: &PassDir, counts: bool, pass_summary: Option<PassSummary>) {
    let not = |reason: &str| NotSummarized { pass: pass.name.clone(), reason: reason.into() };
    if !counts {
        // Said by the pass's status (`pass_status`), first.
    } else if layout::is_counted(&pass.name) {
        summary.not_summarized.push(not(
            "counted pass: Valgrind runs nix 15-30 times slower; what it measures is nix's instructions (trace.json \
                written)",
        ));
    } else if layout::is_clean(&pass.name) {
        match pass_summary {
            Some(p) => summary.passes.push(p),
            None => summary.not_summarized.push(not("no spans and no run.json")),
        }
    } else {
        summary
            .not_summarized
            .push(not("instrumented pass: perf, strace and auto_explain distort its timings (trace.json written)"));
    }
}

fn relative(mut w: Warning, root: &Path) -> Warning {
    if let Some(f) = &w.file {
        if let Ok(r) = f.strip_prefix(root) {
            w.file = Some(r.to_path_buf());
        }
    }
    w
}
