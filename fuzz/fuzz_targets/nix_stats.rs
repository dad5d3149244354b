//! Any bytes as nix's statistics file (`<pass>/eval/nix-stats.*.json`
//! comes from other machines): read as a pass would be, never a panic; a
//! file that reads gives finite counters.
//!
//! The check itself is `fuzz/checks/nix_stats.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/nix_stats.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
