//! Summarizing a bundle: summary.txt and summary.json for its clean passes,
//! and `<pass>/trace.json` for every pass, written into a directory. The
//! summary is analyze's (`evalbench_analyze::summary`, which the binary
//! calls with [`TraceFiles`] as its sink); here it is written.

use std::path::Path;
use std::time::Instant;

use evalbench_analyze::path::CriticalPath;
use evalbench_analyze::summary::{PassDone, SummaryError, TraceSink};
use evalbench_analyze::{Alignment, Layout, PassData};
use evalbench_bundle::{layout, write_atomic, Bundle, PassDir};

use crate::summary::Summary;
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
pub struct TraceFiles<'a> {
    pub out: &'a Path,
    pub no_trace: bool,
}

impl TraceSink for TraceFiles<'_> {
    type Pending = PendingTrace;
    type Error = ReportError;
    fn takes_spans(&self) -> bool {
        !self.no_trace
    }
    fn spans(
        &self,
        pass: &PassDir,
        data: &PassData,
        alignment: &Alignment,
        tracks: Layout,
    ) -> Result<Option<PendingTrace>, ReportError> {
        let path = self.out.join(&pass.name).join(layout::TRACE_JSON);
        write_trace_spans(&path, &pass.name, &data.streams, tracks, alignment).map(Some).map_err(ReportError::io(&path))
    }
    fn finish(&self, pending: PendingTrace, path: Option<&CriticalPath>) -> Result<(), ReportError> {
        let file = pending.path().to_path_buf();
        pending.finish(path).map(drop).map_err(ReportError::io(&file))
    }
}

/// The progress line of a pass summarized.
pub fn pass_done(p: &PassDone<'_>) -> String {
    format!("{}: {} spans from {} processes in {:.2} s", p.pass, p.spans, p.processes, p.seconds)
}

/// Why `bundle` has no summary, as the report's error.
pub fn no_summary(bundle: &Bundle, e: SummaryError<ReportError>) -> ReportError {
    match e {
        SummaryError::Sink(e) => e,
        SummaryError::NothingUsable { warnings } => {
            ReportError::NothingUsable { bundle: bundle.source.clone(), warnings }
        }
    }
}

/// Writes summary.json and summary.txt of `summary` into `out`; returns
/// them (JSON, then text: the answer, or with `opts.runs` every run's own
/// section). `progress` hears where they went and how long since `started`.
pub fn write(
    summary: &Summary,
    out: &Path,
    opts: SummarizeOpts,
    started: Instant,
    progress: &mut dyn FnMut(String),
) -> Result<(String, String), ReportError> {
    let json = crate::summary::json(summary);
    let text = crate::summary::text(summary);
    write_atomic(&out.join(layout::SUMMARY_JSON), json.as_bytes())?;
    write_atomic(&out.join(layout::SUMMARY_TXT), text.as_bytes())?;
    progress(format!(
        "wrote {} and {} in {:.2} s",
        out.join(layout::SUMMARY_TXT).display(),
        layout::SUMMARY_JSON,
        started.elapsed().as_secs_f64()
    ));
    Ok((json, if opts.runs { crate::summary::text_runs(summary) } else { text }))
}
