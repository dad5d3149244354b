//! Any bytes as a capture file through both stream decoders (read from
//! memory): an error or a result, never a panic, never an allocation sized
//! by a length field.
//!
//! The check itself is `fuzz/checks/pcap_decoders.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/pcap_decoders.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
