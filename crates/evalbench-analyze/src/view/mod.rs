//! Everything `inspect`'s page shows of a pass, computed here, so that the
//! report only formats: spans on the server clock, the assignment walk, job
//! phases, root-span lanes, span time folded by nesting, and the decoded
//! PostgreSQL, network and CPU captures. A capture that is missing or that
//! does not decode is a [`Section::Missing`] or [`Section::Unreadable`], for
//! the page to say so where the section would be.

mod assignment;
mod captures;
mod evaluator;
mod jobs;
mod nesting;
pub mod page;
mod runs;
mod timeline;

use std::collections::HashMap;
use std::path::PathBuf;

use evalbench_bundle::{layout, Bundle, PassDir, RunInfo};

use crate::{span_stats, Alignment, PassData, SpanStat};

/// The decoders' records a view holds, for the report to read without
/// depending on the decoders.
pub mod records {
    pub use evalbench_decode::explain::{ExplainSummary, Plan, StatementPlans};
    pub use evalbench_decode::pg::PgSummary;
    pub use evalbench_decode::stats::Statement;
    pub use evalbench_decode::strace::StraceSummary;
    pub use evalbench_decode::ws::WsSummary;
}

pub use assignment::{Assignment, JobWalk, Step};
pub use captures::{CpuProfile, Database, WaitColumn};
pub use evaluator::{Attribute, AttributeCost, Evaluator, NixProfile, Position, Ranked, Sampled};
pub use jobs::{JobPhases, Phase};
pub use runs::{runs_of_pass, RunsOfPass};
pub use timeline::{path_bars, Bar, Lane, PathBar, Timeline, PATH_MIN_SHARE, TIMELINE_PIXELS};

/// A capture as the page can show it.
#[derive(Debug)]
pub enum Section<T> {
    Ready(T),
    /// The file the pass should have, relative to the pass directory.
    Missing(&'static str),
    /// The decoder's error, naming the file and where.
    Unreadable(String),
}

/// One pass, analysed.
pub struct PassView {
    pub name: String,
    pub dir: PathBuf,
    pub clean: bool,
    pub cold: bool,
    /// The pass as loaded, its spans given up once every view is computed.
    pub data: PassData,
    /// Its spans in the capture window, as loaded.
    pub span_count: usize,
    pub align: Alignment,
    /// First span start and last span end, server clock.
    pub extent: Option<(f64, f64)>,
    pub span_stats: Vec<SpanStat>,
    pub assignment: Assignment,
    pub jobs: Section<JobPhases>,
    pub timeline: Option<Timeline>,
    /// Self time per path of span names (process first), in path order.
    pub nesting: Vec<(Vec<String>, f64)>,
    pub database: Database,
    /// `/proto` traffic; clean passes only.
    pub network: Option<Section<evalbench_decode::ws::WsSummary>>,
    /// perf profiles of the server and the worker host; instrumented passes only.
    pub cpu: Vec<CpuProfile>,
    /// The worker's strace files (`worker/strace/worker.<pid>`), each with
    /// its lines and bytes, by name; instrumented passes only.
    pub strace: Vec<(String, u64, u64)>,
    /// The strace files' lines added up.
    pub strace_lines: u64,
    /// nix's counters and calls, and the attributes' spans.
    pub evaluator: Section<Evaluator>,
    /// What the evaluated time waited on, or why that is unknown.
    pub critical: Result<crate::path::CriticalPath, crate::path::PathError>,
    /// What 10% and 50% faster would buy, for the top steps on the path.
    pub buys: Vec<crate::path::whatif::Buys>,
    /// The CI's evaluation_metric row (run.json's, else the file's).
    pub evaluation_metric: Option<serde_json::Value>,
}

/// A span on the server clock.
pub struct ServerSpan<'a> {
    pub stream: usize,
    pub idx: usize,
    pub start: f64,
    pub end: f64,
    pub name: &'a str,
    pub process: &'a str,
}

/// Every pass of a bundle, in the bundle's order. `with_spans` sees each
/// pass while it still holds its spans (for trace.json's): they are given
/// up before its critical path is found (see [`PassView::load`]).
pub fn analyse(bundle: &Bundle, with_spans: &mut dyn FnMut(&PassView)) -> Vec<PassView> {
    bundle.passes.iter().map(|p| PassView::load(p, with_spans)).collect()
}

/// The span names whose fields the views read, beside those
/// [`crate::fields_read`] names (the assignment's `assign_job` and `job`
/// are hand-offs): the load keeps their text, and leaves every other
/// span's fields in its file for trace.json to read back.
const FIELDS_READ: [&str; 1] = [evaluator::RESOLVE];

