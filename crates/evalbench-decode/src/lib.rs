//! `evalbench-decode`: every capture of a bundle turned into records. Each
//! decoder reads its file as a stream, keeps memory bounded by what is open
//! (connections, statements in flight), never by what a length field claims,
//! and reports what it could not read instead of guessing.

pub mod error;
pub mod eval_profiler;
pub mod explain;
pub mod framer;
pub mod nix_profile;
pub mod nix_trace;
pub mod normalize;
pub mod packet;
pub mod pcap_window;
pub mod perf;
pub mod pg;
pub mod plan;
pub mod rank;
pub mod sniff;
pub mod stats;
pub mod strace;
pub mod tcp;
pub mod ws;

pub use error::DecodeError;
