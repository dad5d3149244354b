//! Any bytes as an strace output file (read from memory: no file per run).
//!
//! The check itself is `fuzz/checks/strace.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/strace.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
