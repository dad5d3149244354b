//! Any bytes as the text of `perf script`, folded as `decode perf` folds it.
//!
//! The check itself is `fuzz/checks/perf_script.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/perf_script.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
