//! Any bytes as the tar inside a bundle archive (gzipped here, so the
//! fuzzer explores tar headers, not gzip checksums): an error or a tree
//! inside the destination, never a panic, never a file outside it.
//!
//! The check itself is `fuzz/checks/archive.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/archive.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
