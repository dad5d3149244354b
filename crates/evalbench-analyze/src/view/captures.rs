//! The decoded captures of a pass: PostgreSQL (statistics, wait samples,
//! wire latencies or auto_explain plans), `/proto` traffic, perf profiles.

use std::collections::HashMap;

use evalbench_bundle::layout;
use evalbench_decode::explain::ExplainSummary;
use evalbench_decode::stats::Statement;
use evalbench_decode::ws::WsSummary;

use super::{PassView, Section};
use crate::latency::StatementLatency;

/// Busy backends at one sample: (µs, [(state or wait event, backends)]).
pub type WaitColumn = (f64, Vec<(String, f64)>);

#[derive(Debug)]
pub enum Database {
    /// Clean passes: the statistics and the wire, undisturbed.
    Clean {
        statements: Section<Vec<Statement>>,
        wait_samples: Section<Vec<WaitColumn>>,
        latencies: Section<(evalbench_decode::pg::PgSummary, Vec<StatementLatency>)>,
    },
    /// Instrumented passes: the plans.
    Instrumented { auto_explain: Section<ExplainSummary> },
}

/// One host's CPU profile.
#[derive(Debug)]
pub struct CpuProfile {
    /// `server` or `worker`.
    pub host: &'static str,
    /// What the profile covers, in words.
    pub what: &'static str,
    /// inferno's interactive graph, relative to the pass directory.
    pub svg: &'static str,
    pub svg_exists: bool,
    /// Folded stacks and their samples; Missing when `flame.folded` is.
    pub stacks: Section<Vec<(Vec<String>, f64)>>,
    /// The stacks' samples added up (0 without stacks).
    pub samples: f64,
}

fn decoded<T>(r: Result<T, evalbench_decode::DecodeError>) -> Section<T> {
    match r {
        Ok(v) => Section::Ready(v),
        Err(e) => Section::Unreadable(e.to_string()),
    }
}

fn port(p: &PassView, which: fn(&evalbench_bundle::CapturePorts) -> u16) -> Option<u16> {
    p.run().and_then(|r| r.runner.as_ref()).and_then(|r| r.capture_ports.as_ref()).map(which)
}

pub(super) fn database(p: &PassView) -> Database {
    if !p.clean {
        let auto_explain = if p.file(layout::AUTO_EXPLAIN).exists() {
            decoded(evalbench_decode::explain::decode(&p.file(layout::AUTO_EXPLAIN), &mut |_| {}))
        } else {
            Section::Missing(layout::AUTO_EXPLAIN)
        };
        return Database::Instrumented { auto_explain };
    }
    let statements = match evalbench_decode::stats::statements(&p.file(layout::PG_STAT_STATEMENTS)) {
        Ok(rows) => Section::Ready(rows),
        Err(_) if !p.file(layout::PG_STAT_STATEMENTS).exists() => Section::Missing(layout::PG_STAT_STATEMENTS),
        Err(e) => Section::Unreadable(e.to_string()),
    };
    let wait_samples = match evalbench_decode::stats::wait_samples(&p.file(layout::WAIT_SAMPLES)) {
        Ok(w) => Section::Ready(wait_columns(&w)),
        Err(_) if !p.file(layout::WAIT_SAMPLES).exists() => Section::Missing(layout::WAIT_SAMPLES),
        Err(e) => Section::Unreadable(e.to_string()),
    };
    let latencies = if p.file(layout::PG_PCAP).exists() {
        decoded(crate::latency::from_capture(&p.file(layout::PG_PCAP), port(p, |c| c.pg), &mut |_| {}))
    } else {
        Section::Missing(layout::PG_PCAP)
    };
    Database::Clean { statements, wait_samples, latencies }
}

/// Backends counted by wait event (`type:event`), or by state when waiting
/// on nothing.
fn wait_columns(w: &evalbench_decode::stats::WaitSamples) -> Vec<WaitColumn> {
    w.samples
        .iter()
        .map(|s| {
            let mut m: HashMap<String, f64> = HashMap::new();
            for b in &s.backends {
                let k = match (b.wait_event_type.as_deref(), b.wait_event.as_deref()) {
                    (Some(t), Some(e)) => format!("{t}:{e}"),
                    _ => b.state.clone().unwrap_or_else(|| "?".into()),
                };
                *m.entry(k).or_default() += 1.0;
            }
            let mut ks: Vec<(String, f64)> = m.into_iter().collect();
            ks.sort_by(|a, b| a.0.cmp(&b.0));
            (s.ts_us as f64, ks)
        })
        .collect()
}

pub(super) fn network(p: &PassView) -> Section<WsSummary> {
    if !p.file(layout::PROTO_PCAP).exists() {
        return Section::Missing(layout::PROTO_PCAP);
    }
    decoded(evalbench_decode::ws::decode_file(&p.file(layout::PROTO_PCAP), port(p, |c| c.proto), &mut |_| {}))
}

/// The strace files of the worker, by name: (name, lines, bytes). A file
/// that cannot be read counts no lines.
pub(super) fn strace_files(p: &PassView) -> Vec<(String, u64, u64)> {
    let Ok(dir) = std::fs::read_dir(p.file(layout::WORKER_STRACE_DIR)) else { return Vec::new() };
    let mut out: Vec<(String, u64, u64)> = dir
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(layout::STRACE_FILE_PREFIX) && e.path().is_file())
        .map(|e| {
            let lines = std::fs::read(e.path()).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() as u64);
            (e.file_name().to_string_lossy().into_owned(), lines, e.metadata().map_or(0, |m| m.len()))
        })
        .collect();
    out.sort();
    out
}

pub(super) fn cpu(p: &PassView) -> Vec<CpuProfile> {
    [
        ("server", layout::FLAME_FOLDED, layout::FLAME_SVG, "server host"),
        ("worker", layout::WORKER_FLAME_FOLDED, layout::WORKER_FLAME_SVG, "worker host, eval subprocess included"),
    ]
    .into_iter()
    .map(|(host, folded, svg, what)| {
        let stacks = match std::fs::read_to_string(p.file(folded)) {
            Ok(text) => Section::Ready(folded_stacks(&text)),
            Err(_) => Section::Missing(svg),
        };
        let samples = match &stacks {
            Section::Ready(v) => v.iter().map(|s| s.1).sum(),
            _ => 0.0,
        };
        CpuProfile { host, what, svg, svg_exists: p.file(svg).exists(), stacks, samples }
    })
    .collect()
}

/// inferno's folded lines (`frame;frame N`) as stacks and weights.
pub(super) fn folded_stacks(text: &str) -> Vec<(Vec<String>, f64)> {
    text.lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.split(';').map(String::from).collect(), n.trim().parse().ok()?))
        })
        .collect()
}
