//! The lab, started for real: PostgreSQL, server, worker, nix. One story per
//! test function, because every start costs seconds: cold then warm
//! evaluation of the hello flake, every span of the benchmark's contract, job phases and
//! evaluation_metric rows, a broken flake, a worker killed mid-job, and a
//! clean stop.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Stops the lab even when the test fails.
struct Lab(PathBuf);

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
    }
}

fn lab_dir() -> (tempfile::TempDir, PathBuf) {
    // PostgreSQL runs as an unprivileged user: the directory must let it in.
    let tmp = reachable_tmp("evalbench-lab-test.");
    let dir = tmp.path().join("lab");
    (tmp, dir)
}

fn up(dir: &Path, flake: &Path, trace: &Path, extra: &[&str]) -> serde_json::Value {
    let out = run_ok(
        evalbench()
            .args(["lab", "up", "--lab-dir"])
            .arg(dir)
            .arg("--flake")
            .arg(flake)
            .arg("--trace-dir")
            .arg(trace)
            .args(extra),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn evaluate(dir: &Path) -> (bool, serde_json::Value) {
    let out = evalbench().args(["lab", "evaluate", "--timeout-s", "300", "--lab-dir"]).arg(dir).output().unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no JSON from evaluate: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.success(), v)
}

fn sql(dir: &Path, q: &str) -> String {
    String::from_utf8(run_ok(evalbench().args(["lab", "sql", "--lab-dir"]).arg(dir).arg(q)).stdout).unwrap()
}

fn statuses(v: &serde_json::Value) -> Vec<String> {
    v["server_statuses"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap().to_string()).collect()
}

/// What each process emits, as the contract lists it.
const SEED: &[(&str, &str, &[&str])] = evalbench_bundle::contract::SPANS;

fn spans_in(trace: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(trace).unwrap() {
        for l in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v.get("name").is_some() {
                out.push(v);
            }
        }
    }
    out
}

/// One attribute that builds, one that throws.
const BROKEN_FLAKE: &str = concat!(
    r#"{ outputs = { self }: { packages.x86_64-linux = {
             good = builtins.derivation { name = "good"; system = "x86_64-linux"; builder = "/bin/sh"; "#,
    r#"args = [ "-c" "echo > $out" ]; };
             bad = throw "broken on purpose"; }; }; }"#
);

