//! The rows of docs/faults.md that need a lab of their own: a failing
//! flake, a timeout, Ctrl-C at each stage (reached by the test-only hook
//! `EVALBENCH_STOP_AT`, not by timing), two runs on one --out, a process of
//! the pipeline killed mid-pass, and another local user. Few, and each a
//! real lab: the hello flake unless the fault needs a longer evaluation.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::scenes::{seen, Seen};
use super::Row;
use crate::common::*;

/// The run under test, interrupted (SIGINT: it stops its lab) if the test
/// fails before it ends, so a failed test leaves no lab running.
pub struct Run(pub std::process::Child);

impl Drop for Run {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
            let _ = self.0.wait();
        }
    }
}

/// A lab directory the test gave a run: stopped and removed when the test ends.
struct LabDir(PathBuf);

impl Drop for LabDir {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Processes whose command line names `dir`.
pub fn running_in(dir: &Path) -> Vec<String> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != std::process::id())
        .filter_map(|pid| {
            let c = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).ok()?).replace('\0', " ");
            c.contains(&needle).then(|| format!("{pid}: {c}"))
        })
        .collect()
}

/// Line 2 of a bundle's summary.txt: the first pass's first line.
fn line_two(out: &Path) -> String {
    std::fs::read_to_string(out.join("summary.txt")).unwrap_or_default().lines().nth(1).unwrap_or("").to_string()
}

fn judge(row: &Row, s: &Seen, checks: Vec<(bool, String)>) -> Result<(), String> {
    let mut wrong: Vec<String> = checks.into_iter().filter(|(ok, _)| !ok).map(|(_, w)| w).collect();
    if s.exit != row.exit {
        wrong.insert(0, format!("exit {}, the table says {}", s.exit, row.exit));
    }
    row.verdict(&wrong, None, &s.said, 3000)
}

/// A flake whose one attribute throws.
fn throwing_flake(dir: &Path) -> PathBuf {
    let f = dir.join("throws");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(
        f.join("flake.nix"),
        "{ outputs = { self }: { packages.x86_64-linux.default = throw \"deliberately broken\"; }; }\n",
    )
    .unwrap();
    f
}

/// `run` with its own lab in `t`, the hello flake unless `flake`.
fn run(t: &Path, flake: Option<&Path>, args: &[&str], stop_at: Option<&str>) -> (Seen, PathBuf) {
    let (out, lab) = (t.join("out"), t.join("lab"));
    let _lab = LabDir(lab.clone());
    let mut c = evalbench();
    c.args(["run", "--passes", "cold-clean", "--no-report", "--bare", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .args(args);
    if let Some(f) = flake {
        c.arg("--flake").arg(f);
    }
    if let Some(stage) = stop_at {
        c.env("EVALBENCH_STOP_AT", stage);
    }
    (seen(&mut c), out)
}

pub fn failing_flake(row: &Row) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-lab.");
    let flake = throwing_flake(tmp.path());
    let warmup = if row.fault == "flake:throws" { "1" } else { "0" };
    let (s, out) = run(tmp.path(), Some(&flake), &["--repeat", "1", "--warmup", warmup], None);
    let metrics = std::fs::read_to_string(out.join("nix-support/hydra-metrics")).unwrap_or_default();
    let who = if warmup == "1" { "warmup/cold-clean failed" } else { "  cold-clean failed" };
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap_or_default();
    judge(
        row,
        &s,
        vec![
            (
                line_two(&out).starts_with("cold-clean  FAILED (0 of 1 run completed): no figure"),
                format!("line 2: {}", line_two(&out)),
            ),
            (
                summary.contains(who) && summary.contains("deliberately broken"),
                format!("names the run ({who}) and nix's error"),
            ),
            (
                metrics.contains("evalbench.cold-clean.completed_runs 0 runs") && !metrics.contains(".evaluated "),
                format!("hydra-metrics: {metrics}"),
            ),
        ],
    )
}

pub fn timeout(row: &Row) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-lab.");
    let flake = tmp.path().join("big");
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "2000", "--out"]).arg(&flake));
    let (s, out) = run(tmp.path(), Some(&flake), &["--repeat", "1", "--warmup", "0", "--timeout-s", "1"], None);
    judge(
        row,
        &s,
        vec![(
            line_two(&out).starts_with("cold-clean  TIMED OUT (0 of 1 run completed): no figure"),
            format!("line 2: {}", line_two(&out)),
        )],
    )
}

