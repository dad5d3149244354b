//! `evalbench inspect`: one self-contained HTML page (CSS and SVG inline, no
//! script at all, a Content-Security-Policy that would block one anyway),
//! each chart also as its own `.svg` beside the page, and `<run>/trace.json`
//! for Perfetto.

pub(crate) mod esc;
mod sections;
pub(crate) mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use evalbench_analyze::view::PassView;
use evalbench_bundle::layout;

use crate::ReportError;

pub use esc::{esc as escape, file_safe};
pub use svg::ms;

/// The page under construction and the files that go beside it.
pub struct Page {
    body: String,
    toc: Vec<(usize, String, String)>,
    /// (file name, svg)
    charts: Vec<(String, String)>,
    /// (relative destination, source) to copy beside the page.
    copies: Vec<(String, PathBuf)>,
}

impl Page {
    fn h2(&mut self, id: &str, title: &str) {
        let id = file_safe(id);
        let _ = write!(self.body, "<h2 id=\"{}\">{}</h2>", esc::esc(&id), esc::esc(title));
        self.toc.push((2, id, title.to_string()));
    }
    fn h3(&mut self, pass: &str, id: &str, title: &str) {
        let id = file_safe(&format!("{pass}-{id}"));
        let _ = write!(
            self.body,
            "<h3 id=\"{}\">{} <small>{}</small></h3>",
            esc::esc(&id),
            esc::esc(title),
            esc::esc(pass)
        );
        self.toc.push((3, id, title.to_string()));
    }
    /// Inline chart, also written as `<pass>-<name>.svg`.
    fn chart(&mut self, pass: &str, name: &str, svg: String) {
        let file = format!("{}-{}.svg", file_safe(pass), file_safe(name));
        let _ = write!(
            self.body,
            "<figure>{svg}<figcaption><a href=\"{}\">{}</a></figcaption></figure>",
            esc::esc(&esc::href(&file)),
            esc::esc(&file)
        );
        self.charts.push((file, svg));
    }
}

