//! Command-level measurement, for `evalbench bench`: wall, user and sys
//! time, exit status, and the peak memory of the whole process tree: a
//! cgroup's peak (v2 `memory.peak`, v1 `memory.max_usage_in_bytes`) where
//! one can be made, else the summed RSS of the tree sampled every 10 ms.

use crate::error::HarnessError;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use evalbench_host::is_root;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub peak_bytes: Option<u64>,
    pub exit: Option<i32>,
    /// Seconds from the first run's start, for --jobs timelines.
    pub started_s: f64,
    /// nix's counters of the run (`bench --nix-stats`), when nix wrote them.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "evalbench_bundle::nix_stats::serialize_opt")]
    pub nix_stats: Option<evalbench_bundle::nix_stats::Counters>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub enum MemorySource {
    CgroupV2,
    CgroupV1,
    /// Sum of RSS over the process tree, sampled every 10 ms: misses peaks shorter than that.
    ProcSampling10ms,
}

fn v1_base() -> Option<PathBuf> {
    let p = PathBuf::from("/sys/fs/cgroup/memory");
    p.join("memory.max_usage_in_bytes").exists().then_some(p)
}

fn v2_base() -> Option<PathBuf> {
    let p = PathBuf::from("/sys/fs/cgroup");
    (p.join("cgroup.controllers").exists()
        && std::fs::read_to_string(p.join("cgroup.controllers")).is_ok_and(|c| c.contains("memory")))
    .then_some(p)
}

/// Where peaks will come from on this machine.
pub fn memory_source() -> MemorySource {
    if v2_base().is_some() && is_root() {
        MemorySource::CgroupV2
    } else if v1_base().is_some() && is_root() {
        MemorySource::CgroupV1
    } else {
        MemorySource::ProcSampling10ms
    }
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Sum of RSS of `pid` and its descendants, in bytes.
fn tree_rss(root: u32) -> u64 {
    let mut parent: Vec<(u32, u32, u64)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let Some(rest) = stat.rsplit(')').next() else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the command: state ppid ... rss is field 24 (index 21 here).
        let (Some(ppid), Some(rss)) =
            (f.get(1).and_then(|x| x.parse().ok()), f.get(21).and_then(|x| x.parse::<u64>().ok()))
        else {
            continue;
        };
        parent.push((pid, ppid, rss * 4096));
    }
    let mut inside = vec![root];
    let mut total = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &(pid, ppid, _) in &parent {
            if inside.contains(&ppid) && !inside.contains(&pid) {
                inside.push(pid);
                changed = true;
            }
        }
    }
    for &(pid, _, rss) in &parent {
        if inside.contains(&pid) {
            total += rss;
        }
    }
    total
}

/// Runs `argv` once (through `sh -c` when it is one word with spaces).
/// Without `memory`, no cgroup and no sampling: the leanest timing.
pub fn run_once(argv: &[String], t0: Instant, quiet: bool, memory: bool) -> Result<Run, HarnessError> {
    run_once_with(argv, t0, quiet, memory, None)
}

/// As [`run_once`], with the command's stderr kept in a file (for its error message).
pub fn run_once_with(
    argv: &[String],
    t0: Instant,
    quiet: bool,
    memory: bool,
    stderr_to: Option<&std::path::Path>,
) -> Result<Run, HarnessError> {
    run_once_env(argv, t0, quiet, memory, stderr_to, &[])
}

