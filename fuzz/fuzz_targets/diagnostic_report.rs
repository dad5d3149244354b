//! Any bytes as a Gradient diagnostic report (SQLite), read as `summarize`
//! reads one: never a panic, never a write; what reads is summarized.
//!
//! The check itself is `fuzz/checks/diagnostic_report.rs`, which the workspace's
//! tests also run on this target's stored corpus.
#![no_main]

#[path = "../checks/diagnostic_report.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
