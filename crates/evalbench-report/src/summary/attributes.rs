//! The slow attributes in summary.txt's first lines: per instrumented pass
//! with nix's profile, the attributes with the largest share of nix's own
//! time (a share: instrumented timings are shapes, not durations) with the
//! call site where most of it went, and those with the most function calls.

use std::fmt::Write as _;

use evalbench_analyze::attributes::{AttributeShare, PassAttributes};

use crate::figures::grouped;

fn share(a: &AttributeShare) -> String {
    let site = a.site.as_deref().map(|s| format!(" at {s}")).unwrap_or_default();
    format!("{} {:.1}%{site}", a.attr, a.share * 100.0)
}

/// Two lines a pass: by share of nix's own time, and by function calls.
pub(crate) fn lines(t: &mut String, passes: &[PassAttributes]) {
    for p in passes {
        let by_share: Vec<String> = p.by_share.iter().map(share).collect();
        let _ = writeln!(
            t,
            "Slowest attributes in {} (of {}; share of nix's own time, a shape not a duration): {}",
            p.pass,
            p.attributes,
            by_share.join(", ")
        );
        let by_calls: Vec<String> =
            p.by_calls.iter().map(|a| format!("{} {}", a.attr, grouped(a.calls as f64))).collect();
        let _ = writeln!(t, "Most function calls in {} (exact): {}", p.pass, by_calls.join(", "));
    }
}
