//! The layer, exercised through a real subscriber stack and read back from disk.

use serde_json::Value;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

#[test]
fn writes_closed_spans_with_fields_ids_and_parents_despite_a_warn_console() {
    let dir = tempfile::tempdir().unwrap();
    let (layer, guard) = evalbench_trace::Builder::new().trace_dir(dir.path()).process("server").host("h1").build();
    let console = tracing_subscriber::fmt::layer().with_writer(std::io::sink).with_filter(LevelFilter::WARN);
    let subscriber = tracing_subscriber::registry().with(console).with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let outer = tracing::debug_span!(target: "gradient_graph::writer", "flush", batches = 2u64, rows =
            tracing::field::Empty);
        let _o = outer.enter();
        outer.record("rows", 100u64);
        {
            let inner = tracing::info_span!(target: "gradient_graph::writer", "record_one", drv = "a\"b\n");
            let _i = inner.enter();
            // Not ours: wrong target, and too verbose.
            let _x = tracing::info_span!(target: "other", "skipped").entered();
            let _t = tracing::trace_span!(target: "gradient_x", "too_verbose").entered();
        }
    });
    let path = guard.path().unwrap().to_path_buf();
    drop(guard);
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("server-{}.jsonl", std::process::id()));
    let spans = lines(&path);
    assert_eq!(spans.len(), 2, "{spans:?}");
    let inner = &spans[0];
    let outer = &spans[1];
    assert_eq!(inner["name"], "record_one");
    assert_eq!(inner["fields"]["drv"], "a\"b\n");
    assert_eq!(outer["name"], "flush");
    assert_eq!(outer["target"], "gradient_graph::writer");
    assert_eq!(outer["fields"]["batches"], 2);
    assert_eq!(outer["fields"]["rows"], 100, "a field given through record() is written");
    assert_eq!(outer["process"], "server");
    assert_eq!(outer["host"], "h1");
    assert_eq!(outer["pid"], std::process::id());
    assert_eq!(inner["parent"], outer["id"]);
    assert!(outer.get("parent").is_none());
    assert!(inner["thread"].as_u64().unwrap() > 0);
    // The child lies inside its parent to the microsecond.
    let (its, idur) = (inner["ts_us"].as_i64().unwrap(), inner["dur_us"].as_i64().unwrap());
    let (ots, odur) = (outer["ts_us"].as_i64().unwrap(), outer["dur_us"].as_i64().unwrap());
    assert!(its >= ots && its + idur <= ots + odur);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    assert!((now - ots).abs() < 60_000_000, "ts_us is Unix microseconds");
}

#[test]
fn a_full_queue_drops_and_counts_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let (layer, guard) = evalbench_trace::Builder::new().trace_dir(dir.path()).process("w").queue_capacity(1).build();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..20_000u64 {
            let _s = tracing::debug_span!(target: "gradient", "job", n = i).entered();
        }
    });
    let dropped = guard.dropped();
    let path = guard.path().unwrap().to_path_buf();
    drop(guard);
    assert!(dropped > 0, "a queue of one cannot keep 20000 spans");
    let all = lines(&path);
    let written = all.iter().filter(|l| l.get("name").is_some()).count() as u64;
    let reported = all.iter().filter_map(|l| l.get("dropped_spans")).map(|d| d.as_u64().unwrap()).max();
    assert_eq!(reported, Some(dropped));
    assert_eq!(written + dropped, 20_000, "every span is either written or counted");
}

#[test]
fn an_unwritable_trace_dir_warns_and_the_service_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let (layer, guard) = evalbench_trace::Builder::new().trace_dir(file.join("sub")).build();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let _s = tracing::debug_span!(target: "gradient", "job").entered();
    });
    assert!(guard.path().is_none());
    guard.flush();
}

#[test]
fn flush_puts_spans_on_disk_while_the_service_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (layer, guard) =
        evalbench_trace::Builder::new().trace_dir(dir.path()).process("eval").clock_skew_us(-5_000_000).build();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let _s =
            tracing::debug_span!(target: "gradient_eval", "resolve", attr = "packages.x86_64-linux.hello").entered();
    });
    guard.flush();
    let spans = lines(guard.path().unwrap());
    assert_eq!(spans.len(), 1);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    let ts = spans[0]["ts_us"].as_i64().unwrap();
    assert!(now - ts >= 5_000_000 && now - ts < 6_000_000, "the injected skew moves timestamps");
}

#[test]
fn spans_closed_and_opened_at_one_instant_are_back_to_back() {
    let dir = tempfile::tempdir().unwrap();
    let (layer, guard) = evalbench_trace::Builder::new().trace_dir(dir.path()).process("eval").build();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let mut on = tracing::debug_span!(target: "gradient_eval", "resolve", attr = 0u64);
        for i in 1..50u64 {
            std::thread::sleep(std::time::Duration::from_micros(200));
            on = evalbench_trace::at_one_instant(|| {
                drop(on);
                // Work between the close and the open is no one's.
                std::thread::sleep(std::time::Duration::from_micros(300));
                tracing::debug_span!(target: "gradient_eval", "resolve", attr = i)
            });
        }
        // Outside the closure the clock runs again.
        let t = tracing::debug_span!(target: "gradient_eval", "after");
        std::thread::sleep(std::time::Duration::from_millis(2));
        drop(t);
    });
    let path = guard.path().unwrap().to_path_buf();
    drop(guard);
    let spans = lines(&path);
    let mut resolves: Vec<&Value> = spans.iter().filter(|s| s["name"] == "resolve").collect();
    resolves.sort_by_key(|s| s["fields"]["attr"].as_u64());
    assert_eq!(resolves.len(), 50);
    for w in resolves.windows(2) {
        let end = w[0]["ts_us"].as_i64().unwrap() + w[0]["dur_us"].as_i64().unwrap();
        assert_eq!(w[1]["ts_us"].as_i64().unwrap(), end, "{:?}", w);
        assert!(w[0]["dur_us"].as_i64().unwrap() >= 200);
    }
    let after = spans.iter().find(|s| s["name"] == "after").unwrap();
    assert!(after["dur_us"].as_i64().unwrap() >= 2000, "{after}");
}

#[test]
fn spans_pinned_to_another_process_s_clock_carry_its_times_with_the_skew() {
    let dir = tempfile::tempdir().unwrap();
    let (layer, guard) =
        evalbench_trace::Builder::new().trace_dir(dir.path()).process("eval").clock_skew_us(-250).build();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as i64;
    // Times nix wrote a little before the reader got to them.
    let (begin, end) = (now + 1_000, now + 1_730);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        let s = evalbench_trace::at_wall_us(
            begin,
            || tracing::debug_span!(target: "gradient_eval", "resolve", attr = 1u64),
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        evalbench_trace::at_wall_us(end, || drop(s));
    });
    let path = guard.path().unwrap().to_path_buf();
    drop(guard);
    let spans = lines(&path);
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["ts_us"].as_i64().unwrap(), begin - 250, "nix's time, on the layer's skewed clock");
    assert_eq!(spans[0]["dur_us"].as_i64().unwrap(), 730, "not the 5 ms the reader took");
}
