//! Any text as SQL through the normalizer (statements from captures and
//! logs of other machines): never a panic, and normalizing is idempotent.
//!
//! The check itself is `fuzz/checks/sql_normalize.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/sql_normalize.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
