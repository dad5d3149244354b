//! A production evaluation (Gradient's diagnostic report): its summary as
//! text and JSON, its page, and two of them compared. The model is
//! analyze's `production`; nothing is computed here but the words.

pub mod compare;
pub mod html;
mod text;

pub use text::{summary_json, summary_text};

use evalbench_analyze::production::Load;

/// Seconds as every figure of a production summary shows them.
pub(crate) fn secs(s: f64) -> String {
    format!("{s:.3} s")
}

pub(crate) fn opt_secs(s: Option<f64>) -> String {
    s.map_or_else(|| "unknown".to_string(), secs)
}

/// A worker's load in a few words: `CPU 45% mean (55% peak), 12000 of 16000 MiB free, 1 job; 10 samples`.
pub(crate) fn load_words(l: &Load) -> String {
    let mut parts = Vec::new();
    if let Some(c) = l.cpu_mean_pct {
        let peak =
            l.cpu_max_pct.filter(|p| (p - c).abs() >= 0.5).map(|p| format!(" ({p:.0}% peak)")).unwrap_or_default();
        parts.push(format!("CPU {c:.0}% mean{peak}"));
    }
    match (l.ram_free_min_mb, l.ram_total_mb) {
        (Some(f), Some(t)) => parts.push(format!("{f} of {t} MiB free at least")),
        (Some(f), None) => parts.push(format!("{f} MiB free at least")),
        _ => {}
    }
    if let Some(j) = l.assigned_jobs_max {
        parts.push(format!("{j} job{} at most", if j == 1 { "" } else { "s" }));
    }
    let flags: Vec<&str> = [(l.busy, "busy"), (l.short_of_memory, "short of memory")]
        .iter()
        .filter(|(f, _)| *f)
        .map(|(_, w)| *w)
        .collect();
    let samples = if l.nearest {
        "the nearest sample".to_string()
    } else {
        format!("{} sample{}", l.samples, if l.samples == 1 { "" } else { "s" })
    };
    let mut s = format!("{}; {samples}", parts.join(", "));
    if !flags.is_empty() {
        s.push_str(&format!(": {}", flags.join(", ")));
    }
    s
}
