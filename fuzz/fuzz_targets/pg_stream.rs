//! Any bytes as the two directions of a PostgreSQL connection, cut into
//! segments where the input says.
//!
//! The check itself is `fuzz/checks/pg_stream.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/pg_stream.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
