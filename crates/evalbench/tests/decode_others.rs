//! The other decoders against real peers: WebSocket between a real client
//! and server over IPv6 loopback (captured with `-i any`, so Linux cooked
//! frames, and converted to pcapng), reassembly of that real stream under
//! reordering, duplication and splitting, strace and perf of real process
//! trees, and auto_explain plans from a real PostgreSQL in both formats.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const SIZES: [usize; 6] = [10, 200, 3000, 70_000, 5, 125];

async fn websocket_traffic(port: u16) {
    let listener = tokio::net::TcpListener::bind(("::1", port)).await.unwrap();
    let server = tokio::spawn(async move {
        let (s, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(s).await.unwrap();
        while let Some(Ok(m)) = ws.next().await {
            if let Message::Binary(b) = m {
                // Answer each message with a small one, as the CI server does.
                ws.send(Message::Binary(vec![7u8; b.len() % 50 + 1].into())).await.unwrap();
            }
        }
    });
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://[::1]:{port}/proto")).await.unwrap();
    for n in SIZES {
        ws.send(Message::Binary(vec![1u8; n].into())).await.unwrap();
        let _ = ws.next().await.unwrap().unwrap();
    }
    ws.send(Message::Ping(vec![9u8; 4].into())).await.unwrap();
    let _ = ws.next().await; // the pong
    ws.close(None).await.unwrap();
    let _ = server.await;
}

fn decode_json(kind: &str, file: &Path, extra: &[&str]) -> (Vec<serde_json::Value>, serde_json::Value) {
    let out = run_ok(evalbench().args(["decode", kind, "--json"]).args(extra).arg(file));
    let mut lines: Vec<serde_json::Value> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = lines.pop().unwrap()["summary"].clone();
    (lines, summary)
}

#[test]
fn websocket_frames_sizes_and_round_trips_from_a_real_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let port = evalbench_lab::host::free_port().unwrap();
    let cap = Capture::start("any", port, &tmp.path().join("proto.pcap"));
    tokio::runtime::Runtime::new().unwrap().block_on(websocket_traffic(port));
    let pcap = cap.stop();
    let (messages, s) = decode_json("proto", &pcap, &["--port", &port.to_string()]);
    assert_eq!(s["connections"], 1);
    assert_eq!(s["upgrades"], 1, "{s}");
    let worker: Vec<u64> = messages.iter().filter(|m| m["from"] == "worker" && m["kind"] == "binary").map(|m| m["bytes"].as_u64().unwrap()).collect();
    assert_eq!(worker, SIZES.iter().map(|&n| n as u64).collect::<Vec<_>>());
    let server: Vec<u64> = messages.iter().filter(|m| m["from"] == "server" && m["kind"] == "binary").map(|m| m["bytes"].as_u64().unwrap()).collect();
    assert_eq!(server, SIZES.iter().map(|&n| (n % 50 + 1) as u64).collect::<Vec<_>>());
    assert!(messages.iter().any(|m| m["kind"] == "ping" && m["from"] == "worker"));
    assert!(messages.iter().any(|m| m["kind"] == "pong" && m["from"] == "server"));
    assert!(s["control_frames"].as_u64().unwrap() >= 3, "ping, pong, close: {s}");
    assert_eq!(s["round_trip_worker_to_server_us"]["count"], SIZES.len());
    assert_eq!(s["message_bytes_from_worker"]["max"], 70_000);
    assert!(s["round_trip_worker_to_server_us"]["min"].as_i64().unwrap() >= 0);

    // The same capture as pcapng reads the same.
    let ng = tmp.path().join("proto.pcapng");
    assert!(Command::new("editcap").args(["-F", "pcapng"]).arg(&pcap).arg(&ng).status().unwrap().success());
    let (_, s2) = decode_json("proto", &ng, &["--port", &port.to_string()]);
    assert_eq!(s2["message_bytes_from_worker"], s["message_bytes_from_worker"]);
    assert_eq!(s2["round_trip_worker_to_server_us"], s["round_trip_worker_to_server_us"]);

    // Reassembly of this real stream survives reordering, duplicates and splits.
    let mut segs: Vec<(i64, (std::net::IpAddr, u16), (std::net::IpAddr, u16), u32, bool, bool, Vec<u8>)> = Vec::new();
    evalbench_decode::packet::for_each_segment(&pcap, |s| segs.push((s.ts_us, s.src, s.dst, s.seq, s.syn, s.fin, s.payload.to_vec()))).unwrap();
    let stream = |order: &[usize], segs: &[(i64, (std::net::IpAddr, u16), (std::net::IpAddr, u16), u32, bool, bool, Vec<u8>)]| {
        let mut r = evalbench_decode::tcp::Reassembler::new(Some(port));
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for &i in order {
            let s = &segs[i];
            let seg = evalbench_decode::packet::Segment { ts_us: s.0, src: s.1, dst: s.2, seq: s.3, syn: s.4, ack: !s.4 || s.1.1 == port, fin: s.5, rst: false, payload: &s.6 };
            r.segment(&seg, &mut |e| {
                if let evalbench_decode::tcp::Event::Data { to_server, bytes, .. } = e {
                    if to_server { up.extend_from_slice(bytes) } else { down.extend_from_slice(bytes) }
                }
            });
        }
        r.finish(&mut |e| {
            if let evalbench_decode::tcp::Event::Data { to_server, bytes, .. } = e {
                if to_server { up.extend_from_slice(bytes) } else { down.extend_from_slice(bytes) }
            }
        });
        (up, down)
    };
    let in_order: Vec<usize> = (0..segs.len()).collect();
    let truth = stream(&in_order, &segs);
    assert!(truth.0.len() > 70_000);
    let mut rng: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..50 {
        // Split some segments in two, duplicate some, then shuffle within a window.
        let mut mutated = Vec::new();
        for s in &segs {
            if s.6.len() > 2 && next() % 4 == 0 {
                let cut = (next() as usize % (s.6.len() - 1)) + 1;
                mutated.push((s.0, s.1, s.2, s.3, s.4, false, s.6[..cut].to_vec()));
                mutated.push((s.0, s.1, s.2, s.3.wrapping_add(cut as u32), false, s.5, s.6[cut..].to_vec()));
            } else {
                mutated.push(s.clone());
            }
            if next() % 6 == 0 {
                mutated.push(mutated.last().unwrap().clone());
            }
        }
        // The handshake stays first: without it, a capture is a mid-stream one.
        let mut order: Vec<usize> = (0..mutated.len()).collect();
        for i in 3..order.len() {
            let j = i + (next() as usize % 4);
            if j < order.len() {
                order.swap(i, j);
            }
        }
        assert_eq!(stream(&order, &mutated), truth, "reordered, split and duplicated segments give another stream");
    }
}