#[test]
fn the_lab_evaluates_cold_then_warm_and_fails_honestly() {
    let (tmp, dir) = lab_dir();
    let _lab = Lab(dir.clone());
    let hello = repo_root().join("examples/hello-flake");
    let cold = tmp.path().join("bundle/cold-clean/trace");
    let warm = tmp.path().join("bundle/warm-clean/trace");
    let skew_ms = 1500;
    let st = up(&dir, &hello, &cold, &["--worker-clock-skew-ms", &skew_ms.to_string()]);
    if nix_is_root() {
        assert_eq!(st["net"]["mode"], "netns", "as root, server and worker are two hosts");
    }
    // Idempotent: a second `up` is the same lab.
    let again = up(&dir, &hello, &cold, &["--worker-clock-skew-ms", &skew_ms.to_string()]);
    assert_eq!(again["api_key"], st["api_key"]);

    let (ok, c) = evaluate(&dir);
    assert!(ok, "cold evaluation: {c}");
    assert_eq!(
        statuses(&c),
        ["Queued", "Fetching", "EvaluatingFlake", "EvaluatingDerivation", "Building", "Completed"]
    );
    run_ok(evalbench().args(["lab", "restart", "--lab-dir"]).arg(&dir).arg("--trace-dir").arg(&warm));
    let (ok, w) = evaluate(&dir);
    assert!(ok, "warm evaluation: {w}");
    assert_eq!(statuses(&w), statuses(&c));
    for (pass, v) in [("cold-clean", &c), ("warm-clean", &w)] {
        std::fs::write(tmp.path().join("bundle").join(pass).join("run.json"), serde_json::to_vec(v).unwrap()).unwrap();
    }

    // Every span of the contract, with its fields, in both passes; except that a
    // warm pass records no derivation: the server knows them all already.
    for trace in [&cold, &warm] {
        let spans = spans_in(trace);
        let records = spans.iter().filter(|s| s["name"] == "record_one").count();
        assert_eq!(records, if trace == &cold { 100 } else { 0 });
        for (process, name, fields) in SEED {
            if trace == &warm && *name == "record_one" {
                continue;
            }
            let s = spans
                .iter()
                .find(|s| s["process"] == *process && s["name"] == *name)
                .unwrap_or_else(|| panic!("{}: no {process} span {name}", trace.display()));
            for f in *fields {
                assert!(s["fields"].get(*f).is_some(), "{process}/{name} lacks field {f}: {s}");
            }
        }
        let resolves = spans.iter().filter(|s| s["name"] == "resolve").count();
        assert_eq!(resolves, 101, "one resolve per attribute (100 packages and default)");
        assert!(spans.iter().any(|s| s["name"] == "job_event" && s["fields"]["kind"] == "eval_result"));
    }
    // The warm evaluation found nix's eval cache that the cold one filled.
    let cache_at = |trace: &Path| -> u64 {
        spans_in(trace).iter().find(|s| s["name"] == "lock_flake").unwrap()["fields"]["eval_cache_entries"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(cache_at(&cold), 0, "a fresh lab starts with an empty eval cache");
    assert!(cache_at(&warm) > 0, "the warm evaluation has the eval cache");

    phases_and_metric_rows_in_the_database(&dir);

    // Alignment on the lab's own spans finds the injected skew.
    run_ok(evalbench().args(["summarize", "--quiet"]).arg(tmp.path().join("bundle")));
    let summary = read_json(&tmp.path().join("bundle/summary.json"));
    for p in summary["passes"].as_array().unwrap() {
        let (o, b) = (p["worker_offset_us"].as_i64().unwrap(), p["offset_bound_us"].as_i64().unwrap());
        assert!((o + skew_ms * 1000).abs() <= b, "{}: offset {o} bound {b}", p["pass"]);
        assert!(p["evaluated_s"].as_f64().unwrap() > 0.0);
    }

    failures_are_said_not_hung(&dir, &hello, tmp.path());

    down_leaves_nothing_behind(&dir);
}

/// Down leaves nothing behind, and twice is fine.
fn down_leaves_nothing_behind(dir: &Path) {
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(dir));
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(dir));
    let state = read_json(&dir.join("lab.json"));
    if let Some(ns) = state["net"]["server_ns"].as_str() {
        assert!(!Path::new("/run/netns").join(ns).exists(), "namespace {ns} left behind");
    }
    assert!(state["server_pid"].is_null());
    let pg_pid = dir.join("pg/data/postmaster.pid");
    assert!(!pg_pid.exists(), "PostgreSQL left running");
    let leftover = std::process::Command::new("pgrep").arg("-f").arg(dir.to_str().unwrap()).output().unwrap();
    assert!(leftover.stdout.is_empty(), "processes left: {}", String::from_utf8_lossy(&leftover.stdout));
}

