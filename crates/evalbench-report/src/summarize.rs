//! Summarizing a bundle: summary.txt and summary.json for its clean passes,
//! and `<pass>/trace.json` for every pass, written into a directory. The
//! summary is analyze's (`evalbench_analyze::summary`); here it is written,
//! and trace.json is written as its sink.

use std::path::Path;
use std::time::Instant;

use evalbench_analyze::path::CriticalPath;
use evalbench_analyze::summary::{PassDone, SummaryError, TraceSink};
use evalbench_analyze::{Alignment, PassData};
use evalbench_bundle::{layout, write_atomic, Bundle, PassDir};

use crate::{write_trace_spans, PendingTrace, ReportError};

/// What summarizing writes besides the summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct SummarizeOpts {
    /// Do not write `<pass>/trace.json`.
    pub no_trace: bool,
    /// Return every run's own section (`summarize --runs`) instead of the
    /// answer; summary.txt is the answer either way.
    pub runs: bool,
}

/// trace.json's writer as the summary's sink: each pass's spans written
/// while the statistics are made, the path's slices appended once walked.
struct TraceFiles<'a> {
    out: &'a Path,
    no_trace: bool,
}

impl TraceSink for TraceFiles<'_> {
    type Pending = PendingTrace;
    type Error = ReportError;
    fn spans(
        &self,
        pass: &PassDir,
        data: &PassData,
        alignment: &Alignment,
    ) -> Result<Option<PendingTrace>, ReportError> {
        if self.no_trace {
            return Ok(None);
        }
        let path = self.out.join(&pass.name).join(layout::TRACE_JSON);
        write_trace_spans(&path, &pass.name, &data.streams, alignment).map(Some).map_err(ReportError::io(&path))
    }
    fn finish(&self, pending: PendingTrace, path: Option<&CriticalPath>) -> Result<(), ReportError> {
        let file = pending.path().to_path_buf();
        pending.finish(path).map(drop).map_err(ReportError::io(&file))
    }
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
    let sink = TraceFiles { out, no_trace: opts.no_trace };
    let mut said = |p: PassDone<'_>| {
        progress(format!("{}: {} spans from {} processes in {:.2} s", p.pass, p.spans, p.processes, p.seconds))
    };
    let summary = evalbench_analyze::summary::summary(bundle, &sink, &mut said).map_err(|e| match e {
        SummaryError::Sink(e) => e,
        SummaryError::NothingUsable { warnings } => {
            ReportError::NothingUsable { bundle: bundle.source.clone(), warnings }
        }
    })?;
    let json = crate::summary::json(&summary);
    let text = crate::summary::text(&summary);
    write_atomic(&out.join(layout::SUMMARY_JSON), json.as_bytes())?;
    write_atomic(&out.join(layout::SUMMARY_TXT), text.as_bytes())?;
    progress(format!(
        "wrote {} and {} in {:.2} s",
        out.join(layout::SUMMARY_TXT).display(),
        layout::SUMMARY_JSON,
        t0.elapsed().as_secs_f64()
    ));
    Ok((json, if opts.runs { crate::summary::text_runs(&summary) } else { text }))
}
