//! nix's instructions in summary.txt: a line per counted pass in the
//! answer (its count, spread and phases), and a section of its top
//! functions after nix's counters. The figures are `analyze::instructions`'.

use std::fmt::Write as _;

use evalbench_analyze::instructions::CountedPass;

use crate::figures::grouped;

/// `cold-counted nix executed 557,363,142 instructions (one run, Valgrind):
/// lock 72,453,098, discover 73,179,539, evaluate 411,730,505; starting
/// (the dynamic loader) 115,959,158 of them`.
pub fn line(c: &CountedPass) -> String {
    let runs = if c.runs.len() > 1 {
        format!("median of {} runs, spread {:.4}%", c.runs.len(), c.spread_pct)
    } else {
        "one run".to_string()
    };
    format!(
        "{:<11} nix executed {} instructions ({runs}, Valgrind): {}; starting (the dynamic loader) {} of them",
        c.pass,
        grouped(c.median.round()),
        phases(c),
        grouped(c.loader.round())
    )
}

/// `lock 72,453,098, discover 73,179,539, evaluate 411,730,505`: the
/// phases' medians, as summary.txt and the page give them.
pub(crate) fn phases(c: &CountedPass) -> String {
    c.phases.iter().map(|(ph, n)| format!("{} {}", ph.as_str(), grouped(n.round()))).collect::<Vec<_>>().join(", ")
}

/// The function names as the section shows them (the JSON keeps them whole).
const NAME: usize = 70;

pub fn section(t: &mut String, passes: &[CountedPass]) {
    for c in passes {
        let _ = writeln!(t);
        let _ = writeln!(
            t,
            "nix's instructions in {} by function (cachegrind's self counts, the top {}):",
            c.pass,
            c.top.len()
        );
        let _ = writeln!(t, "  {:<70} {:<16} {:>14} {:>7}", "function", "from", "instructions", "share");
        for f in &c.top {
            let name = crate::instructions::short(&f.function, NAME);
            let _ = writeln!(
                t,
                "  {:<70} {:<16} {:>14} {:>6.1}%",
                name,
                f.from.as_str(),
                grouped(f.instructions.round()),
                f.share_pct
            );
        }
    }
}