/// Job phases and evaluation_metric rows in the database.
fn phases_and_metric_rows_in_the_database(dir: &Path) {
    let phases = sql(dir, "SELECT phase_name, phase, seq FROM dispatched_job_phase ORDER BY started_at");
    let phases: Vec<&str> = phases.lines().collect();
    // The lab's names, Gradient's codes (fetch 0, eval_flake 2, eval_derivations 3), numbered per job.
    assert_eq!(
        phases,
        [
            "fetching|0|0",
            "evaluating_flake|2|1",
            "evaluating_derivations|3|2",
            "fetching|0|0",
            "evaluating_flake|2|1",
            "evaluating_derivations|3|2"
        ]
    );
    // Gradient's benchmark's own query reads the lab: its job phases, by dispatch.
    let gradient_s = sql(
        dir,
        "SELECT dj.kind, p.seq, p.phase, p.end_ms >= p.start_ms FROM dispatched_job_phase p JOIN dispatched_job dj ON \
            dj.id = p.dispatched_job ORDER BY dj.dispatched_at, p.seq",
    );
    assert_eq!(
        gradient_s.lines().collect::<Vec<_>>(),
        ["0|0|0|t", "0|1|2|t", "0|2|3|t", "0|0|0|t", "0|1|2|t", "0|2|3|t"]
    );
    let metric = sql(
        dir,
        "SELECT attrs, derivations, new_derivations, eval_peak_rss_kb > 0, flake_ms > 0 FROM evaluation_metric ORDER \
            BY recorded_at",
    );
    assert_eq!(
        metric.lines().collect::<Vec<_>>(),
        ["101|100|100|t|t", "101|100|0|t|t"],
        "cold records 100 new derivations, warm none"
    );
}

/// A broken attribute fails the evaluation with nix's message and the
/// attribute; a worker killed mid-job fails it instead of hanging it.
fn failures_are_said_not_hung(dir: &Path, hello: &Path, tmp: &Path) {
    let broken = tmp.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("flake.nix"), BROKEN_FLAKE).unwrap();
    up(dir, &broken, &tmp.join("broken-trace"), &[]);
    let (ok, b) = evaluate(dir);
    assert!(!ok);
    assert_eq!(b["status"], "Failed");
    let err = b["error"].as_str().unwrap();
    assert!(err.contains("packages.x86_64-linux.bad") && err.contains("broken on purpose"), "{err}");

    // A worker killed mid-job fails the evaluation instead of hanging it.
    up(dir, hello, &tmp.join("kill-trace"), &[]);
    run_ok(evalbench().args(["lab", "reset", "--lab-dir"]).arg(dir));
    let state = read_json(&dir.join("lab.json"));
    let worker = state["worker_pids"][0].as_u64().unwrap() as i32;
    let d2 = dir.to_path_buf();
    let eval = std::thread::spawn(move || evaluate(&d2));
    let deadline = Instant::now() + Duration::from_secs(60);
    // Mid-job is either evaluating status: a poll through psql can miss the
    // first, short when the flake's inputs are fetched already (seen on a
    // loaded machine: the test waited its whole minute).
    while !sql(dir, "SELECT status FROM evaluation WHERE status IN ('EvaluatingFlake', 'EvaluatingDerivation')")
        .contains("Evaluating")
    {
        assert!(Instant::now() < deadline, "the evaluation never reached EvaluatingFlake or EvaluatingDerivation");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the worker pid the lab reported.
    unsafe { libc_kill(worker) };
    let (ok, k) = eval.join().unwrap();
    assert!(!ok);
    assert_eq!(k["status"], "Failed");
    assert!(k["error"].as_str().unwrap().contains("disconnected"), "{k}");
}

fn nix_is_root() -> bool {
    std::process::Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false)
}

unsafe fn libc_kill(pid: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    kill(pid, 9);
}

fn eval_spans(trace: &Path, name: &str) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> =
        spans_in(trace).into_iter().filter(|s| s["process"] == "eval" && s["name"] == name).collect();
    v.sort_by_key(|s| s["ts_us"].as_i64().unwrap());
    v
}

fn end_us(s: &serde_json::Value) -> i64 {
    s["ts_us"].as_i64().unwrap() + s["dur_us"].as_i64().unwrap()
}

fn derivations_of(dir: &Path, evaluation: &serde_json::Value) -> Vec<String> {
    let id = evaluation["evaluation_id"].as_str().unwrap();
    sql(dir, &format!("SELECT drv_path FROM evaluation_derivation WHERE evaluation = '{id}' ORDER BY 1"))
        .lines()
        .map(String::from)
        .collect()
}

