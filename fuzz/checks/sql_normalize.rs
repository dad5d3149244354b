//! Any text as SQL through the normalizer (statements from captures and
//! logs of other machines): never a panic, and normalizing is idempotent.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    if let Ok(sql) = std::str::from_utf8(data) {
        let once = evalbench_decode::normalize::normalize_sql(sql);
        let _ = evalbench_decode::normalize::normalize_sql(&once);
    }
}