/// Ctrl-C at a stage, reached by name (`EVALBENCH_STOP_AT`).
pub fn interrupt(row: &Row) -> Result<(), String> {
    let stage = row.fault.strip_prefix("interrupt:").unwrap();
    let tmp = reachable_tmp("evalbench-faults-lab.");
    let keep = if stage == "summarizing" { vec!["--keep-lab"] } else { vec![] };
    let mut args = vec!["--repeat", "3", "--warmup", "1"];
    args.extend(keep);
    let lab = tmp.path().join("lab");
    // The lab is stopped by the run; its lab.json read here before LabDir removes it.
    let (s, out) = {
        let (out, labdir) = (tmp.path().join("out"), LabDir(lab.clone()));
        let mut c = evalbench();
        c.args(["run", "--passes", "cold-clean", "--no-report", "--bare", "--out"])
            .arg(&out)
            .arg("--lab-dir")
            .arg(&lab)
            .args(&args);
        c.env("EVALBENCH_STOP_AT", stage);
        let s = seen(&mut c);
        let secrets: Vec<String> = std::fs::read_to_string(lab.join("lab.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|v| {
                ["pg_password", "ci_password", "proto_token", "api_key"]
                    .iter()
                    .filter_map(|k| v[*k].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        drop(labdir);
        (Seen { exit: s.exit, said: format!("{}\nSECRETS {}", s.said, secrets.join(" ")) }, out)
    };
    let two = line_two(&out);
    let mut checks = vec![];
    match stage {
        "setup" => {
            checks.push((
                s.said.contains("interrupted before the first run: nothing was captured"),
                "nothing captured, said".into(),
            ));
            checks.push((!out.exists(), "the output directory it made is removed".into()));
        }
        "warm-up" | "captures" => checks.push((
            two.starts_with("cold-clean  INTERRUPTED (0 of 3 runs completed): no figure"),
            format!("line 2: {two}"),
        )),
        "run" => {
            let first = read_json(&out.join("cold-clean/run.json"))["evaluated_s"].as_f64().unwrap_or(f64::NAN);
            let want = format!(
                "cold-clean  INTERRUPTED (1 of 3 runs completed): evaluated median {first:.3} s (over 1 of 3 runs)"
            );
            checks.push((two.starts_with(&want), format!("line 2: {two}; want {want}")));
        }
        _ => {
            checks.push((
                s.said.contains("interrupted after the last run") && two.contains("over 3 runs"),
                format!("whole: {two}"),
            ));
            // No password or key of the lab's in any file of the bundle.
            let secrets: Vec<&str> = s.said.rsplit("SECRETS ").next().unwrap_or("").split_whitespace().collect();
            checks.push((secrets.len() == 4, format!("the lab's four secrets read: {}", secrets.len())));
            let leaked: Vec<String> = files(&out)
                .into_iter()
                .filter(|f| secrets.iter().any(|x| std::fs::read(f).is_ok_and(|b| contains(&b, x.as_bytes()))))
                .map(|f| f.display().to_string())
                .collect();
            checks.push((leaked.is_empty(), format!("secrets in the bundle: {leaked:?}")));
        }
    }
    checks.push((running_in(&lab).is_empty(), format!("still running: {:?}", running_in(&lab))));
    judge(row, &s, checks)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Two runs on one --out: the second refused at once; the first's progress is one line a run.
pub fn two_runs(rows: &[&Row]) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-lab.");
    let (out, lab) = (tmp.path().join("out"), tmp.path().join("lab"));
    let _lab = LabDir(lab.clone());
    let mut first = Run(evalbench()
        .args(["run", "--passes", "cold-clean", "--repeat", "3", "--warmup", "0", "--no-report", "--bare", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap());
    let pid = first.0.id();
    while !out.join("evalbench.lock").exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second = seen(evalbench().args(["run", "--passes", "cold-clean", "--out"]).arg(&out));
    let mut stderr = String::new();
    for l in std::io::BufReader::new(first.0.stderr.take().unwrap()).lines() {
        stderr.push_str(&l.unwrap());
        stderr.push('\n');
    }
    let status = first.0.wait().unwrap();
    // Run again over the first's bundle: an earlier bundle of evalbench's, replaced.
    let again = seen(
        evalbench()
            .args(["run", "--passes", "cold-clean", "--repeat", "1", "--warmup", "0", "--no-report", "--bare", "--out"])
            .arg(&out)
            .arg("--lab-dir")
            .arg(&lab),
    );
    let mut errors = Vec::new();
    for row in rows {
        let r = match row.fault.as_str() {
            "run:two-at-once" => judge(
                row,
                &second,
                vec![
                    (
                        second.said.contains(&format!("is in use by evalbench run (pid {pid})")),
                        "names the first run".into(),
                    ),
                    (status.success(), "the first ends well".into()),
                ],
            ),
            "out:earlier-bundle" => judge(
                row,
                &again,
                vec![
                    (
                        again.said.contains("held an earlier bundle of evalbench's"),
                        "says it replaced the earlier bundle".into(),
                    ),
                    (!out.join("cold-clean.3").exists(), "no old run left to be read as this one's".into()),
                ],
            ),
            _ => {
                let per_run: Vec<&str> = stderr.lines().filter(|l| l.contains("cold-clean run ")).collect();
                let want = ["cold-clean run 1/3", "cold-clean run 2/3", "cold-clean run 3/3"];
                let ok = per_run.len() == 3
                    && per_run.iter().zip(want).all(|(l, w)| l.contains(w))
                    && !stderr.contains("arming captures");
                judge(
                    row,
                    &Seen { exit: status.code().unwrap_or(-1), said: stderr.clone() },
                    vec![(ok, format!("one line a run: {per_run:?}"))],
                )
            }
        };
        errors.extend(r.err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n\n"))
    }
}

/// Another local user, while a lab is up: none of its doors open.
pub fn nobody(rows: &[&Row]) -> Result<(), String> {
    let tmp = reachable_tmp("evalbench-faults-lab.");
    let lab = tmp.path().join("lab");
    let _lab = LabDir(lab.clone());
    run_ok(evalbench().args(["lab", "up", "--lab-dir"]).arg(&lab));
    let st = read_json(&lab.join("lab.json"));
    let mut errors = Vec::new();
    for row in rows {
        let (s, checks) = tried_as_nobody(&row.fault, &lab, &st);
        if let Err(e) = judge(row, &s, checks) {
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n\n"))
    }
}

/// The lab's secrets, as lab.json keeps them.
fn secrets(st: &serde_json::Value) -> Vec<String> {
    ["pg_password", "ci_password", "proto_token", "api_key"]
        .iter()
        .map(|k| st[*k].as_str().unwrap().to_string())
        .collect()
}

/// One row's try as nobody (the lab's api, PostgreSQL by TCP and by socket,
/// lab.json, /proto), or what the lab's processes show on their command lines.
fn tried_as_nobody(fault: &str, lab: &Path, st: &serde_json::Value) -> (Seen, Vec<(bool, String)>) {
    let (addr, pg_port, api) = (
        st["net"]["server_addr"].as_str().unwrap().to_string(),
        st["pg_port"].to_string(),
        st["server_port"].to_string(),
    );
    let as_nobody = |program: &str| {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--", program]).stdin(std::process::Stdio::null());
        c
    };
    let psql = "/usr/lib/postgresql/15/bin/psql";
    match fault {
        "nobody:pg-tcp" => (
            seen(
                as_nobody(psql)
                    .arg(format!("host={addr} port={pg_port} user=postgres dbname=postgres"))
                    .args(["-c", "select 1"]),
            ),
            vec![],
        ),
        "nobody:pg-socket" => (
            seen(
                as_nobody(psql)
                    .arg("-h")
                    .arg(lab.join("pg/sock"))
                    .args(["-p", &pg_port, "-U", "postgres", "-c", "select 1"]),
            ),
            vec![],
        ),
        "nobody:lab.json" => (seen(as_nobody("cat").arg(lab.join("lab.json"))), vec![]),
        "nobody:api" => {
            let s = seen(as_nobody("curl").args([
                "-sf",
                "-X",
                "POST",
                &format!("http://{addr}:{api}/api/v1/tasks/hello/hello/evaluate"),
            ]));
            (s, vec![])
        }
        "nobody:proto" => {
            let s = seen(as_nobody("curl").args([
                "-sf",
                "-H",
                "Connection: Upgrade",
                "-H",
                "Upgrade: websocket",
                "-H",
                "Sec-WebSocket-Version: 13",
                "-H",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                &format!("http://{addr}:{api}/proto"),
            ]));
            (s, vec![])
        }
        _ => {
            let lines: Vec<String> = running_in(lab);
            let leaked: Vec<&String> =
                lines.iter().filter(|l| secrets(st).iter().any(|x| l.contains(x.as_str()))).collect();
            let s = Seen { exit: 0, said: lines.join("\n") };
            let checks = vec![
                (!lines.is_empty(), "the lab's processes found".to_string()),
                (leaked.is_empty(), format!("a secret on a command line: {leaked:?}")),
            ];
            (s, checks)
        }
    }
}

/// The pid of the component to kill, once it is there.
fn victim(component: &str, lab: &Path) -> Option<u32> {
    match component {
        "PostgreSQL" => {
            std::fs::read_to_string(lab.join("pg/data/postmaster.pid")).ok()?.lines().next()?.trim().parse().ok()
        }
        "the lab server" => read_json(&lab.join("lab.json"))["server_pid"].as_u64().map(|p| p as u32),
        "lab worker 0" => read_json(&lab.join("lab.json"))["worker_pids"][0].as_u64().map(|p| p as u32),
        _ => {
            std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(
                |pid| {
                    let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
                        .map(|c| c.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
                        .unwrap_or_default();
                    args.len() > 3
                        && args[1] == "lab"
                        && args[2] == "eval"
                        && args.iter().any(|a| a.starts_with(&lab.display().to_string()))
                },
            )
        }
    }
}

/// A process of the pipeline killed with SIGKILL once the run's progress
/// (`-v`: every step) shows `phase`, in a 2,000-package flake's pass.
pub fn killed(row: &Row) -> Result<(), String> {
    let (component, phase, how) = match row.fault.as_str() {
        "killed:postgres" => ("PostgreSQL", "EvaluatingDerivation", "is not running"),
        "killed:server" => ("the lab server", "EvaluatingDerivation", "killed by signal 9 (SIGKILL)"),
        "killed:worker" => ("lab worker 0", "EvaluatingDerivation", "killed by signal 9 (SIGKILL)"),
        // The eval subprocess runs while the flake is evaluated; its worker reports how it ended.
        _ => ("an eval subprocess", "EvaluatingFlake", "killed by signal 9 (SIGKILL)"),
    };
    let tmp = reachable_tmp("evalbench-faults-test.");
    let (flake, out, lab) = (tmp.path().join("flake"), tmp.path().join("out"), tmp.path().join("lab"));
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "2000", "--out"]).arg(&flake));
    let mut run = Run(evalbench()
        // No warm-up run: the kill lands in the pass itself, whose run.json names the dead.
        .args([
            "run",
            "-v",
            "--passes",
            "cold-clean",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-report",
            "--no-pcap",
            "--out",
        ])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .arg("--flake")
        .arg(&flake)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap());
    let mut stderr = String::new();
    let mut killed = None;
    for l in std::io::BufReader::new(run.0.stderr.take().unwrap()).lines() {
        let l = l.unwrap();
        stderr.push_str(&l);
        stderr.push('\n');
        if killed.is_none() && l.contains(phase) {
            let pid = (0..50).find_map(|_| {
                victim(component, &lab).or_else(|| {
                    std::thread::sleep(std::time::Duration::from_millis(40));
                    None
                })
            });
            let Some(pid) = pid else { return Err(format!("{component}: no process to kill\n{stderr}")) };
            // SAFETY: kill has no memory preconditions.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0, "{component} (pid {pid})");
            killed = Some(pid);
        }
    }
    let status = run.0.wait().unwrap();
    let dead_named = read_json(&out.join("cold-clean/run.json"))["dead"]
        .as_array()
        .is_some_and(|d| d.iter().any(|x| x.as_str().unwrap_or("").contains(component)));
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap_or_default();
    let again =
        evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("again")).arg(&out).status().unwrap();
    let s = Seen { exit: status.code().unwrap_or(-1), said: stderr.clone() };
    judge(
        row,
        &s,
        vec![
            (killed.is_some(), format!("the pass never reached {phase}")),
            (
                stderr.contains(component) && stderr.contains(how),
                format!("{component} named with how it ended ({how})"),
            ),
            (dead_named, "run.json names the dead".into()),
            (
                line_two(&out).starts_with("cold-clean  CRASHED (0 of 1 run completed)") && summary.contains(component),
                format!("line 2: {}", line_two(&out)),
            ),
            (again.success(), "the partial bundle summarizes again".into()),
            (running_in(&lab).is_empty(), format!("still running: {:?}", running_in(&lab))),
        ],
    )
}