#[test]
fn strace_of_a_real_process_tree() {
    let tmp = tempfile::tempdir().unwrap();
    // One file with -f: calls of parent and children interleave (unfinished/resumed).
    let one = tmp.path().join("all.txt");
    assert!(Command::new("strace").args(["-f", "-ttt", "-T", "-o"]).arg(&one).args(["sh", "-c", "sleep 0.2 & cat /etc/hostname > /dev/null; wait"]).status().unwrap().success());
    let text = std::fs::read_to_string(&one).unwrap();
    assert!(text.contains("<unfinished ...>") && text.contains("resumed>"), "the trace has no interleaving to test");
    let (slowest, s) = decode_json("strace", &one, &[]);
    assert_eq!(s["unparsed_lines"], 0, "{s}");
    assert!(s["threads"].as_u64().unwrap() >= 3, "sh, sleep and cat: {s}");
    assert!(s["exits"].as_u64().unwrap() >= 3);
    let names: Vec<&str> = s["by_syscall"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
    for n in ["execve", "wait4", "openat", "clock_nanosleep"] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    // The parent's wait lasted as long as the child slept: a resumed call keeps its duration.
    let wait = slowest.iter().find(|c| c["name"] == "wait4" || c["name"] == "clock_nanosleep").unwrap();
    assert!(wait["dur_us"].as_i64().unwrap() >= 150_000, "{wait}");
    // -ff: one file per thread and child, like the run's worker/strace/.
    let dir = tmp.path().join("ff");
    std::fs::create_dir(&dir).unwrap();
    assert!(Command::new("strace").args(["-ff", "-ttt", "-T", "-o"]).arg(dir.join("worker")).args(["sh", "-c", "ls / > /dev/null; true"]).status().unwrap().success());
    let (_, s) = decode_json("strace", &dir, &[]);
    assert!(s["files"].as_u64().unwrap() >= 2 && s["threads"] == s["files"]);
    assert_eq!(s["unparsed_lines"], 0);
}

#[test]
fn perf_stacks_are_told_apart_by_process() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; python3 -c 'sum(range(3000000))'"])
        .status()
        .unwrap();
    assert!(st.success());
    let (_, s) = decode_json("perf", &data, &[]);
    let by = s["by_process"].as_object().unwrap();
    assert!(by.contains_key("sh") && by.contains_key("python3"), "{by:?}");
    assert!(s["samples"].as_u64().unwrap() > 10);
}

#[test]
fn auto_explain_plans_in_text_and_json_from_a_real_postgres() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::Builder::new().prefix("evalbench-explain.").tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = TestPg::start(tmp.path());
    let pg = &server.0;
    // As the runner does: switched on for everyone by ALTER SYSTEM, one statement per query.
    for sql in [
        "ALTER SYSTEM SET auto_explain.log_min_duration = 0",
        "SELECT pg_reload_conf()",
        "CREATE TABLE t AS SELECT g AS x FROM generate_series(1, 1000) g",
        "SELECT count(*) FROM t WHERE x % 7 = 0",
        "ALTER SYSTEM SET auto_explain.log_format = json",
        "SELECT pg_reload_conf()",
        "SELECT max(x) FROM t",
    ] {
        let db = if sql.starts_with("ALTER") || sql.contains("reload") { "postgres" } else { "gradient" };
        pg.psql(db, sql).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let log = pg.dir.join("postgres.log");
    let (plans, s) = decode_json("auto-explain", &log, &[]);
    assert_eq!(s["malformed"], 0);
    let text = plans.iter().find(|p| p["query"].as_str().unwrap().contains("x % 7")).expect("the text-format plan");
    assert_eq!(text["format"], "text");
    assert!(text["plan"].as_str().unwrap().contains("Seq Scan on t"), "{text}");
    assert!(text["duration_ms"].as_f64().unwrap() >= 0.0);
    let json = plans.iter().find(|p| p["query"].as_str().unwrap().contains("max(x)")).expect("the JSON-format plan");
    assert_eq!(json["format"], "json");
    assert!(json["plan"].as_str().unwrap().contains("Aggregate"));
}
