//! A dead component is named. Each of the lab's processes (PostgreSQL, the
//! server, the worker, an eval subprocess) is killed with SIGKILL in the
//! middle of a real cold-clean pass of a 2,000-package flake:
//!
//! - the run ends exit 2 and names the component and how it ended;
//! - the partial bundle reads, and its summary says why the pass did not finish;
//! - nothing of the lab is left running.

mod common;

use std::io::BufRead;
use std::path::Path;

use common::*;

/// Processes whose command line names `dir`.
fn running_in(dir: &Path) -> Vec<String> {
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

/// The pid of the component to kill, once it is there.
fn victim(component: &str, lab: &Path) -> Option<u32> {
    match component {
        "PostgreSQL" => std::fs::read_to_string(lab.join("pg/data/postmaster.pid")).ok()?.lines().next()?.trim().parse().ok(),
        "the lab server" => read_json(&lab.join("lab.json"))["server_pid"].as_u64().map(|p| p as u32),
        "lab worker 0" => read_json(&lab.join("lab.json"))["worker_pids"][0].as_u64().map(|p| p as u32),
        _ => std::fs::read_dir("/proc").ok()?.flatten().filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok()).find(|pid| {
            let args: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
                .unwrap_or_default();
            args.len() > 3 && args[1] == "lab" && args[2] == "eval" && args.iter().any(|a| a.starts_with(&lab.display().to_string()))
        }),
    }
}

/// The run under test, interrupted (SIGINT: it stops its lab) if the test
/// fails before it ends, so a failed test leaves no lab running.
struct Run(std::process::Child);

impl Drop for Run {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
            let _ = self.0.wait();
        }
    }
}

/// Kills `component` once the run's progress shows `phase`.
fn kill_mid_pass(component: &str, phase: &str, how: &str) {
    let tmp = reachable_tmp("evalbench-faults-test.");
    let (flake, out, lab) = (tmp.path().join("flake"), tmp.path().join("out"), tmp.path().join("lab"));
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "2000", "--out"]).arg(&flake));
    let mut run = Run(evalbench()
        // No warm-up run: the kill lands in the pass itself, whose run.json names the dead.
        .args(["run", "--passes", "cold-clean", "--repeat", "1", "--warmup", "0", "--no-report", "--no-pcap", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .arg("--flake")
        .arg(&flake)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap());
    let mut lines = std::io::BufReader::new(run.0.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    let mut killed = None;
    for l in lines.by_ref() {
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
            let pid = pid.unwrap_or_else(|| panic!("{component}: no process to kill\n{stderr}"));
            // SAFETY: kill has no memory preconditions.
            assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0, "{component} (pid {pid})");
            killed = Some(pid);
        }
    }
    let status = run.0.wait().unwrap();
    assert!(killed.is_some(), "{component}: the pass never reached {phase}\n{stderr}");
    assert_eq!(status.code(), Some(2), "{component}: {stderr}");
    assert!(stderr.contains(component) && stderr.contains(how), "{component} named with how it ended ({how}):\n{stderr}");
    // The partial bundle reads, and says why the pass did not finish.
    let run = read_json(&out.join("cold-clean/run.json"));
    assert!(run["dead"].as_array().is_some_and(|d| d.iter().any(|x| x.as_str().unwrap().contains(component))), "{run}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(summary.contains("did not finish") && summary.contains(component), "{summary}");
    assert!(!summary.contains("(no run.json)"), "{summary}");
    run_ok(evalbench().args(["summarize", "--quiet", "-o"]).arg(tmp.path().join("again")).arg(&out));
    // Nothing of the lab is left running.
    let left = running_in(&lab);
    assert!(left.is_empty(), "{component}: still running: {left:?}");
}

#[test]
fn a_killed_postgresql_is_named() {
    kill_mid_pass("PostgreSQL", "EvaluatingDerivation", "is not running");
}

#[test]
fn a_killed_server_is_named() {
    kill_mid_pass("the lab server", "EvaluatingDerivation", "killed by signal 9 (SIGKILL)");
}

#[test]
fn a_killed_worker_is_named() {
    kill_mid_pass("lab worker 0", "EvaluatingDerivation", "killed by signal 9 (SIGKILL)");
}

#[test]
fn a_killed_eval_subprocess_is_named() {
    // The eval subprocess runs while the flake is evaluated; its worker reports how it ended.
    kill_mid_pass("an eval subprocess", "EvaluatingFlake", "killed by signal 9 (SIGKILL)");
}
