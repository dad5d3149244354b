//! Any bytes as nix's statistics file (`<pass>/eval/nix-stats.*.json`
//! comes from other machines): read as a pass would be, never a panic; a
//! file that reads gives finite counters.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let mut c = evalbench_bundle::nix_stats::Counters::new();
        evalbench_bundle::nix_stats::flatten_into(&v, &mut c);
        assert!(c.values().all(|x| !x.is_nan()), "a sum of finite counters is never NaN");
        let mut calls = evalbench_bundle::nix_stats::Calls::default();
        evalbench_bundle::nix_stats::add_calls(&v, &mut calls, &evalbench_bundle::inputs::Inputs::default());
        let _ = evalbench_bundle::nix_stats::from_json(&evalbench_bundle::nix_stats::to_json(&c));
    }
    let d = tempfile::tempdir().unwrap();
    let eval = d.path().join(evalbench_bundle::layout::EVAL_DIR);
    std::fs::create_dir_all(&eval).unwrap();
    std::fs::write(eval.join("nix-stats.0.json"), data).unwrap();
    let _ = evalbench_bundle::nix_stats::read(d.path());
}
