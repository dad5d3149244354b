//! `evalbench-host`: the machine evalbench runs on, in one place: the
//! clock spans and status timelines are stamped with, whether we are root,
//! commands on a host (here, in a network namespace, over ssh, as another
//! user) and the daemons the lab starts. The lab, the harness and the sample
//! pipeline all use it, so none depends on another for these.

mod error;
mod exec;
pub mod out;

pub use error::HostError;

pub use exec::{interrupt, HostExec};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Unix microseconds now, from the system clock.
pub fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// A stable 32-bit FNV-1a hash of a path: names and subnets derived from a directory.
pub fn dir_hash(dir: &Path) -> u32 {
    let mut h: u32 = 2166136261;
    for b in dir.as_os_str().as_encoded_bytes() {
        h = (h ^ *b as u32).wrapping_mul(16777619);
    }
    h
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs a command to completion; an error carries its stderr.
pub fn run(cmd: &mut Command) -> Result<String, HostError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(HostError::spawn(cmd))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(HostError::Failed { command: format!("{cmd:?}"), status: out.status, stderr });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts a daemon in its own session, output to `log`; returns its pid.
pub fn spawn_detached(mut cmd: Command, log: &Path) -> Result<u32, HostError> {
    use std::os::unix::process::CommandExt;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(HostError::io(dir))?;
    }
    let f = std::fs::OpenOptions::new().create(true).append(true).open(log).map_err(HostError::io(log))?;
    let f2 = f.try_clone().map_err(HostError::io(log))?;
    cmd.stdin(Stdio::null()).stdout(f).stderr(f2);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our session.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(HostError::spawn(&cmd))?;
    let pid = child.id();
    // Reap it in the background if it dies while we still run.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(pid)
}

pub fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // A zombie has exited; only its parent's wait is missing.
    !stat.is_empty() && stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z'))
}

/// SIGTERM, a grace period, then SIGKILL. Idempotent.
pub fn stop(pid: u32, grace: Duration) {
    if !alive(pid) {
        return;
    }
    // SAFETY: plain kill(2) on a pid we started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A free TCP port on loopback (of the current namespace).
pub fn free_port() -> Result<u16, HostError> {
    let io = |source| HostError::Io { path: "127.0.0.1:0".into(), source };
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(io)?;
    Ok(l.local_addr().map_err(io)?.port())
}