/// `ps` lines of nix evaluators still running over `source`.
fn evaluators_over(source: &str) -> String {
    let ps = std::process::Command::new("ps").args(["-eo", "pid,args"]).output().unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains(" nix ") && l.contains(source))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Six attributes over two shards, the third throwing while slow ones are still evaluating.
const MID_BROKEN_FLAKE: &str = concat!(
    r#"{ outputs = { self }: let
             slow = n: builtins.foldl' (a: i: a + i) 0 (builtins.genList (i: i) n);
             drv = name: n: builtins.derivation { inherit name; system = "x86_64-linux"; builder = "#,
    r#""/bin/sh"; args = [ "-c" "echo ${toString (slow n)} > $out" ]; };
           in { packages.x86_64-linux = {
             a0 = drv "a0" 10; a1 = drv "a1" 3000000; a2 = throw "a2 breaks on purpose";
             a3 = drv "a3" 3000000; a4 = drv "a4" 10; a5 = drv "a5" 3000000; }; }; }"#
);

#[test]
fn long_lived_evaluators_shard_resolve_and_fail_cleanly() {
    let (tmp, dir) = lab_dir();
    let _lab = Lab(dir.clone());
    let hello = repo_root().join("examples/hello-flake");

    // Two evaluators, cold then warm.
    let two = tmp.path().join("two");
    up(&dir, &hello, &two, &["--eval-workers", "2"]);
    let (ok, c2) = evaluate(&dir);
    assert!(ok, "cold evaluation with two evaluators: {c2}");
    let d2 = derivations_of(&dir, &c2); // before a reset drops the database
    let evaluators = eval_spans(&two, "evaluator");
    assert_eq!(evaluators.len(), 2, "one evaluator span per shard");
    let pids: std::collections::BTreeSet<i64> =
        evaluators.iter().map(|e| e["fields"]["pid"].as_i64().unwrap()).collect();
    assert_eq!(pids.len(), 2, "two nix processes: {evaluators:?}");
    let plan = &eval_spans(&two, "plan_shards")[0]["fields"];
    assert_eq!((plan["shards"].as_u64(), plan["sizes"].as_str()), (Some(2), Some("51,50")), "{plan}");
    // The two evaluators ran at once.
    assert!(evaluators[1]["ts_us"].as_i64().unwrap() < end_us(&evaluators[0]), "{evaluators:?}");

    each_shard_resolves_in_order_back_to_back(&two, &evaluators);

    // Warm: every attribute answered from nix's eval cache.
    let warm = tmp.path().join("two-warm");
    run_ok(evalbench().args(["lab", "restart", "--lab-dir"]).arg(&dir).arg("--trace-dir").arg(&warm));
    let (ok, w2) = evaluate(&dir);
    assert!(ok, "{w2}");
    let hits: Vec<serde_json::Value> =
        eval_spans(&warm, "resolve").into_iter().filter(|r| r["fields"]["eval_cache"] == "hit").collect();
    assert_eq!(hits.len(), 101, "warm resolves answered from the eval cache");

    // The same derivations from one evaluator as from two.
    let one = tmp.path().join("one");
    up(&dir, &hello, &one, &["--eval-workers", "1"]);
    run_ok(evalbench().args(["lab", "reset", "--lab-dir"]).arg(&dir).arg("--trace-dir").arg(&one));
    let (ok, c1) = evaluate(&dir);
    assert!(ok, "{c1}");
    assert_eq!(eval_spans(&one, "evaluator").len(), 1);
    let d1 = derivations_of(&dir, &c1);
    assert_eq!(d1.len(), 100);
    assert_eq!(d1, d2, "one evaluator and two resolve the same derivations");

    a_throw_mid_shard_is_named(&dir, tmp.path());
}

