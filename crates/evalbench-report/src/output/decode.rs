//! `evalbench decode`: the text of each decoder's summary (`--json` prints
//! the records themselves; that stays with the command, which streams them).

use std::fmt::Write;

use evalbench_analyze::view::records::{ExplainSummary, PgSummary, StraceSummary};
use evalbench_analyze::StatementLatency;

/// PostgreSQL from the wire: statements by total time, then the capture's summary.
pub fn pg(rows: &[StatementLatency], summary: &PgSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>7} {:>12} {:>10} {:>10} {:>10} {:>6}  statement",
        "count", "total ms", "p50 ms", "p95 ms", "max ms", "errors"
    );
    let ms = |us: i64| us as f64 / 1000.0;
    for r in rows {
        let _ = writeln!(
            t,
            "{:>7} {:>12.3} {:>10.3} {:>10.3} {:>10.3} {:>6}  {}",
            r.count,
            ms(r.total_us),
            ms(r.p50_us),
            ms(r.p95_us),
            ms(r.max_us),
            r.errors,
            r.sql.chars().take(120).collect::<String>()
        );
    }
    let _ = writeln!(t, "\n{}", serde_json::to_string_pretty(summary).expect("serializes"));
    t
}

/// Syscalls: counts and times per syscall, then the slowest calls.
pub fn strace(s: &StraceSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} calls in {} threads ({} files), {} signals, {} exits, {} unparsed lines",
        s.calls, s.threads, s.files, s.signals, s.exits, s.unparsed_lines
    );
    let _ = writeln!(t, "{:>8} {:>12} {:>10} {:>7}  syscall", "count", "total ms", "max ms", "errors");
    for c in s.by_syscall.iter().take(30) {
        let _ = writeln!(
            t,
            "{:>8} {:>12.3} {:>10.3} {:>7}  {}",
            c.count,
            c.total_us as f64 / 1000.0,
            c.max_us as f64 / 1000.0,
            c.errors,
            c.name
        );
    }
    let _ = writeln!(t, "slowest calls:");
    for c in s.slowest.iter().take(10) {
        let _ = writeln!(
            t,
            "  {:>10.3} ms  tid {}  {}({}) = {}",
            c.dur_us as f64 / 1000.0,
            c.tid,
            c.name,
            c.args.chars().take(100).collect::<String>(),
            c.ret
        );
    }
    t
}

/// auto_explain plans by statement.
pub fn auto_explain(s: &ExplainSummary) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "{} ({} malformed)", super::count(s.plans as usize, "plan"), s.malformed);
    let _ = writeln!(
        t,
        "{:>7} {:>12} {:>10}  statement / its plans: runs, fingerprint, nodes",
        "plans", "total ms", "max ms"
    );
    for st in s.by_statement.iter().take(30) {
        let _ = writeln!(
            t,
            "{:>7} {:>12.3} {:>10.3}  {}",
            st.count,
            st.total_ms,
            st.max_ms,
            st.statement.chars().take(120).collect::<String>()
        );
        for p in st.plans.iter().take(5) {
            let nodes: Vec<String> = p.nodes.iter().map(|n| n.label()).collect();
            let _ = writeln!(
                t,
                "{:>32}  {} {}",
                p.count,
                p.fingerprint,
                nodes.join(" > ").chars().take(100).collect::<String>()
            );
        }
    }
    t
}
