//! Any bytes as the text of `perf script` (a bundle's profile may come as
//! text from another machine): folded as `decode perf` folds it, through
//! inferno's folder and our period counter, never a panic; what folds
//! sums to the samples its lines count.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("perf.txt");
    std::fs::write(&f, data).unwrap();
    if let Ok(folded) = evalbench_decode::perf::fold(&f) {
        let s = evalbench_decode::perf::summarize(&folded);
        let by_process: u64 = s.by_process.values().sum();
        assert_eq!(by_process, s.samples, "every sample is some process's");
        assert!(s.trace_cost_samples <= s.samples);
    }
}