/// The command's process moved into cgroup `dir` (made here) between fork
/// and exec: its whole tree is counted from its first instruction.
fn join_at_exec(cmd: &mut Command, dir: &std::path::Path) -> Result<(), HarnessError> {
    std::fs::create_dir(dir).map_err(HarnessError::io(dir))?;
    let procs = std::ffi::CString::new(dir.join("cgroup.procs").to_string_lossy().as_bytes())
        .map_err(|e| HarnessError::io(dir)(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    // SAFETY: only async-signal-safe calls (open, write, close) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let ok = libc::write(fd, b"0".as_ptr() as *const libc::c_void, 1);
            libc::close(fd);
            if ok < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// The tree under `pid` sampled every 10 ms until told to stop: its largest RSS.
type Sampler = (Arc<AtomicBool>, Arc<Mutex<u64>>, std::thread::JoinHandle<()>);

fn sample_tree(pid: u32) -> Sampler {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(Mutex::new(0u64));
    let (s2, p2) = (stop.clone(), peak.clone());
    let h = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            let r = tree_rss(pid);
            let mut p = p2.lock().unwrap_or_else(|e| e.into_inner());
            *p = (*p).max(r);
            drop(p);
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    (stop, peak, h)
}

/// As [`run_once_with`], with variables added to the command's environment.
pub fn run_once_env(
    argv: &[String],
    t0: Instant,
    quiet: bool,
    memory: bool,
    stderr_to: Option<&std::path::Path>,
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<Run, HarnessError> {
    let mut cmd = if argv.len() == 1 && argv[0].contains(' ') {
        let mut c = Command::new("sh");
        c.args(["-c", &argv[0]]);
        c
    } else {
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        c
    };
    if quiet {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    }
    if let Some(p) = stderr_to {
        cmd.stderr(std::fs::File::create(p).map_err(HarnessError::io(p))?);
    }
    cmd.stdin(Stdio::null());
    cmd.envs(env.iter().copied());
    let source = memory_source();
    let cg: Option<PathBuf> = if !memory {
        None
    } else {
        match source {
            MemorySource::CgroupV2 => v2_base(),
            MemorySource::CgroupV1 => v1_base(),
            MemorySource::ProcSampling10ms => None,
        }
    }
    .map(|b| b.join(format!("evalbench-bench-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))));
    if let Some(dir) = &cg {
        join_at_exec(&mut cmd, dir)?;
    }
    let started = Instant::now();
    let child = cmd.spawn().map_err(|source| HarnessError::Spawn { command: argv.join(" "), source })?;
    let pid = child.id();
    // Without a cgroup, sample the tree while it runs.
    let sampling = (memory && cg.is_none()).then(|| sample_tree(pid));
    // std's Child is not waited again: dropping it does not reap.
    let waited = evalbench_host::wait4(pid);
    let wall = started.elapsed().as_secs_f64();
    drop(child);
    let (status, ru) = waited.map_err(HarnessError::Wait)?;
    let peak = match (&cg, sampling) {
        (Some(dir), _) => {
            let file = if source == MemorySource::CgroupV2 { "memory.peak" } else { "memory.max_usage_in_bytes" };
            let v = std::fs::read_to_string(dir.join(file)).ok().and_then(|s| s.trim().parse().ok());
            let _ = std::fs::remove_dir(dir);
            v
        }
        (None, Some((stop, peak, h))) => {
            stop.store(true, Ordering::Relaxed);
            if h.join().is_err() {
                return Err(HarnessError::Absent("the memory sampler thread panicked: no peak for this run"));
            }
            let p = *peak.lock().unwrap_or_else(|e| e.into_inner());
            Some(p)
        }
        _ => None,
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let exit = if libc::WIFEXITED(status) { Some(libc::WEXITSTATUS(status)) } else { None };
    use evalbench_bundle::num::s;
    Ok(Run {
        wall_s: s(wall),
        user_s: s(tv(ru.ru_utime)),
        sys_s: s(tv(ru.ru_stime)),
        peak_bytes: peak,
        exit,
        started_s: s(started.duration_since(t0).as_secs_f64()),
        nix_stats: None,
    })
}

/// Where `run_many` has nix write its statistics, one file per run
/// (`NIX_SHOW_STATS_PATH`): nix writes it when it exits, so a command that
/// runs nix several times leaves the last one's.
pub struct NixStats<'a> {
    pub dir: &'a std::path::Path,
}

static STATS_FILE: AtomicUsize = AtomicUsize::new(0);

/// Runs `runs` measured runs, `parallel` at a time; returns them and the wall of the whole batch.
#[allow(clippy::too_many_arguments)]
pub fn run_many(
    argv: &[String],
    prepare: Option<&str>,
    runs: usize,
    parallel: usize,
    quiet: bool,
    memory: bool,
    nix_stats: Option<&NixStats<'_>>,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(Vec<Run>, f64), HarnessError> {
    let t0 = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Result<Run, HarnessError>>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..parallel.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= runs {
                    break;
                }
                if let Some(p) = prepare {
                    let ok = Command::new("sh").args(["-c", p]).stdin(Stdio::null()).stdout(Stdio::null()).status();
                    if !ok.is_ok_and(|s| s.success()) {
                        results
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(Err(HarnessError::Prepare(p.to_string())));
                        break;
                    }
                }
                let r = match nix_stats {
                    None => run_once(argv, t0, quiet, memory),
                    Some(n) => {
                        let f = n.dir.join(format!("run-{}.json", STATS_FILE.fetch_add(1, Ordering::Relaxed)));
                        let env =
                            [("NIX_SHOW_STATS", std::ffi::OsStr::new("1")), ("NIX_SHOW_STATS_PATH", f.as_os_str())];
                        run_once_env(argv, t0, quiet, memory, None, &env).map(|mut r| {
                            r.nix_stats =
                                std::fs::read(&f).ok().and_then(|t| evalbench_bundle::nix_stats::counters_of(&t));
                            r
                        })
                    }
                };
                let mut g = results.lock().unwrap_or_else(|e| e.into_inner());
                g.push(r);
                progress(g.len());
            });
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let mut out = Vec::new();
    for r in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        out.push(r?);
    }
    out.sort_by(|a, b| a.started_s.total_cmp(&b.started_s));
    Ok((out, wall))
}
