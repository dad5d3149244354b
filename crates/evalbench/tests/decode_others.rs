//! The other decoders against real peers: WebSocket between a real client
//! and server over IPv6 loopback (captured with `-i any`, so Linux cooked
//! frames, and converted to pcapng), reassembly of that real stream under
//! reordering, duplication and splitting, strace and perf of real process
//! trees, and auto_explain plans from a real PostgreSQL in both formats.

mod common;

use std::collections::BTreeMap;
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
    let mut lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = lines.pop().unwrap()["summary"].clone();
    (lines, summary)
}

/// A TCP segment: time, source, destination, sequence number, SYN, FIN, payload.
type Segment = (i64, (std::net::IpAddr, u16), (std::net::IpAddr, u16), u32, bool, bool, Vec<u8>);

#[test]
fn websocket_frames_sizes_and_round_trips_from_a_real_capture() {
    let tmp = tempfile::tempdir().unwrap();
    let port = evalbench_host::free_port().unwrap();
    let cap = Capture::start("any", port, &tmp.path().join("proto.pcap"));
    tokio::runtime::Runtime::new().unwrap().block_on(websocket_traffic(port));
    let pcap = cap.stop();
    let (messages, s) = decode_json("proto", &pcap, &["--port", &port.to_string()]);
    assert_eq!(s["connections"], 1);
    assert_eq!(s["upgrades"], 1, "{s}");
    let worker: Vec<u64> = messages
        .iter()
        .filter(|m| m["from"] == "worker" && m["kind"] == "binary")
        .map(|m| m["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(worker, SIZES.iter().map(|&n| n as u64).collect::<Vec<_>>());
    let server: Vec<u64> = messages
        .iter()
        .filter(|m| m["from"] == "server" && m["kind"] == "binary")
        .map(|m| m["bytes"].as_u64().unwrap())
        .collect();
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

    a_late_capture_is_midstream(&pcap, port, tmp.path());
    assert_eq!(s["midstream_connections"], 0);
    reassembly_survives_reordering_duplicates_and_splits(&pcap, port);
}

/// The same capture joined after the upgrade, as a tcpdump started late
/// sees it: no upgrade counted, the connection said to be mid-stream.
fn a_late_capture_is_midstream(pcap: &Path, port: u16, tmp: &Path) {
    let ts = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args([
            "-d",
            &format!("tcp.port=={port},http"),
            "-Y",
            "http.response.code == 101",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    let upgrade: u32 = String::from_utf8_lossy(&ts.stdout).trim().parse().expect("tshark finds the 101 response");
    let late = tmp.join("late.pcap");
    assert!(Command::new("editcap")
        .arg("-r")
        .arg(pcap)
        .arg(&late)
        .arg(format!("{}-1000000", upgrade + 1))
        .status()
        .unwrap()
        .success());
    let (_, s3) = decode_json("proto", &late, &["--port", &port.to_string()]);
    assert_eq!(
        (s3["connections"].as_u64(), s3["upgrades"].as_u64(), s3["midstream_connections"].as_u64()),
        (Some(1), Some(0), Some(1)),
        "{s3}"
    );
}

/// Reassembly of this real stream survives reordering, duplicates and splits.
fn reassembly_survives_reordering_duplicates_and_splits(pcap: &Path, port: u16) {
    let mut segs: Vec<Segment> = Vec::new();
    evalbench_decode::packet::for_each_segment(pcap, |s| {
        segs.push((s.ts_us, s.src, s.dst, s.seq, s.syn, s.fin, s.payload.to_vec()))
    })
    .unwrap();
    let in_order: Vec<usize> = (0..segs.len()).collect();
    let truth = reassembled(&in_order, &segs, port);
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
        assert_eq!(
            reassembled(&order, &mutated, port),
            truth,
            "reordered, split and duplicated segments give another stream"
        );
    }
}

/// Both directions' bytes as the reassembler gives them, the segments fed in `order`.
fn reassembled(order: &[usize], segs: &[Segment], port: u16) -> (Vec<u8>, Vec<u8>) {
    let mut r = evalbench_decode::tcp::Reassembler::new(Some(port));
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for &i in order {
        let s = &segs[i];
        let seg = evalbench_decode::packet::Segment {
            ts_us: s.0,
            src: s.1,
            dst: s.2,
            seq: s.3,
            syn: s.4,
            ack: !s.4 || s.1 .1 == port,
            fin: s.5,
            rst: false,
            payload: &s.6,
        };
        r.segment(&seg, &mut |e| {
            if let evalbench_decode::tcp::Event::Data { to_server, bytes, .. } = e {
                if to_server {
                    up.extend_from_slice(bytes)
                } else {
                    down.extend_from_slice(bytes)
                }
            }
        });
    }
    r.finish(&mut |e| {
        if let evalbench_decode::tcp::Event::Data { to_server, bytes, .. } = e {
            if to_server {
                up.extend_from_slice(bytes)
            } else {
                down.extend_from_slice(bytes)
            }
        }
    });
    (up, down)
}

#[test]
fn strace_of_a_real_process_tree() {
    let tmp = tempfile::tempdir().unwrap();
    // One file with -f: calls of parent and children interleave (unfinished/resumed).
    let one = tmp.path().join("all.txt");
    assert!(Command::new("strace")
        .args(["-f", "-ttt", "-T", "-o"])
        .arg(&one)
        .args(["sh", "-c", "sleep 0.2 & cat /etc/hostname > /dev/null; wait"])
        .status()
        .unwrap()
        .success());
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
    assert!(Command::new("strace")
        .args(["-ff", "-ttt", "-T", "-o"])
        .arg(dir.join("worker"))
        .args(["sh", "-c", "ls / > /dev/null; true"])
        .status()
        .unwrap()
        .success());
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
    let (stacks, s) = decode_json("perf", &data, &[]);
    let by = s["by_process"].as_object().unwrap();
    assert!(by.contains_key("sh") && by.contains_key("python3"), "{by:?}");
    assert!(s["samples"].as_u64().unwrap() > 10);
    // One record per stack, process first, as docs/decoders.md promises; they add up to the samples.
    assert_eq!(stacks.len() as u64, s["stacks"].as_u64().unwrap(), "a record per folded stack");
    assert_eq!(stacks.iter().map(|r| r["samples"].as_u64().unwrap()).sum::<u64>(), s["samples"].as_u64().unwrap());
    assert!(stacks.iter().all(|r| by.contains_key(r["stack"][0].as_str().unwrap())), "{stacks:?}");

    // The same profile as `perf script` text decodes to the same stacks and
    // counts. Told apart by content: the text is named perf.data, the binary not.
    let text_dir = tmp.path().join("text");
    std::fs::create_dir(&text_dir).unwrap();
    let script = Command::new("perf")
        .args(["script", "-F", "comm,pid,tid,time,event,ip,sym,dso", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(script.status.success());
    std::fs::write(text_dir.join("perf.data"), &script.stdout).unwrap();
    let binary = tmp.path().join("profile.txt");
    std::fs::copy(&data, &binary).unwrap();
    let (stacks_text, s_text) = decode_json("perf", &text_dir.join("perf.data"), &[]);
    let (stacks_bin, s_bin) = decode_json("perf", &binary, &[]);
    // That text has no periods (`-F` without `period`): the same stacks and counts, no period total.
    let mut counts = s.clone();
    counts.as_object_mut().unwrap().retain(|k, _| !k.starts_with("period_"));
    assert_eq!((&stacks_text, &s_text), (&stacks, &counts), "perf script text against perf.data");
    assert_eq!((&stacks_bin, &s_bin), (&stacks, &s));

    // perf script's own default text carries each sample's period (ns of
    // cpu-clock here): samples still count samples, and the periods are a
    // total of their own, in their unit.
    let default_text = Command::new("perf").args(["script", "-i"]).arg(&data).output().unwrap();
    assert!(default_text.status.success());
    assert!(
        String::from_utf8_lossy(&default_text.stdout).contains("cpu-clock"),
        "the default text names its event and period"
    );
    let with_periods = text_dir.join("default.txt");
    std::fs::write(&with_periods, &default_text.stdout).unwrap();
    let (_, s_periods) = decode_json("perf", &with_periods, &[]);
    assert_eq!(s_periods["samples"], s["samples"], "one profile, one count");
    assert_eq!(s_periods["by_process"], s["by_process"]);
    assert_eq!((s_periods["period_unit"].as_str(), s["period_unit"].as_str()), (Some("ns"), Some("ns")));
    assert_eq!(s_periods["period_total"], s["period_total"], "perf.data and its text: the same periods");
    let per_sample = s["period_total"].as_f64().unwrap() / s["samples"].as_f64().unwrap();
    assert!((900_000.0..1_200_000.0).contains(&per_sample), "about 1 ms a sample at 999 Hz: {per_sample} ns");
}

#[test]
fn auto_explain_plans_in_text_and_json_from_a_real_postgres() {
    let tmp = reachable_tmp("evalbench-explain.");
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

const STRACED: &str = r#"
import ctypes, fcntl, os, select, signal, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
def worker():
    for _ in range(40):
        libc.close(-1)  # os.close(-1) fails before the syscall
        fcntl.fcntl(r, fcntl.F_GETFD)
threads = [threading.Thread(target=worker) for _ in range(3)]
for t in threads:
    t.start()
signal.signal(signal.SIGALRM, lambda *a: None)
signal.setitimer(signal.ITIMER_REAL, 0.05)
select.select([], [], [], 0.2)
for _ in range(2):
    subprocess.run(["sh", "-c", "ls /nonexistent-evalbench 2>/dev/null; true"])
for t in threads:
    t.join()
"#;

type Counts = BTreeMap<String, (u64, u64, i64)>;

/// A direct count of strace files, line by line: per syscall (calls, errors, µs).
/// `pid_prefix`: `-f` into one file starts each line with the pid.
fn direct_count(files: &[std::path::PathBuf], pid_prefix: bool) -> (Counts, (u32, u32, u32)) {
    let mut direct = Counts::new();
    let mut seen = (0, 0, 0); // restarts, hex returns, negative arguments
    for f in files {
        for l in std::fs::read_to_string(f).unwrap().lines() {
            if l.starts_with("% time") {
                break; // strace -C's table follows
            }
            let l = if pid_prefix { l.split_once(' ').unwrap().1.trim_start() } else { l };
            let rest = l.split_once(' ').unwrap().1;
            // Counted as written: with -f, threads split calls into unfinished and resumed.
            seen.0 += rest.contains("ERESTART") as u32;
            seen.1 += rest.contains(") = 0x") as u32;
            seen.2 += rest.starts_with("close(-1") as u32;
            if rest.starts_with("---") || rest.starts_with("+++") || rest.ends_with("<unfinished ...>") {
                continue;
            }
            let name = rest
                .strip_prefix("<... ")
                .map_or_else(|| rest.split('(').next().unwrap(), |r| r.split(' ').next().unwrap());
            // The return follows the last ` = ` after the closing `)` (strace pads to a column).
            let Some((call, ret)) = rest.rsplit_once(" = ") else { continue };
            assert!(call.trim_end().ends_with(')'), "{l}");
            let Some(dur) = ret.rsplit_once(" <").and_then(|(_, d)| d.strip_suffix('>')) else { continue };
            let mut t = ret.split_whitespace();
            let err = matches!((t.next(), t.next()), (Some(v), Some(n)) if (v == "?" || v.starts_with('-')) &&
                n.starts_with('E'));
            let d = direct.entry(name.to_string()).or_default();
            d.0 += 1;
            d.1 += err as u64;
            d.2 += (dur.parse::<f64>().unwrap() * 1e6).round() as i64;
        }
    }
    (direct, seen)
}

fn ours_of(s: &serde_json::Value) -> Counts {
    s["by_syscall"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                (x["count"].as_u64().unwrap(), x["errors"].as_u64().unwrap(), x["total_us"].as_i64().unwrap()),
            )
        })
        .collect()
}

/// A multi-threaded python with children: failing calls with negative
/// arguments (`close(-1)`), hex returns with annotations (`fcntl(..,
/// F_GETFD) = 0x1 (flags FD_CLOEXEC)`), a `select` restarted by a signal
/// (`= ? ERESTARTNOHAND`), two children. strace cannot summarize (`-C`) and
/// split by thread (`-ff`) in one run, so: under `strace -f -tt -T -C -w`,
/// our per-syscall counts, errors and summed durations equal strace's own
/// table and a direct count of the file; under `strace -ff -tt -T`, they
/// equal a direct count of the files.
#[test]
fn strace_counts_equal_strace_c_and_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one.txt");
    let out = Command::new("strace")
        .args(["-f", "-tt", "-T", "-C", "-w", "-o"])
        .arg(&one)
        .args(["python3", "-c", STRACED])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // strace -c's table (with -o, at the end of the file): % time, seconds,
    // usecs/call, calls, [errors,] syscall.
    let written = std::fs::read_to_string(&one).unwrap();
    let table = &written[written.find("% time").expect("strace -C wrote its table")..];
    let mut theirs = Counts::new();
    for l in table.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 5 || f[0].parse::<f64>().is_err() || f[f.len() - 1] == "total" {
            continue;
        }
        let secs: f64 = f[1].parse().unwrap();
        let calls: u64 = f[3].parse().unwrap();
        let errors: u64 = if f.len() == 6 { f[4].parse().unwrap() } else { 0 };
        theirs.insert(f[f.len() - 1].to_string(), (calls, errors, (secs * 1e6).round() as i64));
    }
    let (direct, seen) = direct_count(std::slice::from_ref(&one), true);
    assert!(
        seen.0 >= 1 && seen.1 >= 120 && seen.2 >= 120,
        "the capture holds restarts, hex returns and negative arguments: {seen:?}"
    );
    let (_, s) = decode_json("strace", &one, &[]);
    assert_eq!(s["unparsed_lines"], 0, "{s}");
    let ours = ours_of(&s);
    assert_eq!(ours, direct, "-f: ours against a direct count of the file");
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "the same syscalls as strace -c");
    for (name, (calls, errors, us)) in &theirs {
        let (c, e, t) = ours[name];
        assert_eq!((c, e), (*calls, *errors), "{name}: calls and errors against strace -c");
        // strace -c sums exact latencies; -T prints each rounded to the µs.
        assert!((t - us).abs() <= c as i64 + 1, "{name}: {t} us against strace -c's {us} us");
    }

    let dir = tmp.path().join("ff");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(Command::new("strace")
        .args(["-ff", "-tt", "-T", "-o"])
        .arg(dir.join("worker"))
        .args(["python3", "-c", STRACED])
        .status()
        .unwrap()
        .success());
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(files.len() >= 6, "main, three threads, two children and more: {files:?}");
    let (direct, seen) = direct_count(&files, false);
    assert!(seen.0 >= 1 && seen.1 >= 120 && seen.2 >= 120, "{seen:?}");
    let (_, s) = decode_json("strace", &dir, &[]);
    assert_eq!(s["unparsed_lines"], 0, "{s}");
    assert_eq!(ours_of(&s), direct, "-ff: ours against a direct count of the files");
}
