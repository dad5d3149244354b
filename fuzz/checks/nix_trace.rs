//! Any bytes as a saved nix function trace or a Nix flamegraph profile
//! (bundles and traces come from other machines): read as `decode
//! nix-trace` and `decode nix-profile` read them, never a panic; a fold's
//! self times never exceed the traced time, and a profile's ranks add up
//! to its samples.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let mut fold = evalbench_decode::nix_trace::Fold::new();
    for (i, line) in String::from_utf8_lossy(data).lines().enumerate() {
        if i % 97 == 5 {
            fold.set_root(line);
        }
        fold.line(line);
    }
    let _ = fold.folded();
    let _ = evalbench_decode::nix_profile::NixProfile::of(&[&fold]);
    let _ = fold.by_root();
    // Where the trace's clock runs forward, the self times (each stack's
    // rounded to the µs) add up to no more than the traced time.
    let text = String::from_utf8_lossy(data);
    let times: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with("function-trace entered ") || l.starts_with("function-trace exited "))
        .filter_map(|l| l.trim_end().rsplit_once(" at ")?.1.parse().ok())
        .collect();
    if times.windows(2).all(|w| w[0] <= w[1]) {
        let stacks = fold.stacks();
        let self_us: u64 = stacks.iter().map(|s| s.self_us).sum();
        let traced_us = fold.traced_ns().div_ceil(1000);
        assert!(self_us <= traced_us + stacks.len() as u64, "self {self_us} µs against {traced_us} µs traced");
    }
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("trace.txt");
    std::fs::write(&f, data).unwrap();
    let _ = evalbench_decode::nix_trace::read(&f, Some(8), None);
    // As nix's own sampled profile: every sample is some stack's innermost
    // frame, so the positions' and the functions' self samples add up to
    // the samples (a frame with no position counts under no position).
    if let Ok(p) = evalbench_decode::eval_profiler::read(&f, None) {
        let summed: u64 = p.stacks.iter().map(|s| s.1).fold(0, u64::saturating_add);
        assert_eq!(summed, p.samples);
        let functions: u64 = p.by_function().iter().map(|r| r.self_samples).fold(0, u64::saturating_add);
        if p.samples < u64::MAX / 2 {
            assert_eq!(functions, p.samples, "every innermost frame has a function, or is an anonymous one");
            for r in p.by_position().iter().chain(p.by_function().iter()) {
                assert!(r.self_samples <= r.total_samples, "{r:?}");
            }
        }
        for f in p.stacks.iter().flat_map(|s| s.0.iter()) {
            let _ = evalbench_decode::eval_profiler::split_frame(f);
        }
    }
}
