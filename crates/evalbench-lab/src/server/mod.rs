//! The lab's server: the Gradient HTTP API subset, `/proto` for workers, a
//! scheduler, job events, and a graph writer behind a mailbox, each at the
//! place the span names of the benchmark's contract say. In three layers:
//! the transport (`api` for HTTP, `proto` for the workers' WebSocket:
//! decode, dispatch, reply), the service (`service`, `sched`, `graph`: what
//! each request and message does, inside its span), and the store
//! (`store`: every statement a named method). Errors are `ServerError`.

mod api;
pub mod db;
mod error;
mod graph;
mod proto;
mod report;
mod report_rows;
mod sched;
mod service;
mod store;
pub mod walks;

pub use error::ServerError;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::LabError;
use tokio::sync::{mpsc, Mutex, Notify};
use tokio_postgres::{Client, NoTls};

use crate::msg::ToWorker;

pub struct Shared {
    pub store: store::Store,
    pub workers: Mutex<HashMap<String, mpsc::UnboundedSender<ToWorker>>>,
    pub wake: Notify,
    pub graph: mpsc::UnboundedSender<graph::Batch>,
    pub next_id: AtomicU64,
    pub provision: db::Provision,
    /// The form of every recursive walk (`--lab-setting graph_walk`).
    pub graph_walk: crate::setting::GraphWalk,
}

/// Where `lab server` reads its database URL (which holds a password): the
/// environment, never its command line.
pub const ENV_DATABASE: &str = "EVALBENCH_LAB_DATABASE_URL";

async fn connect(url: &str) -> Result<Client, LabError> {
    let (client, conn) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| LabError::Connect { url: crate::pg::redacted(url), source: e.into() })?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("lab server: database connection: {e}");
        }
    });
    Ok(client)
}

pub fn serve(
    listen: SocketAddr,
    proto_listen: Option<SocketAddr>,
    database: &str,
    provision_file: &std::path::Path,
    graph_walk: crate::setting::GraphWalk,
) -> Result<(), LabError> {
    let text = std::fs::read_to_string(provision_file).map_err(LabError::io(provision_file))?;
    let provision: db::Provision =
        serde_json::from_str(&text).map_err(|source| LabError::Parse { path: provision_file.to_path_buf(), source })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(LabError::Runtime)?;
    rt.block_on(async move {
        let store = store::Store::new(connect(database).await?);
        store.migrate_and_provision(&provision).await.map_err(LabError::Provision)?;
        let graph_db = connect(database).await?;
        let (graph_tx, graph_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            store,
            workers: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            graph: graph_tx,
            next_id: AtomicU64::new(1),
            provision,
            graph_walk,
        });
        tokio::spawn(graph::run(graph_db, graph_rx));
        tokio::spawn(sched::run(shared.clone()));
        let app = api::router(shared.clone());
        use axum::serve::ListenerExt;
        // Small /proto frames back to back must not wait for delayed ACKs (Nagle).
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| LabError::Listen { addr: listen.to_string(), source })?
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        eprintln!("lab server: listening on {listen}");
        if let Some(p) = proto_listen {
            let second = tokio::net::TcpListener::bind(p)
                .await
                .map_err(|source| LabError::Listen { addr: p.to_string(), source })?
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            let app = api::router(shared.clone());
            tokio::spawn(async move {
                let _ = axum::serve(second, app).await;
            });
        }
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(LabError::Serve)?;
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            })
            .await
            .map_err(LabError::Serve)
    })?;
    // The runtime is gone: every span is closed; the caller's guard flushes them.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(())
}
