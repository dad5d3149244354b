//! Any bytes as Valgrind's cachegrind output (a counted pass's
//! `eval/cachegrind.*.out` comes from other machines): read as a pass
//! would be, never a panic.
//!
//! The check itself is `fuzz/checks/cachegrind.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/cachegrind.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
