//! `evalbench-lab`: the reference pipeline evalbench measures out of the box.
//!
//! The real CI (Gradient) needs the Nix C API and cannot be built here, so
//! the lab has its shape at a small size: a real PostgreSQL, a server with
//! the Gradient HTTP API subset and `/proto` over WebSocket, workers that
//! clone the project's git repository and run an eval subprocess with the
//! real `nix`, every span of the benchmark's contract at the place its name
//! says. When run
//! as root, server and worker are two hosts (network namespaces joined by a
//! veth pair); otherwise they share loopback.

mod config;
pub mod control;
mod error;
pub mod eval;
pub mod flake;
pub mod flake_nixpkgs;
pub mod msg;
pub mod netns;
pub mod pg;
pub mod prune;
pub mod server;
pub mod setting;
pub mod shape;
pub mod state;
mod worker;

pub use worker::work;

pub use error::LabError;

pub use state::{LabState, PassOutput};

/// Spans of the lab's own processes (server, worker, eval) as the runner asked, by environment.
pub fn init_tracing() -> evalbench_trace::TraceGuard {
    use tracing_subscriber::prelude::*;
    let (layer, guard) = evalbench_trace::Builder::from_env().build();
    let _ = tracing_subscriber::registry().with(layer).try_init();
    guard
}
