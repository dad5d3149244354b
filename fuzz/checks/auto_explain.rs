//! Any bytes as a PostgreSQL log with auto_explain plans (read from memory).

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let _ = evalbench_decode::explain::decode_from(data, "fuzz", &mut |_| {});
}
