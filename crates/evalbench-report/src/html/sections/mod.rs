//! The page's sections, one file each, in the order the benchmark's contract
//! lists them: the passes side by side, then per pass its runs as one
//! measurement (`runs`), and its median run's header, assignment walk,
//! jobs, spans, database, network and CPU.

mod answer;
mod assignment;
mod buys;
mod cpu;
mod database;
mod evaluator;
mod instructions;
mod jobs;
mod network;
mod overview;
mod path;
mod provenance;
mod runs;
mod sampled;
mod spans;

use std::fmt::Write;

use evalbench_analyze::view::{PassView, Section};

use super::esc::esc;
use super::Page;

pub use answer::answers;
pub use assignment::assignment;
pub use cpu::cpu;
pub use database::database;
pub use evaluator::{counters_side_by_side, evaluator};
pub use instructions::instructions;
pub use jobs::jobs;
pub use network::network;
pub use overview::{overview, pass_header};
pub use path::critical_path;
pub use provenance::provenance;
pub use runs::runs;
pub use spans::spans;

/// The capture (as run.json's `captures_off` names it) that writes `file`.
fn capture_of(file: &str) -> &'static str {
    match file {
        f if f.ends_with(".pcap") => "pcap",
        f if f.contains("pg_stat_statements") => "pg_stat_statements",
        f if f.contains("wait_samples") => "wait_samples",
        f if f.contains("auto_explain") => "auto_explain",
        f if f.contains("strace") => "strace",
        f if f.contains("nix-profile") || f.contains("nix-flame") => "nix-trace",
        f if f.contains("perf") || f.contains("flame") => "perf",
        _ => "",
    }
}

/// A file the pass lacks: switched off for the run (said so, with the
/// flag), or missing although it should be there.
fn missing(page: &mut Page, pass: &PassView, file: &str) {
    let what = capture_of(file);
    let off = pass
        .data
        .run
        .as_ref()
        .and_then(|r| r.runner.as_ref())
        .is_some_and(|r| r.captures_off.iter().any(|c| c == what));
    let shown = esc(&format!("{}/{file}", pass.name));
    let _ = if off {
        write!(
            page.body,
            "<p class=\"missing\">Not captured: {} was switched off for this run (<code>{shown}</code> was not \
                written).</p>",
            esc(what)
        )
    } else {
        write!(page.body, "<p class=\"missing\">Not captured in this pass: <code>{shown}</code> is missing.</p>")
    };
}

/// A section's data, or what the page says instead.
fn ready<'a, T>(page: &mut Page, p: &PassView, s: &'a Section<T>) -> Option<&'a T> {
    match s {
        Section::Ready(v) => Some(v),
        Section::Missing(file) => {
            missing(page, p, file);
            None
        }
        Section::Unreadable(e) => {
            let _ = write!(page.body, "<p class=\"missing\">{}</p>", esc(e));
            None
        }
    }
}

fn mode(p: &PassView) -> String {
    let kind = match evalbench_bundle::layout::PassKind::of(&p.name) {
        evalbench_bundle::layout::PassKind::Clean => "clean",
        evalbench_bundle::layout::PassKind::Instrumented => "instrumented (timings distorted)",
        evalbench_bundle::layout::PassKind::Counted => {
            "counted (nix under Valgrind: timings distorted, instructions counted)"
        }
    };
    format!("{}, {kind}", if p.cold { "cold" } else { "warm" })
}

fn offset_line(p: &PassView) -> String {
    match p.align.main() {
        Some(h) if h.aligned => format!(
            "Worker clock offset {:+} µs ± {} µs ({} upstream, {} downstream pairs).",
            h.offset_us,
            h.bound_us.unwrap_or(0),
            h.upstream_pairs,
            h.downstream_pairs
        ),
        Some(h) => format!("Worker clock unaligned: {}.", h.note.clone().unwrap_or_default()),
        None => "No worker spans: nothing to align.".into(),
    }
}
