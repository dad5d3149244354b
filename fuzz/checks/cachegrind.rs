//! Any bytes as Valgrind's cachegrind output (`<pass>/eval/cachegrind.*.out`
//! comes from other machines): read as a pass would be, never a panic; a
//! file that reads has a total equal to the sum of its functions' counts.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(c) = evalbench_bundle::instructions::parse(std::path::Path::new("cachegrind.0.out"), text) {
            let sum = c.functions.values().try_fold(0u64, |s, v| s.checked_add(*v));
            assert_eq!(sum, Some(c.instructions), "a file that reads adds up to its summary");
        }
    }
    let d = tempfile::tempdir().unwrap();
    let eval = d.path().join(evalbench_bundle::layout::EVAL_DIR);
    std::fs::create_dir_all(&eval).unwrap();
    std::fs::write(eval.join("cachegrind.0.out"), data).unwrap();
    std::fs::write(eval.join("cachegrind.0.child-7.out"), data).unwrap();
    if let Ok(Some(p)) = evalbench_bundle::instructions::read(d.path()) {
        assert_eq!(p.processes.len(), 1);
        assert_eq!(p.total(), p.processes[0].counted.instructions, "a child is never added");
    }
}