/// Each shard: one resolve per attribute, in the shard's order, back to
/// back from nix's first line to its last attribute, inside its evaluator and `open`.
fn each_shard_resolves_in_order_back_to_back(two: &Path, evaluators: &[serde_json::Value]) {
    let open = &eval_spans(two, "open")[0];
    let resolves = eval_spans(two, "resolve");
    assert_eq!(resolves.len(), 101);
    let mut attrs: Vec<String> =
        std::iter::once("default".to_string()).chain((0..100).map(|i| format!("pkg{i}"))).collect();
    attrs.sort(); // nix's attrNames order
    for (shard, ev) in evaluators.iter().map(|e| (e["fields"]["shard"].as_u64().unwrap() as usize, e)) {
        let mine: Vec<&serde_json::Value> =
            resolves.iter().filter(|r| r["fields"]["shard"].as_u64() == Some(shard as u64)).collect();
        let expected: Vec<String> = attrs
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 2 == shard)
            .map(|(_, a)| format!("packages.x86_64-linux.{a}"))
            .collect();
        let got: Vec<&str> = mine.iter().map(|r| r["fields"]["attr"].as_str().unwrap()).collect();
        assert_eq!(got, expected, "shard {shard}: attributes in plan order");
        let start = eval_spans(two, "start_evaluator")
            .into_iter()
            .find(|s| s["fields"]["shard"].as_u64() == Some(shard as u64))
            .unwrap();
        assert!(
            (0..=25_000).contains(&(mine[0]["ts_us"].as_i64().unwrap() - end_us(&start))),
            "shard {shard}: the first resolve starts at nix's first line"
        );
        // Back to back: one attribute's span closes and the next opens in two
        // consecutive statements, so a gap is only this thread being
        // descheduled (two nix processes keep both cores busy): a few
        // scheduler slices at most, and a sliver of the evaluator's time.
        let mut gaps = 0;
        for w in mine.windows(2) {
            let gap = w[1]["ts_us"].as_i64().unwrap() - end_us(w[0]);
            assert!(
                (0..=25_000).contains(&gap),
                "shard {shard}: {gap} us between {} and {}",
                w[0]["fields"]["attr"],
                w[1]["fields"]["attr"]
            );
            gaps += gap;
        }
        let ev_us = ev["dur_us"].as_i64().unwrap();
        assert!(gaps * 50 <= ev_us, "shard {shard}: {gaps} us of gaps in an evaluator of {ev_us} us");
        for r in &mine {
            assert!(
                r["ts_us"].as_i64() >= ev["ts_us"].as_i64() && end_us(r) <= end_us(ev),
                "{r} outside its evaluator"
            );
            assert!(r["ts_us"].as_i64() >= open["ts_us"].as_i64() && end_us(r) <= end_us(open), "{r} outside open");
            assert_eq!(r["fields"]["eval_cache"], "miss", "a cold pass has nothing cached: {r}");
        }
    }
}

