//! Cost per closed span with two integer fields, measured side by side in one
//! run: no subscriber, our layer, and `tracing_subscriber::fmt().json()` with
//! span-close events written to a file. Prints medians and ratios.
//!
//! `cargo bench -p evalbench-trace --bench layer_cost`

use std::sync::Mutex;
use std::time::Instant;

use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::prelude::*;

const SPANS: u64 = 200_000;
const ROUNDS: usize = 7;

fn workload() {
    for i in 0..SPANS {
        let span = tracing::debug_span!(target: "gradient_graph::writer", "flush", batches = i, rows = 100u64);
        let _e = span.enter();
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (mut none, mut ours, mut ours_e2e, mut fmt) = (vec![], vec![], vec![], vec![]);
    for round in 0..ROUNDS {
        // No subscriber: the floor every instrumented service pays anyway.
        let t = Instant::now();
        tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), workload);
        none.push(t.elapsed().as_nanos() as f64 / SPANS as f64);

        // Ours: the calling thread's cost, then the cost until every line is on disk.
        let sub_dir = dir.path().join(format!("ours{round}"));
        let (layer, guard) = evalbench_trace::Builder::new()
            .trace_dir(&sub_dir)
            .process("bench")
            .queue_capacity(SPANS as usize + 1)
            .build();
        let subscriber = tracing_subscriber::registry().with(layer);
        let t = Instant::now();
        tracing::subscriber::with_default(subscriber, workload);
        ours.push(t.elapsed().as_nanos() as f64 / SPANS as f64);
        guard.flush();
        ours_e2e.push(t.elapsed().as_nanos() as f64 / SPANS as f64);
        assert_eq!(guard.dropped(), 0, "the bench queue must hold every span");
        drop(guard);

        // fmt().json() with close events, to a file: the usual way to get span timings out.
        let file = std::fs::File::create(dir.path().join(format!("fmt{round}.json"))).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::DEBUG)
            .with_span_events(FmtSpan::CLOSE)
            .with_writer(Mutex::new(file))
            .finish();
        let t = Instant::now();
        tracing::subscriber::with_default(subscriber, workload);
        fmt.push(t.elapsed().as_nanos() as f64 / SPANS as f64);
    }
    let (n, o, oe, f) = (median(none), median(ours), median(ours_e2e), median(fmt));
    println!("layer_cost: {SPANS} spans x {ROUNDS} rounds, median ns per closed span (two integer fields)");
    println!("  no subscriber              {n:8.1} ns");
    println!("  evalbench-trace (caller)   {o:8.1} ns");
    println!("  evalbench-trace (on disk)  {oe:8.1} ns");
    println!("  fmt().json() CLOSE -> file {f:8.1} ns");
    println!("  ratio ours/fmt (caller)    {:8.3}   (target <= 0.333)", o / f);
    println!("  ratio ours/fmt (on disk)   {:8.3}", oe / f);
}
