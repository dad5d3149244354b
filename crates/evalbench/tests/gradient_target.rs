//! The gradient target, driving a lab through the same API and commands a
//! real deployment would get: exec prefixes, pid commands, a restart
//! command, trace directories fetched with tar.

mod common;

use std::path::Path;

use common::repo::{git, repo};
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

/// A lab started as a deployment evaluating `flake`, and the JSON describing
/// it to `--target gradient`: (the lab, its description, `lab up`'s state).
fn deployment(tmp: &Path, flake: &Path) -> (Lab, serde_json::Value, serde_json::Value) {
    let dir = tmp.join("deployment");
    let lab = Lab(dir.clone());
    let traces = dir.join("gtrace");
    let st: serde_json::Value = serde_json::from_slice(
        &run_ok(
            evalbench()
                .args(["lab", "up", "--lab-dir"])
                .arg(&dir)
                .arg("--flake")
                .arg(flake)
                .arg("--trace-dir")
                .arg(&traces),
        )
        .stdout,
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
        "admin_database_url": format!("host={server_addr} port={} user=postgres password={} \
            dbname=gradient", st["pg_port"], st["pg_password"].as_str().unwrap()),
        "maintenance_database_url": format!("host={server_addr} port={} user=postgres password={} \
            dbname=postgres", st["pg_port"], st["pg_password"].as_str().unwrap()),
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
    (lab, config, st)
}

#[test]
fn the_gradient_target_runs_passes_against_a_deployment() {
    let tmp = reachable_tmp("evalbench-gradient-test.");
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-flake");
    let (_lab, config, _) = deployment(tmp.path(), &hello);
    // An eval subprocess already running when the captures start, as
    // Gradient's worker keeps them: strace attaches to it too.
    let mut eval_subprocess = Bystander(std::process::Command::new("sleep").arg("600").spawn().unwrap());
    let mut config = config;
    config["eval_pids_cmd"] = format!("echo {}", eval_subprocess.0.id()).into();
    let cfg = tmp.path().join("gradient.json");
    std::fs::write(&cfg, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let out = tmp.path().join("out");
    let res = evalbench()
        .args([
            "run",
            "--target",
            "gradient",
            "--passes",
            "cold-clean,warm-clean,warm-instrumented",
            "--repeat",
            "1",
            "--target-config",
        ])
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
        for f in [
            "proto.pcap",
            "pg.pcap",
            "pg/pg_stat_statements.json",
            "pg/wait_samples.json",
            "pg/job_phases.json",
            "trace.json",
        ] {
            assert!(std::fs::metadata(p.join(f)).map(|m| m.len() > 0).unwrap_or(false), "{pass}/{f}");
        }
        let files: Vec<String> = std::fs::read_dir(p.join("trace"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
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
    let leftovers = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("evalbench-capture-"))
        .count();
    assert_eq!(leftovers, 0, "scratch directories left on the hosts");
    // The cold pass really was cold: the database was recreated, so it recorded every derivation anew.
    let cold = read_json(&out.join("cold-clean/run.json"));
    assert_eq!(cold["evaluation_metric"]["new_derivations"], 100);
    // nix's counts in the deployment's own row, as Gradient's worker reports them.
    assert!(cold["evaluation_metric"]["fn_calls"].as_i64().is_some_and(|n| n > 1000), "{}", cold["evaluation_metric"]);
    let warm = read_json(&out.join("warm-clean/run.json"));
    assert_eq!(warm["evaluation_metric"]["new_derivations"], 0);
}

/// `bisect --target gradient`: a deployment evaluates the head of the
/// branch its project watches, so each probe pushes its commit there; the
/// step is found at its commit, every probe's bundle is the deployment's,
/// and the branch is put back as it was found.
#[test]
fn bisect_on_a_deployment_pushes_each_probe_and_puts_the_branch_back() {
    let tmp = reachable_tmp("evalbench-gradient-bisect-test.");
    let dir = tmp.path().join("repo");
    // 300 -> 309 at commit 4: +3% of nix's work; no commit broken.
    let commits = repo(&dir, 6, &[(4, 309)], 100);
    let out = tmp.path().join("out");
    let bisect = |extra: &[&str]| {
        let mut c = evalbench();
        c.args(["bisect", "--json", "--flake"])
            .arg(&dir)
            .args([&commits[0], &commits[5], "--out"])
            .arg(&out)
            .args(extra);
        c
    };
    // Without the branch to push to, and with a time: refused before anything starts.
    let e = bisect(&["--target", "gradient"]).output().unwrap();
    assert_eq!(e.status.code(), Some(2));
    let err = String::from_utf8_lossy(&e.stderr);
    assert!(err.contains("--target-config") && err.contains("--push"), "{err}");
    let e = bisect(&[
        "--target",
        "gradient",
        "--target-config",
        "x.json",
        "--push",
        "r",
        "--push-branch",
        "b",
        "--measure",
        "evaluated",
    ])
    .output()
    .unwrap();
    assert!(
        !e.status.success() && String::from_utf8_lossy(&e.stderr).contains("one deployment is not"),
        "{}",
        String::from_utf8_lossy(&e.stderr)
    );

    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-flake");
    let (_lab, config, _) = deployment(tmp.path(), &hello);
    let cfg = tmp.path().join("gradient.json");
    std::fs::write(&cfg, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    // The repository the lab's project watches, on its branch main; a push
    // to a checked-out branch updates its files (a forge's is bare).
    let watched = tmp.path().join("deployment/repo");
    git(&watched, &["config", "receive.denyCurrentBranch", "updateInstead"]);
    let found_head = git(&watched, &["rev-parse", "main"]);
    let o = run_ok(&mut bisect(&[
        "--target",
        "gradient",
        "--target-config",
        cfg.to_str().unwrap(),
        "--push",
        watched.to_str().unwrap(),
        "--push-branch",
        "main",
    ]));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["found"][0]["commit"]["commit"], commits[4].as_str(), "{v}");
    assert!(v["found"][0]["moved"].as_array().unwrap().iter().any(|m| m["counter"] == "nrFunctionCalls"), "{v}");
    for p in v["probes"].as_array().unwrap() {
        let run = read_json(&out.join(p["commit"]["commit"].as_str().unwrap()).join("cold-clean/run.json"));
        assert_eq!(run["target"], "gradient", "{p}");
    }
    assert_eq!(git(&watched, &["rev-parse", "main"]), found_head, "the watched branch was not put back");
}
