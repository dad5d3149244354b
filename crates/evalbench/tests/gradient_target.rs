//! The gradient target, driving a lab through the same API and commands a
//! real deployment would get: exec prefixes, pid commands, a restart
//! command, trace directories fetched with tar.

mod common;

use std::path::Path;

use common::*;

struct Lab(std::path::PathBuf);

/// A process the test started, killed however the test ends.
struct Bystander(std::process::Child);

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
    }
}

#[test]
fn the_gradient_target_runs_passes_against_a_deployment() {
    let tmp = reachable_tmp("evalbench-gradient-test.");
    let dir = tmp.path().join("deployment");
    let _lab = Lab(dir.clone());
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-flake");
    let traces = dir.join("gtrace");
    let st: serde_json::Value = serde_json::from_slice(
        &run_ok(evalbench().args(["lab", "up", "--lab-dir"]).arg(&dir).arg("--flake").arg(&hello).arg("--trace-dir").arg(&traces)).stdout,
    )
    .unwrap();
    let prefix = |ns: &serde_json::Value| match ns.as_str() {
        Some(n) => serde_json::json!(["ip", "netns", "exec", n]),
        None => serde_json::json!([]),
    };
    // "remote": as over ssh, files the capture tools write on a host are fetched from it.
    let d = dir.display().to_string();
    let exe = env!("CARGO_BIN_EXE_evalbench");
    let server_addr = st["net"]["server_addr"].as_str().unwrap();
    let config = serde_json::json!({
        "url": format!("http://{}:{}", server_addr, st["server_port"]),
        // Logged in as Gradient's benchmark does (auth/basic/login), not by API key.
        "login": {"loginname": "admin", "password": st["api_key"]},
        "organization": "lab",
        "project": "hello",
        "admin_database_url": format!("host={server_addr} port={} user=postgres dbname=gradient", st["pg_port"]),
        "maintenance_database_url": format!("host={server_addr} port={} user=postgres dbname=postgres", st["pg_port"]),
        "server": {"prefix": prefix(&st["net"]["server_ns"]), "remote": true},
        "worker": {"prefix": prefix(&st["net"]["worker_ns"]), "remote": true},
        "server_pid_cmd": format!("pgrep -o -f -- '--provision {d}/provision.json'"),
        "worker_pid_cmd": format!("pgrep -o -f -- '--sources {d}/sources'"),
        "server_trace_dir": traces.display().to_string(),
        "worker_trace_dir": traces.display().to_string(),
        "restart_cmd": format!("{exe} lab restart --lab-dir {d} --trace-dir {}", traces.display()),
        "clear_eval_cache_cmd": format!("rm -rf {d}/worker-cache"),
        "proto_iface": st["net"]["proto_if"].as_str().unwrap_or("lo"),
        "proto_port": st["proto_port"],
        "pg_iface": "lo",
        "pg_port": st["pg_port"],
        "pg_log": format!("{d}/pg/postgres.log"),
    });
    // An eval subprocess already running when the captures start, as
    // Gradient's worker keeps them: strace attaches to it too.
    let mut eval_subprocess = Bystander(std::process::Command::new("sleep").arg("600").spawn().unwrap());
    let mut config = config;
    config["eval_pids_cmd"] = format!("echo {}", eval_subprocess.0.id()).into();
    let cfg = tmp.path().join("gradient.json");
    std::fs::write(&cfg, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let out = tmp.path().join("out");
    let res = evalbench()
        .args(["run", "--target", "gradient", "--passes", "cold-clean,warm-clean,warm-instrumented", "--repeat", "1", "--target-config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    for pass in ["cold-clean", "warm-clean"] {
        let p = out.join(pass);
        assert_eq!(read_json(&p.join("run.json"))["status"], "Completed");
        assert_eq!(read_json(&p.join("run.json"))["target"], "gradient");
        for f in ["proto.pcap", "pg.pcap", "pg/pg_stat_statements.json", "pg/wait_samples.json", "pg/job_phases.json", "trace.json"] {
            assert!(std::fs::metadata(p.join(f)).map(|m| m.len() > 0).unwrap_or(false), "{pass}/{f}");
        }
        let files: Vec<String> = std::fs::read_dir(p.join("trace")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        for process in ["server-", "worker-", "eval-"] {
            assert!(files.iter().any(|f| f.starts_with(process)), "{pass}: no {process}* span file fetched: {files:?}");
        }
    }
    // perf and strace wrote on the hosts; their files were fetched into the bundle.
    let inst = out.join("warm-instrumented");
    for f in ["perf.data", "worker/perf.data"] {
        let head = std::fs::read(inst.join(f)).unwrap_or_default();
        assert!(head.starts_with(b"PERFILE2"), "{f} was not fetched");
    }
    assert!(std::fs::read_dir(inst.join("worker/strace")).unwrap().count() >= 3);
    let attached = inst.join(format!("worker/strace/worker.{}", eval_subprocess.0.id()));
    assert!(attached.is_file(), "strace did not attach to the running eval subprocess ({})", attached.display());
    let _ = eval_subprocess.0.kill();
    assert!(std::fs::read_to_string(inst.join("pg/auto_explain.log")).unwrap().contains("duration:"));
    // ... and removed there.
    let leftovers =
        std::fs::read_dir("/tmp").unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with("evalbench-capture-")).count();
    assert_eq!(leftovers, 0, "scratch directories left on the hosts");
    // The cold pass really was cold: the database was recreated, so it recorded every derivation anew.
    let cold = read_json(&out.join("cold-clean/run.json"));
    assert_eq!(cold["evaluation_metric"]["new_derivations"], 100);
    let warm = read_json(&out.join("warm-clean/run.json"));
    assert_eq!(warm["evaluation_metric"]["new_derivations"], 0);
}
