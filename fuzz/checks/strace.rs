//! Any bytes as an strace output file (read from memory: no file per run).

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let _ = evalbench_decode::strace::decode_from(data, 42, "fuzz");
}
