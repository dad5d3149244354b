//! `evalbench-host`: the machine evalbench runs on, in one place: the
//! clock spans and status timelines are stamped with, whether we are root,
//! commands on a host (here, in a network namespace, over ssh, as another
//! user) and the daemons the lab starts. The lab, the harness and the sample
//! pipeline all use it, so none depends on another for these.

mod error;
mod exec;
pub mod out;
pub mod phase;

pub use error::HostError;

pub use exec::{interrupt, HostExec};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Unix microseconds now, from the system clock.
pub fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// A stable 32-bit hash of a path (FNV-1a, 64-bit, folded): the names,
/// namespaces and subnets derived from a directory. Nothing stored depends
/// on its values, so the `fnv` crate serves, not the bundle's own FNV.
pub fn dir_hash(dir: &Path) -> u32 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    h.write(dir.as_os_str().as_encoded_bytes());
    let v = h.finish();
    (v ^ (v >> 32)) as u32
}

/// Memory available for new work now (`/proc/meminfo`'s MemAvailable), bytes.
pub fn mem_available() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = m.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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
    // Reap it in the background if it dies while we still run, and keep
    // how it ended: a pass that fails names the daemon that died, and how.
    std::thread::spawn(move || {
        let mut child = child;
        if let Ok(st) = child.wait() {
            ENDED.lock().unwrap_or_else(|e| e.into_inner()).insert(pid, st);
        }
    });
    Ok(pid)
}

/// How the daemons started by this process ended, by pid.
static ENDED: std::sync::Mutex<std::collections::BTreeMap<u32, std::process::ExitStatus>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// How a daemon this process started ended (`exit status 1`, `killed by
/// signal 9 (SIGKILL)`), once it has; None while it runs or for another's.
pub fn ended(pid: u32) -> Option<String> {
    let st = *ENDED.lock().unwrap_or_else(|e| e.into_inner()).get(&pid)?;
    Some(describe_status(st))
}

/// An exit status in words, the signal named.
pub fn describe_status(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => {
            let name = match sig {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGINT => " (SIGINT)",
                libc::SIGBUS => " (SIGBUS)",
                _ => "",
            };
            format!("killed by signal {sig}{name}")
        }
        _ => "ended".to_string(),
    }
}

/// The last `n` lines of a log, for an error that says what a process said last.
pub fn log_tail(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return Vec::new() };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| l.chars().take(300).collect()).collect()
}

pub fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // A zombie has exited; only its parent's wait is missing.
    !stat.is_empty() && stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z'))
}

/// When a process started, in clock ticks since boot (`/proc/PID/stat`'s
/// 22nd field): with its pid, what tells our process from a later one that
/// was given the same pid.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold anything.
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A process we started, held by a pidfd and checked against the start time
/// recorded when we started it: signals reach it, never a stranger that
/// inherited its pid.
pub struct Ours(std::os::fd::OwnedFd);

impl Ours {
    /// The process if `pid` is still the one that started at `started`.
    pub fn find(pid: u32, started: u64) -> Option<Ours> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a new fd we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) };
        // The pidfd is bound to whoever had the pid when it was opened: checked now, it stays true.
        (start_time(pid) == Some(started) && alive(pid)).then_some(Ours(fd))
    }

    fn signal(&self, sig: i32) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal on our own pidfd, no siginfo.
        unsafe {
            libc::syscall(libc::SYS_pidfd_send_signal, self.0.as_raw_fd(), sig, std::ptr::null::<libc::siginfo_t>(), 0)
                == 0
        }
    }
}

/// Stops the process started at `started` if `pid` is still it; a pid now
/// held by another process is left alone. See [`stop`].
pub fn stop_ours(pid: u32, started: Option<u64>, grace: Duration) {
    match started {
        Some(t) => {
            if let Some(p) = Ours::find(pid, t) {
                stop_with(pid, grace, |sig| p.signal(sig));
            }
        }
        // Recorded by an older evalbench, without a start time: as before.
        None => stop(pid, grace),
    }
}

/// SIGTERM, a grace period, then SIGKILL. Idempotent. Only for a pid known
/// to be ours right now (a child not yet reaped, a pid just listed in our
/// namespace); a recorded one goes through [`stop_ours`].
pub fn stop(pid: u32, grace: Duration) {
    // SAFETY: plain kill(2) on a pid the caller knows is ours.
    stop_with(pid, grace, |sig| unsafe { libc::kill(pid as i32, sig) == 0 });
}

fn stop_with(pid: u32, grace: Duration, signal: impl Fn(i32) -> bool) {
    if !alive(pid) {
        return;
    }
    signal(libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !alive(pid) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reaps our child `pid`, retrying when a signal interrupts the wait: its
/// wait status and its resource usage (peak RSS, user and system time).
pub fn wait4(pid: u32) -> std::io::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, written by wait4.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waiting for a child of ours; the caller does not wait for it again.
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        if r == pid as i32 {
            return Ok((status, ru));
        }
        let e = std::io::Error::last_os_error();
        if r < 0 && e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// A free TCP port on loopback (of the current namespace).
pub fn free_port() -> Result<u16, HostError> {
    let io = |source| HostError::Io { path: "127.0.0.1:0".into(), source };
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(io)?;
    Ok(l.local_addr().map_err(io)?.port())
}
