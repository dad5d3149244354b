//! One lab run shared by the tests that only read its bundle.
//!
//! The main job's four passes take minutes; checking what they wrote
//! (passes, summary, page, whatif, compare, decoders) is many tests that
//! read and never write. Each test is a process of its own under nextest,
//! so the run is shared on disk: the first test to ask runs it under a
//! file lock, the others wait on the lock and then read. A run is keyed by
//! the evalbench binary (its size and time) and the arguments, so a new
//! build runs again; one that failed is not retried by every test.
//!
//! Each reader ends with [`SharedRun::unchanged`]: the bundle's files are
//! as the run left them, so that no test reads what another one wrote.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

/// A finished run: its bundle and what it printed. Its lab was found
/// stopped (no server, worker, network namespace or PostgreSQL left) and
/// removed.
pub struct SharedRun {
    pub out: PathBuf,
    pub stderr: String,
    manifest: PathBuf,
}

/// The main job's run, with the worker's clock set off by [`SKEW_MS`] and
/// [`MAIN_RUNS`] runs a clean pass.
pub fn main_run() -> SharedRun {
    shared_run(&["--worker-clock-skew-ms", &SKEW_MS.to_string(), "--repeat", &MAIN_RUNS.to_string()])
}

/// The main run's clean runs a pass: the README's default is 32
/// (`flags.rs` holds it), but what the tests read of the runs (each run's
/// files, the answer over them, the median run, whatif over every run) is
/// the same code at 10, and 44 fewer runs of the debug build took about
/// 70 s off the suite's longest test (141 s).
pub const MAIN_RUNS: usize = 10;

/// How far the main run's worker clock is set off the server's.
pub const SKEW_MS: i64 = 800;

/// `evalbench run ARGS`, run once per build and arguments.
pub fn shared_run(args: &[&str]) -> SharedRun {
    let bin = Path::new(env!("CARGO_BIN_EXE_evalbench"));
    let meta = std::fs::metadata(bin).expect("the evalbench binary");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (meta.len(), meta.modified().ok(), args, std::env::var_os("EVALBENCH_NIX")).hash(&mut h);
    let key = format!("{:016x}", h.finish());
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shared-runs");
    std::fs::create_dir_all(&root).unwrap();
    let lock = std::fs::File::create(root.join(format!("{key}.lock"))).unwrap();
    lock.lock().expect("the shared run's lock");
    let (out, done, failed, stderr_file) = (
        root.join(&key),
        root.join(format!("{key}.done")),
        root.join(format!("{key}.failed")),
        root.join(format!("{key}.stderr")),
    );
    // PostgreSQL's unprivileged user must reach the lab: under /tmp, not
    // the checkout (CI clones into a 0700 directory).
    let lab = PathBuf::from(format!("/tmp/evalbench-shared-lab.{key}"));
    let run = |stderr: String| SharedRun { out: out.clone(), stderr, manifest: root.join(format!("{key}.manifest")) };
    if let Ok(why) = std::fs::read_to_string(&failed) {
        panic!("the shared run `evalbench run {}` failed in another test:\n{why}", args.join(" "));
    }
    if done.exists() {
        return run(std::fs::read_to_string(&stderr_file).unwrap());
    }
    prune(&root, &key);
    // A run that was killed left a partial bundle and lab: start over.
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&lab);
    std::fs::create_dir(&lab).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&lab, std::fs::Permissions::from_mode(0o755)).unwrap();
    let t = std::time::Instant::now();
    let res = super::evalbench()
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--lab-dir")
        .arg(lab.join("lab"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr).into_owned();
    eprintln!("the shared run took {:.1} s", t.elapsed().as_secs_f64());
    if !res.status.success() {
        std::fs::write(&failed, format!("{}\n{stderr}", res.status)).unwrap();
        panic!("the shared run `evalbench run {}` failed: {}\n{stderr}", args.join(" "), res.status);
    }
    if let Err(why) = lab_gone(&lab.join("lab")) {
        std::fs::write(&failed, &why).unwrap();
        panic!("{why}");
    }
    let _ = std::fs::remove_dir_all(&lab);
    std::fs::write(&stderr_file, &stderr).unwrap();
    let shared = run(stderr);
    std::fs::write(&shared.manifest, manifest(&out)).unwrap();
    std::fs::write(&done, "").unwrap();
    shared
}

/// The lab is gone once the run ends: what its state file names is stopped.
fn lab_gone(lab: &Path) -> Result<(), String> {
    let state = super::read_json(&lab.join("lab.json"));
    if !state["server_pid"].is_null() || !state["worker_pids"].as_array().is_some_and(|w| w.is_empty()) {
        return Err(format!("the lab's processes are still named after the run: {state}"));
    }
    if let Some(ns) = state["net"]["server_ns"].as_str().filter(|ns| Path::new("/run/netns").join(ns).exists()) {
        return Err(format!("the lab's network namespace {ns} is still there"));
    }
    if lab.join("pg/data/postmaster.pid").exists() {
        return Err("the lab's PostgreSQL is still running".into());
    }
    Ok(())
}

impl SharedRun {
    /// Asserts that the bundle is as the run left it: every file there,
    /// with its size and time, and no other.
    pub fn unchanged(&self) {
        let before = std::fs::read_to_string(&self.manifest).unwrap();
        let now = manifest(&self.out);
        if before != now {
            let (b, n): (Vec<&str>, Vec<&str>) = (before.lines().collect(), now.lines().collect());
            let gone: Vec<&&str> = b.iter().filter(|l| !n.contains(l)).take(5).collect();
            let new: Vec<&&str> = n.iter().filter(|l| !b.contains(l)).take(5).collect();
            panic!("a test wrote into the shared bundle {}: was {gone:?}, now {new:?}", self.out.display());
        }
    }
}

/// Each file under `dir`, with its size and modification time, sorted.
fn manifest(dir: &Path) -> String {
    let mut lines = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                let t = m.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap();
                lines.push(format!("{} {} {}", e.path().strip_prefix(dir).unwrap().display(), m.len(), t.as_nanos()));
            }
        }
    }
    lines.sort();
    lines.join("\n")
}

/// Removes the runs of earlier builds, left an hour or more ago: each is
/// a whole bundle (over 100 MB for the main job).
fn prune(root: &Path, key: &str) {
    let old = |p: &Path| {
        std::fs::metadata(p).and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|e| e.as_secs() > 3600))
    };
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
        if !name.starts_with(key) && old(&p) {
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            let stem = name.split('.').next().unwrap_or("");
            let _ = std::fs::remove_dir_all(format!("/tmp/evalbench-shared-lab.{stem}"));
        }
    }
}
