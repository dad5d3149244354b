//! `evalbench-bundle`: the bundle on disk is the interface between capture and
//! analysis, so this crate owns its layout and its reading.
//!
//! A bundle is a directory, or a `.tar.gz` of one, holding one directory per
//! pass (`cold-clean`, `warm-clean`, `cold-instrumented`, `warm-instrumented`,
//! or any other name that holds a `run.json` or a `trace/`). Bundles come from
//! other machines: archives are read as one stream and every entry is checked
//! before anything is written (no absolute paths, no `..`, no link that can
//! leave the tree, a cap on the unpacked size).
//!
//! Nothing here interprets timings; that is `evalbench-analyze`'s job.

mod archive;
mod atomic;
pub mod contract;
mod error;
pub mod fnv;
pub mod inputs;
pub mod instructions;
pub mod layout;
pub mod manifest;
pub mod nix_stats;
mod open;
pub mod outcome;
pub mod ownership;
pub mod provenance;
pub mod run_info;
pub mod spans;
pub mod suggest;

pub mod num;
pub use archive::{pack_dir, unpack, Limits};
pub use atomic::{copy_atomic, persist, readable_temp, write_atomic, write_record};
pub use error::{BundleError, Refusal};
pub use fnv::Fnv;
pub use open::{Bundle, PassDir};
pub use outcome::{Ended, Outcome};
pub use provenance::Provenance;
pub use run_info::{CapturePorts, MachineState, OutsideWindow, RunInfo, RunnerInfo, StatusChange};
pub use spans::{
    fold_trace_dir, read_span_file, read_trace_dir, Malformed, Span, SpanFile, SpanText, Stream, TraceRead,
    CHUNK as TRACE_CHUNK,
};
