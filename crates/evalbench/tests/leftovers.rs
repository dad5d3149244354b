//! Nothing left behind: a `run` removes the lab it made for itself, starts
//! clean in a directory holding an earlier bundle, and `lab prune` removes
//! stopped labs while naming one still in use. Real labs throughout. And a
//! capture switched off reads as switched off on the page, not as missing.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The directories a run's stderr says it removed.
fn removed(stderr: &str) -> Vec<PathBuf> {
    stderr
        .lines()
        .filter_map(|l| {
            l.strip_prefix("evalbench run: removed ")?.split(" (made for this run").next().map(PathBuf::from)
        })
        .collect()
}

#[test]
fn a_run_removes_its_own_lab_and_starts_clean_over_an_earlier_bundle() {
    let tmp = reachable_tmp("evalbench-leftovers-test.");
    let out = tmp.path().join("out");
    let run = |repeat: &str| {
        let r = evalbench()
            .args(["run", "--passes", "cold-clean", "--no-report", "--no-pcap", "--repeat", repeat, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr).into_owned();
        assert!(r.status.success(), "{stderr}");
        stderr
    };
    let first = run("3");
    let gone = removed(&first);
    assert_eq!(gone.len(), 2, "the lab and its embedded flake: {first}");
    assert!(gone.iter().all(|d| d.starts_with("/var/tmp/evalbench") && !d.exists()), "{gone:?}");
    assert!(out.join("cold-clean.3").is_dir());
    // A stray file inside an old pass, as a crashed run leaves one: the pass is evalbench's, by its manifest.
    std::fs::write(out.join("cold-clean.3/stray.jsonl"), "{}\n").unwrap();
    // A file of someone else's beside the bundle: the run is refused, before anything starts, naming it.
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let refused =
        evalbench().args(["run", "--passes", "cold-clean", "--repeat", "1", "--out"]).arg(&out).output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.contains("notes.txt: not written by evalbench") && said.contains("refusing to run into"), "{said}");
    assert!(out.join("cold-clean.3/stray.jsonl").is_file() && !out.join("evalbench.lock").exists(), "nothing touched");
    std::fs::remove_file(out.join("notes.txt")).unwrap();
    let second = run("1");
    assert!(second.contains(&format!("{} held an earlier bundle of evalbench's", out.display())), "{second}");
    assert!(
        !out.join("cold-clean.2").exists() && !out.join("cold-clean.3").exists(),
        "no old pass is read as a run of this one"
    );
    assert_eq!(read_json(&out.join("summary.json"))["passes"].as_array().unwrap().len(), 1);
    assert!(removed(&second).iter().all(|d| !d.exists()));
    // The page says a capture switched off was switched off, not that its file is missing.
    run_ok(evalbench().args(["inspect", "-o"]).arg(tmp.path().join("page")).arg(&out));
    let page = std::fs::read_to_string(tmp.path().join("page/index.html")).unwrap();
    assert!(page.contains("Not captured: pcap was switched off for this run"), "--no-pcap on the page");
    assert!(!page.contains("proto.pcap</code> is missing") && !page.contains("pg.pcap</code> is missing"));
}

/// A lab that is stopped when the test ends, however it ends.
struct Lab(PathBuf);

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
    }
}

fn up(dir: &Path) -> Lab {
    run_ok(evalbench().args(["lab", "up", "--net", "off", "--lab-dir"]).arg(dir));
    Lab(dir.to_path_buf())
}

#[test]
fn prune_removes_stopped_labs_and_names_one_in_use() {
    let tmp = reachable_tmp("evalbench-prune-test.");
    let root = tmp.path().join("labs");
    let (stopped, running) = (root.join("lab-stopped"), root.join("lab-running"));
    std::fs::create_dir_all(&root).unwrap();
    let _a = up(&stopped);
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&stopped));
    let _b = up(&running);
    // As `run` makes them: the embedded flake beside its lab, and one whose lab is gone.
    for orphan in [stopped.with_extension("hello-flake"), root.join("lab-gone.hello-flake")] {
        std::fs::create_dir_all(&orphan).unwrap();
        std::fs::write(orphan.join("flake.nix"), "{ }").unwrap();
    }
    let r = evalbench().args(["lab", "prune", "--json", "--root"]).arg(&root).output().unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(
        !stopped.exists()
            && !stopped.with_extension("hello-flake").exists()
            && !root.join("lab-gone.hello-flake").exists(),
        "{v}"
    );
    assert!(v["removed"].as_array().unwrap().iter().any(|p| p == &serde_json::json!(stopped)), "{v}");
    assert!(v["bytes"].as_u64().unwrap() > 10 << 20, "PostgreSQL's data: {v}");
    assert!(running.exists() && stderr.contains("is in use, left alone"), "{stderr}");
    assert!(read_json(&running.join("lab.json"))["server_pid"].is_number(), "a lab in use is not stopped either");
    // Once nothing runs in it, it goes too.
    run_ok(evalbench().args(["lab", "down", "--lab-dir"]).arg(&running));
    let r = run_ok(evalbench().args(["lab", "prune", "--root"]).arg(&root));
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with("removed 1 directory under"),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    assert!(!running.exists());
}
