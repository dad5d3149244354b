//! Each fuzz target's check, one module each, as a function of the input.
//!
//! A target (`fuzz/fuzz_targets/NAME.rs`) includes its one module; the
//! workspace's test `fuzz_corpora` includes them all and runs each on its
//! target's stored corpus, so what the fuzzer once found stays fixed
//! without the nightly toolchain and cargo-fuzz, which CI does not have.

pub mod archive;
pub mod auto_explain;
pub mod cachegrind;
pub mod diagnostic_report;
pub mod nix_stats;
pub mod nix_trace;
pub mod pcap_decoders;
pub mod pcap_window;
pub mod perf_script;
pub mod pg_stream;
pub mod plan_fingerprint;
pub mod span_lines;
pub mod sql_normalize;
pub mod strace;
