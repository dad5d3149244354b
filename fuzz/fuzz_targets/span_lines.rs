//! Any bytes as a span file: never a panic; whatever parses also survives
//! alignment, statistics and track layout; the fast line reader reads every
//! line as serde does, or leaves it to serde; fields left in the file are
//! found at the bytes that a plain read gives, through any buffer size.
//!
//! The check itself is `fuzz/checks/span_lines.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/span_lines.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