/// An attribute that throws in the middle of a shard, while the other
/// shard is still evaluating: named, with nix's message, and no evaluator left.
fn a_throw_mid_shard_is_named(dir: &Path, tmp: &Path) {
    let broken = tmp.join("mid-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("flake.nix"), MID_BROKEN_FLAKE).unwrap();
    let bt = tmp.join("mid-broken-trace");
    up(dir, &broken, &bt, &["--eval-workers", "2"]);
    let (ok, b) = evaluate(dir);
    assert!(!ok);
    assert_eq!(b["status"], "Failed");
    let err = b["error"].as_str().unwrap();
    assert!(err.contains("packages.x86_64-linux.a2") && err.contains("a2 breaks on purpose"), "{err}");
    let source = eval_spans(&bt, "lock_flake")[0]["fields"]["source"].as_str().unwrap().to_string();
    assert!(source.starts_with("/nix/store/"), "{source}");
    let left = evaluators_over(&source);
    assert!(left.is_empty(), "evaluators left behind:\n{left}");
    let resolved: Vec<String> =
        eval_spans(&bt, "resolve").iter().map(|r| r["fields"]["attr"].as_str().unwrap().to_string()).collect();
    assert!(
        resolved.contains(&"packages.x86_64-linux.a0".to_string())
            && resolved.contains(&"packages.x86_64-linux.a2".to_string()),
        "{resolved:?}"
    );
    assert!(
        !resolved.contains(&"packages.x86_64-linux.a4".to_string()),
        "nothing after the throwing attribute in its shard: {resolved:?}"
    );
    let stopped: Vec<serde_json::Value> =
        eval_spans(&bt, "resolve").into_iter().filter(|r| r["fields"]["shard"] == 1).collect();
    assert!(stopped.len() < 3, "the other shard was stopped, not run to the end: {stopped:?}");
}

/// A process that is not the lab's, with `tag` in its command line.
/// A process with `tag` in its command line and no child: a shell waiting
/// on its stdin, which ends when the test drops its end or kills it (a
/// `sleep` under it outlived the test, holding its output open).
fn bystander(tag: &str) -> std::process::Child {
    use std::process::Stdio;
    let mut child = std::process::Command::new("sh")
        .args(["-c", &format!("read _; : {tag}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The spawn returns once the child has begun its exec, which may be before
    // the kernel has set its new command line (seen in CI: `lab down` found no
    // process with the tag): wait until /proc shows it.
    let cmdline = format!("/proc/{}/cmdline", child.id());
    for _ in 0..500 {
        if std::fs::read(&cmdline).is_ok_and(|c| String::from_utf8_lossy(&c).contains(tag)) {
            return child;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the bystander's command line never showed {tag}");
}

fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'))
}

#[test]
fn down_never_fails_silently_nor_kills_a_stranger() {
    let (tmp, dir) = lab_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    // lab.json that does not read, and a process of the lab's still running: said, not hidden.
    std::fs::write(dir.join("lab.json"), "{ not json").unwrap();
    let mut left = bystander(&dir.display().to_string());
    let out = evalbench().args(["lab", "down", "--lab-dir"]).arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("lab.json") && err.contains(&format!("pid {}", left.id())), "{err}");
    assert!(alive(left.id()), "nothing is stopped blind");
    left.kill().unwrap();
    left.wait().unwrap();

    // A recorded pid now held by another process (its start time differs): left alone.
    let mut stranger = bystander("stranger");
    let pid = stranger.id();
    let state = |started: u64| {
        serde_json::json!({
            "dir": dir, "net": {"mode": "loopback", "server_addr": "127.0.0.1", "server_addr_for_worker": "127.0.0.1"},
            "pg_port": 1, "server_port": 1, "server_pid": pid, "server_started": started, "worker_pids": [],
            "api_key": "k", "organization": "o", "project": "p", "repository": tmp.path().join("repo"), "trace_dir":
                null,
            "worker_clock_skew_ms": 0, "workers": 1
        })
    };
    std::fs::write(dir.join("lab.json"), state(start_time(pid) + 1).to_string()).unwrap();
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&dir));
    assert!(alive(pid), "a pid reused by another process is not the lab's server");
    // The same pid with its own start time is ours, and is stopped.
    std::fs::write(dir.join("lab.json"), state(start_time(pid)).to_string()).unwrap();
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&dir));
    let _ = stranger.wait();
    assert!(!alive(pid), "the recorded process was stopped");
    // Never up: nothing to do.
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(tmp.path().join("never")));
}

#[test]
fn up_refuses_a_lab_json_that_does_not_read() {
    let tmp = reachable_tmp("evalbench-labjson.");
    let dir = tmp.path().join("lab");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lab.json"), "{\"server_pid\": 12").unwrap();
    let out = evalbench().args(["lab", "up", "--lab-dir"]).arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("lab.json") && stderr.contains("may still be running"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("lab.json")).unwrap(),
        "{\"server_pid\": 12",
        "the file is left as it was"
    );
    assert!(!dir.join("pg").exists(), "nothing was started");
}