impl PassView {
    /// Every view of the pass, computed while its spans are held; then
    /// `with_spans` sees it, and the spans are given up (`data.streams` is
    /// left empty) before the critical path and its predictions, whose
    /// graph is then built without them beside it (at 4.5M spans, half a
    /// gigabyte less at the peak). A page shows views, never spans.
    pub fn load(p: &PassDir, with_spans: &mut dyn FnMut(&PassView)) -> PassView {
        let (data, align) =
            crate::load(p, crate::Fields::Placed(&|n| crate::fields_read(n) || FIELDS_READ.contains(&n)));
        let extent = data.extent(&align).map(|(a, b)| (a as f64, b as f64));
        let evaluation_metric = crate::counters::evaluation_metric(data.run.as_ref(), &p.path);
        let mut v = PassView {
            name: p.name.clone(),
            dir: p.path.clone(),
            clean: layout::is_clean(&p.name),
            cold: layout::is_cold(&p.name),
            span_stats: span_stats(&data.streams),
            span_count: data.span_count(),
            data,
            align,
            extent,
            assignment: Assignment::default(),
            jobs: Section::Missing(layout::JOB_PHASES),
            timeline: None,
            nesting: Vec::new(),
            database: Database::Instrumented { auto_explain: Section::Missing(layout::AUTO_EXPLAIN) },
            network: None,
            cpu: Vec::new(),
            strace: Vec::new(),
            strace_lines: 0,
            evaluator: Section::Missing(layout::EVAL_DIR),
            // Walked below, once the views have read the spans.
            critical: Err(crate::path::PathError::NoRun),
            buys: Vec::new(),
            evaluation_metric,
        };
        v.assignment = assignment::walk(&v);
        v.jobs = jobs::read(&v.file(layout::JOB_PHASES));
        v.timeline = v.extent.map(|(t0, t1)| timeline::lanes(&v, t0, t1));
        v.nesting = nesting::fold(&v.data.streams);
        v.database = captures::database(&v);
        v.network = v.clean.then(|| captures::network(&v));
        if !v.clean {
            v.cpu = captures::cpu(&v);
            v.strace = captures::strace_files(&v);
            v.strace_lines = v.strace.iter().map(|f| f.1).sum();
        }
        v.evaluator = evaluator::read(&v);
        crate::phase("views");
        with_spans(&v);
        let (data, critical) = crate::path::critical_path(std::mem::take(&mut v.data), &v.align);
        v.data = data;
        match critical {
            Ok((g, p)) => {
                crate::phase("path: walked");
                v.buys = crate::path::whatif::buys(&g, &p, crate::over_runs::BUYS);
                crate::stats::own_from_path(&mut v.span_stats, &g);
                crate::phase("path: what would buy");
                v.critical = Ok(p);
            }
            Err(e) => v.critical = Err(e),
        }
        v
    }

    pub fn run(&self) -> Option<&RunInfo> {
        self.data.run.as_ref()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    pub fn spans(&self) -> impl Iterator<Item = ServerSpan<'_>> {
        self.data.streams.iter().enumerate().flat_map(move |(si, st)| {
            let off = self.align.offset_for(st) as f64;
            st.spans.iter().enumerate().map(move |(i, s)| ServerSpan {
                stream: si,
                idx: i,
                start: s.ts_us as f64 + off,
                end: s.end_us() as f64 + off,
                name: st.name(s),
                process: &st.process,
            })
        })
    }

    /// A span's field, as written.
    pub fn field(&self, stream: usize, idx: usize, key: &str) -> Option<serde_json::Value> {
        let st = &self.data.streams[stream];
        st.field(&st.spans[idx], key)
    }

    /// The job a span is of, as the contract reads it (`job_id`, or an older bundle's `job`).
    pub fn job(&self, stream: usize, idx: usize) -> Option<String> {
        let st = &self.data.streams[stream];
        evalbench_bundle::contract::job_key(st, &st.spans[idx])
    }

    /// The spans of the given (process, name) pairs, each list by start.
    pub fn by_name<'a>(&'a self, wanted: &[(&str, &str)]) -> HashMap<(&'a str, &'a str), Vec<ServerSpan<'a>>> {
        let mut m: HashMap<(&str, &str), Vec<ServerSpan<'_>>> = HashMap::new();
        for s in self.spans() {
            if wanted.contains(&(s.process, s.name)) {
                m.entry((s.process, s.name)).or_default().push(s);
            }
        }
        for v in m.values_mut() {
            v.sort_by(|a, b| a.start.total_cmp(&b.start));
        }
        m
    }
}