// Lines of the style sheet over 120 columns are split between two literals (`concat!`):
// the page's bytes stay what they were.
const CSS: &str = concat!(
    r#"
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fff}
header{background:#223;color:#fff;padding:12px 24px 12px 240px}header h1{margin:0;font-size:20px}
nav{position:fixed;top:0;bottom:0;left:0;width:210px;overflow:auto;background:#f4f4f7;"#,
    r#"padding:64px 8px 8px;font-size:12px}
nav a{display:block;color:#335;text-decoration:none;padding:1px 4px}nav a.l3{padding-left:16px;color:#667}
main{margin-left:230px;padding:8px 24px 48px;max-width:1200px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top}"#,
    r#"th{background:#f0f0f4;text-align:left}
td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr.distorted td{color:#855}table.sql code{white-space:pre-wrap;word-break:break-word;font-size:12px}
.missing{color:#a40;background:#fff4ec;padding:6px 10px;border-left:3px solid #e84}
.warn{color:#834;background:#fbeff3;padding:6px 10px;border-left:3px solid #c47}
.note{color:#556;font-size:12px}figure{margin:8px 0;overflow-x:auto}figcaption{font-size:11px;color:#889}
svg.chart rect.bar:hover{stroke:#000;stroke-width:1}
@media print{nav{display:none}main{margin:0;max-width:none}h2{page-break-before:always}"#,
    r#"figure{page-break-inside:avoid}a{color:inherit}}
"#
);

/// What rendering produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rendered {
    pub page: PathBuf,
    pub page_bytes: u64,
    pub charts: usize,
    pub spans: usize,
}

/// Renders analysed passes into `out`; `source` (the bundle as the user
/// named it) titles the page.
/// The start of every page we write, up to `<body>`: no script, and a
/// Content-Security-Policy that would block one anyway; styles inline.
pub fn shell_head(title: &str, css: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" \
            content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"><meta name=\"viewport\" \
            content=\"width=device-width\"><title>{}</title><style>{css}</style></head><body>",
        esc::esc(title)
    )
}

/// Each pass's trace.json beside the page, written while the pass holds
/// its spans (`Traces::spans`, as the page's model is built), finished
/// with its critical path by [`render`].
pub struct Traces {
    out: PathBuf,
    pending: Vec<Option<crate::PendingTrace>>,
    failed: Option<ReportError>,
}

impl Traces {
    /// Makes `out`, where the page and the traces go.
    pub fn new(out: &Path) -> Result<Traces, ReportError> {
        std::fs::create_dir_all(out).map_err(ReportError::io(out))?;
        Ok(Traces { out: out.to_path_buf(), pending: Vec::new(), failed: None })
    }

    /// The pass's spans, laid out on their tracks, into its trace.json
    /// (after a failure, nothing more).
    pub fn spans(&mut self, p: &PassView, tracks: evalbench_analyze::Layout) {
        let trace = (p.span_count > 0 && self.failed.is_none()).then(|| {
            let dest = self.out.join(file_safe(&p.name)).join(layout::TRACE_JSON);
            crate::write_trace_spans(&dest, &p.name, &p.data.streams, tracks, &p.align).map_err(ReportError::io(&dest))
        });
        match trace.transpose() {
            Ok(t) => self.pending.push(t),
            Err(e) => {
                self.failed = Some(e);
                self.pending.push(None);
            }
        }
    }
}

/// The page of the model into `out`, finishing each pass's trace.json.
pub fn render(
    model: &evalbench_analyze::view::page::Page,
    out: &Path,
    traces: Traces,
) -> Result<Rendered, ReportError> {
    if let Some(e) = traces.failed {
        return Err(e);
    }
    std::fs::create_dir_all(out).map_err(ReportError::io(out))?;
    let passes = &model.passes;
    let mut traces = traces.pending;
    traces.resize_with(passes.len(), || None);
    let mut page = Page { body: String::new(), toc: Vec::new(), charts: Vec::new(), copies: Vec::new() };
    let standing: Vec<&PassView> = model.groups.iter().map(|g| &passes[g.shown]).collect();
    // The answer first; what was measured and where after it.
    let distorted: Vec<&str> = model.distorted.iter().map(String::as_str).collect();
    sections::answers(&mut page, (&model.answers, &model.status), &distorted, &model.warnings);
    sections::instructions(&mut page, &model.counted);
    let medians: Vec<(usize, f64)> = model.groups.iter().map(|g| (g.runs.len(), g.over.spread.median)).collect();
    sections::overview(&mut page, &standing, &medians, (&model.side_by_side, model.side_by_side_more));
    sections::counters_side_by_side(&mut page, &standing);
    sections::provenance(&mut page, passes);
    for g in &model.groups {
        group(&mut page, g, passes);
    }
    write_beside(&page, passes, traces, out)?;
    let html = page_html(&page, &model.source);
    let index = out.join("index.html");
    evalbench_bundle::write_atomic(&index, html.as_bytes())?;
    Ok(Rendered {
        page: index,
        page_bytes: html.len() as u64,
        charts: page.charts.len(),
        spans: passes.iter().map(|p| p.span_count).sum(),
    })
}

/// A pass's runs as one measurement: its runs' table where there are
/// several, then the run shown in full, section by section.
fn group(page: &mut Page, g: &evalbench_analyze::view::page::Group, passes: &[PassView]) {
    let (idx, full) = (&g.runs, g.shown);
    let runs: Vec<&PassView> = idx.iter().map(|&i| &passes[i]).collect();
    if idx.len() > 1 {
        let at = idx.iter().position(|&i| i == full).unwrap_or(0);
        sections::runs(page, g, &runs, at);
    }
    let p = &passes[full];
    sections::pass_header(page, p);
    sections::assignment(page, p);
    sections::jobs(page, p);
    sections::critical_path(page, p, &g.levers, &g.path_bars);
    sections::spans(page, p);
    sections::database(page, p);
    sections::network(page, p);
    sections::cpu(page, p);
    sections::evaluator(page, p);
    if p.span_count > 0 {
        let _ = write!(
            page.body,
            "<p>Perfetto: <a href=\"{}\">{}</a> (open it at ui.perfetto.dev; server, worker and eval on the server \
                clock).</p>",
            esc::esc(&esc::href(&format!("{}/{}", file_safe(&p.name), layout::TRACE_JSON))),
            esc::esc(&format!("{}/{}", p.name, layout::TRACE_JSON))
        );
    }
}

/// Beside the page: each run's trace.json finished with its path (shown in
/// full or not), the files copied in, and every chart as its own SVG.
fn write_beside(
    page: &Page,
    passes: &[PassView],
    traces: Vec<Option<crate::PendingTrace>>,
    out: &Path,
) -> Result<(), ReportError> {
    for (p, trace) in passes.iter().zip(traces) {
        if let Some(trace) = trace {
            let dest = out.join(file_safe(&p.name)).join(layout::TRACE_JSON);
            trace.finish(p.critical.as_ref().ok()).map_err(ReportError::io(&dest))?;
        }
    }
    for (dest, src) in &page.copies {
        evalbench_bundle::copy_atomic(src, &out.join(dest))?;
    }
    for (file, svg) in &page.charts {
        let doc = format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{svg}\n");
        evalbench_bundle::write_atomic(&out.join(file), doc.as_bytes())?;
    }
    Ok(())
}

/// The page: its head, the contents, the body.
fn page_html(page: &Page, source: &Path) -> String {
    let mut html = String::with_capacity(page.body.len() + 16 * 1024);
    let title = format!("evalbench report: {}", source.display());
    html.push_str(&shell_head(&title, CSS));
    let _ = write!(html, "<header><h1>{}</h1></header><nav><b>Contents</b>", esc::esc(&title));
    for (level, id, t) in &page.toc {
        let _ = write!(html, "<a class=\"l{level}\" href=\"#{}\">{}</a>", esc::esc(id), esc::esc(t));
    }
    html.push_str("</nav><main>");
    html.push_str(
        "<p class=\"note\">Times are on the server clock; worker and eval spans are moved by the measured offset. \
            Every bar's details are in its hover title. Durations in ms, evaluated times in s.</p>",
    );
    html.push_str(&page.body);
    html.push_str("</main></body></html>\n");
    html
}
