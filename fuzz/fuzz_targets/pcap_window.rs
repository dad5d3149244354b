//! Any bytes as a capture to cut to a window (the runner cuts tcpdump's
//! files, which a crash or a full disk can leave half-written): an error
//! or a cut, never a panic. A cut keeps the header and counts every record
//! once; the tail follower, fed in pieces, agrees on how many records are whole.
//!
//! The check itself is `fuzz/checks/pcap_window.rs`, which the workspace's tests
//! also run on this target's stored corpus.
#![no_main]

#[path = "../checks/pcap_window.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
