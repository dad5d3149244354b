//! Summarizing a bundle: summary.txt and summary.json for its clean passes,
//! and `<pass>/trace.json` for every pass, written into a directory.

use std::path::Path;
use std::time::Instant;

use evalbench_analyze::{load, Fields, Warning};
use evalbench_bundle::{layout, write_atomic, Bundle};

use crate::summary::{NotSummarized, PassCounters, RepeatGroup};
use crate::summary_path::NoPath;
use crate::{write_trace_spans, PassSummary, ReportError, Summary};

/// What summarizing writes besides the summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct SummarizeOpts {
    /// Do not write `<pass>/trace.json`.
    pub no_trace: bool,
    /// Return every run's own section (`summarize --runs`) instead of the
    /// answer; summary.txt is the answer either way.
    pub runs: bool,
}

/// Writes summary.txt, summary.json and the traces of `bundle` into `out`;
/// returns the two summaries' text (JSON, then text: the answer, or with
/// `opts.runs` every run's own section).
/// `progress` hears one line per pass and one at the end.
pub fn summarize_bundle(
    bundle: &Bundle,
    out: &Path,
    opts: SummarizeOpts,
    progress: &mut dyn FnMut(String),
) -> Result<(String, String), ReportError> {
    let t0 = Instant::now();
    let bundle_path = &bundle.source;
    let no_trace = opts.no_trace;
    let mut summary = Summary {
        evalbench_version: env!("CARGO_PKG_VERSION"),
        bundle: bundle_path.display().to_string(),
        provenance: bundle.provenance(),
        passes: Vec::new(),
        answers: Vec::new(),
        repeats: Vec::new(),
        not_summarized: Vec::new(),
        nix_stats: Vec::new(),
        pg_settings: Vec::new(),
        warnings: Vec::new(),
        instructions: Vec::new(),
        pass_status: evalbench_analyze::outcomes::of_bundle(bundle),
    };
    let (counted, counted_warnings) = evalbench_analyze::instructions::passes(bundle);
    summary.instructions = counted;
    summary.warnings.extend(counted_warnings.into_iter().map(|message| Warning { file: None, line: None, message }));
    let mut usable = 0usize;
    // The runs that did not complete get their trace.json (what they show
    // is worth seeing), never a summary: no figure comes from them.
    for pass in bundle.passes.iter().chain(&bundle.incomplete) {
        let counts = pass.outcome.counts();
        let t = Instant::now();
        // Spans outside the capture window are not the evaluation's: left
        // out of the statistics and of trace.json alike.
        let (data, alignment) = load(pass, Fields::Placed(&evalbench_analyze::fields_read));
        evalbench_analyze::phase("loaded the pass");
        let spans = data.span_count();
        // Warnings name files inside the bundle as the bundle names them.
        summary.warnings.extend(data.warnings.iter().cloned().map(|w| relative(w, &bundle.root)));
        if counts && (spans > 0 || data.run.is_some()) {
            usable += 1;
        }
        if let Some(set) = data.run.as_ref().and_then(|r| r.pg_settings()) {
            summary.pg_settings.push(crate::summary::PassSettings { pass: pass.name.clone(), settings: set.clone() });
        }
        if let Some(c) = evalbench_analyze::counters::of_pass(&data).filter(|_| counts) {
            summary.nix_stats.push(PassCounters {
                pass: pass.name.clone(),
                counters: evalbench_bundle::nix_stats::to_json(&c),
                recycled_evaluators: evalbench_analyze::counters::recycled_evaluators(&data),
            });
        }
        let processes = data.streams.len();
        let unreadable: Vec<String> = data
            .unreadable_files
            .iter()
            .map(|f| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned()))
            .collect();
        let wants_summary = counts && layout::is_clean(&pass.name) && !(spans == 0 && data.run.is_none());
        // The statistics beside the trace's spans, on a thread of their own
        // (the trace's writer leaves most of a second core idle): their
        // scratch added up (at 1.1M spans 25 and 9 MiB) stays below the
        // path's peak. Then the critical path, with the spans given up (its
        // walk would double the peak beside them); last the path's slices,
        // appended to the trace.
        let trace_path = out.join(&pass.name).join(layout::TRACE_JSON);
        let (mut pass_summary, pending) = std::thread::scope(|s| {
            let statistics =
                s.spawn(|| wants_summary.then(|| PassSummary::with_path(&data, &alignment, Err(NoPath::Pending))));
            let pending = if spans > 0 && !no_trace {
                write_trace_spans(&trace_path, &pass.name, &data.streams, &alignment)
                    .map(Some)
                    .map_err(ReportError::io(&trace_path))
            } else {
                Ok(None)
            };
            let statistics = statistics.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (statistics, pending)
        });
        let pending = pending?;
        evalbench_analyze::phase("statistics and trace.json's spans");
        let (_, critical) = evalbench_analyze::path::critical_path(data, &alignment);
        evalbench_analyze::phase("path walked");
        // The path's slices appended to the trace on a thread of their own,
        // beside what the top steps would buy (from the graph before it
        // goes): neither changes the path, both only read it.
        let (buys, finished) = std::thread::scope(|s| {
            let writer = pending.map(|pending| {
                let path = critical.as_ref().ok().map(|(_, p)| p);
                s.spawn(move || pending.finish(path))
            });
            let mut buys = Vec::new();
            if let (Ok((g, p)), Some(s)) = (critical.as_ref(), pass_summary.as_mut()) {
                buys = evalbench_analyze::path::whatif::buys(g, p, evalbench_analyze::over_runs::BUYS);
                evalbench_analyze::stats::own_from_path(&mut s.spans, g);
            }
            (buys, writer.map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
        });
        if let Some(finished) = finished {
            finished.map_err(ReportError::io(&trace_path))?;
        }
        let critical = critical.map(|(_, p)| (p, buys));
        if let Some(p) = pass_summary.as_mut() {
            p.critical_path = crate::summary_path::summary(&critical);
            if !unreadable.is_empty() {
                // Its spans are not all there: a partial path in a median would pull it down.
                p.critical_path = Err(NoPath::Partial(unreadable.clone()));
            }
        }
        evalbench_analyze::phase("what the top steps would buy, and the path's slices");
        if !counts {
            // Said by the pass's status (`pass_status`), first.
        } else if layout::is_counted(&pass.name) {
            summary.not_summarized.push(NotSummarized {
                pass: pass.name.clone(),
                reason: "counted pass: Valgrind runs nix 15-30 times slower; what it measures is nix's instructions \
                    (trace.json written)"
                    .into(),
            });
        } else if layout::is_clean(&pass.name) {
            match pass_summary {
                Some(p) => summary.passes.push(p),
                None => summary
                    .not_summarized
                    .push(NotSummarized { pass: pass.name.clone(), reason: "no spans and no run.json".into() }),
            }
        } else {
            summary.not_summarized.push(NotSummarized {
                pass: pass.name.clone(),
                reason: "instrumented pass: perf, strace and auto_explain distort its timings (trace.json written)"
                    .into(),
            });
        }
        progress(format!(
            "{}: {spans} spans from {processes} processes in {:.2} s",
            pass.name,
            t.elapsed().as_secs_f64()
        ));
    }
    if usable == 0 && bundle.incomplete.is_empty() && bundle.warmups.is_empty() {
        let warnings = summary.warnings.iter().map(|w| w.to_string()).collect();
        return Err(ReportError::NothingUsable { bundle: bundle_path.clone(), warnings });
    }
    summary.repeats = RepeatGroup::group(&summary.passes);
    summary.answers = crate::summary::answers(&summary.passes);
    let json = summary.to_json();
    let text = summary.to_text();
    write_atomic(&out.join(layout::SUMMARY_JSON), json.as_bytes())?;
    write_atomic(&out.join(layout::SUMMARY_TXT), text.as_bytes())?;
    progress(format!(
        "wrote {} and {} in {:.2} s",
        out.join(layout::SUMMARY_TXT).display(),
        layout::SUMMARY_JSON,
        t0.elapsed().as_secs_f64()
    ));
    Ok((json, if opts.runs { summary.to_text_runs() } else { text }))
}

fn relative(mut w: Warning, root: &Path) -> Warning {
    if let Some(f) = &w.file {
        if let Ok(r) = f.strip_prefix(root) {
            w.file = Some(r.to_path_buf());
        }
    }
    w
}
