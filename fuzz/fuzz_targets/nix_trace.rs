//! Any bytes as a saved nix function trace or a Nix flamegraph profile
//! (bundles and traces come from other machines): read as `decode
//! nix-trace` reads them, never a panic; a fold's self times never exceed
//! the traced time.
//!
//! The check itself is `fuzz/checks/nix_trace.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/nix_trace.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
