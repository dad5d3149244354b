//! Any bytes as a PostgreSQL log with auto_explain plans (read from memory).
//!
//! The check itself is `fuzz/checks/auto_explain.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/auto_explain.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
