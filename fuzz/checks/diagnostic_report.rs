//! Any bytes as a Gradient diagnostic report (a SQLite file from another
//! machine): read with bounds as `summarize` reads one, never a panic, and
//! never written to; a report that reads becomes a production evaluation
//! whose summary, page and comparison with itself are made without a panic
//! (hostile timestamps and phase times included), every time finite.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("report.db");
    std::fs::write(&path, data).unwrap();
    let limits = evalbench_diagnostic::Limits { max_bytes: 1 << 24, max_rows: 100_000, max_steps: 20_000_000 };
    match evalbench_diagnostic::read(&path, limits) {
        Ok(r) => {
            let p = evalbench_analyze::production::of_report(&r);
            assert!(p.stages.iter().all(|s| s.seconds.is_finite() && s.share.is_finite()), "{:?}", p.stages);
            let text = evalbench_report::production::summary_text(&p);
            let page = evalbench_report::production::html::page(&p, &text);
            assert!(!page.contains("<script"), "a report's text reached the page unescaped");
            let c = evalbench_analyze::production::compare::compare(&p, &p);
            assert!(c.counters.iter().all(|v| v.kind == evalbench_analyze::verdict::Kind::Same), "A against A moved");
            let _ = evalbench_report::production::compare::text(&c);
        }
        Err(e) => assert_eq!(e.file, path, "the error names the file: {e}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), data, "reading a report wrote to it");
}
