//! Starting `nix` for the eval subprocess: the lab's configuration, death
//! with the parent, nix's own message on failure, and the statistics nix
//! writes when asked (`NIX_SHOW_STATS`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A `nix` command (`EVALBENCH_NIX`, else nix on PATH) with the lab's
/// configuration that dies with this process.
pub(super) fn command() -> Command {
    command_of(&super::nix_program())
}

/// The nix command for one process of the evaluation (`lock`, `discover`,
/// an evaluator's `0`, `0.1`): under Valgrind in a counted pass, which
/// writes its count under that name ([`super::counted`]).
pub(super) fn command_as(who: &str) -> Command {
    match super::counted::dir() {
        Some(dir) => {
            let mut c = command_of(std::ffi::OsStr::new(super::counted::VALGRIND));
            c.args(super::counted::args(dir, who)).arg(super::nix_program());
            c
        }
        None => command(),
    }
}

/// The same with another nix.
pub(super) fn command_of(program: &std::ffi::OsStr) -> Command {
    let mut c = Command::new(program);
    die_with_parent(&mut c);
    c.env("NIX_CONFIG", crate::state::NIX_CONFIG).stdin(Stdio::null());
    c
}

fn die_with_parent(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe. nix dies with the eval subprocess.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Where nix writes its statistics for one process, and whether it also
/// counts calls by primop, function and attribute position.
pub(super) struct Stats<'a> {
    pub path: &'a Path,
    pub count_calls: bool,
}

impl Stats<'_> {
    /// nix 2.8 writes the JSON when the process ends normally; a process
    /// that was killed writes none.
    pub fn apply(&self, c: &mut Command) {
        c.env("NIX_SHOW_STATS", "1").env("NIX_SHOW_STATS_PATH", self.path);
        if self.count_calls {
            c.env("NIX_COUNT_CALLS", "1");
        } else {
            c.env_remove("NIX_COUNT_CALLS");
        }
    }
}

/// Runs nix to the end: its stdout, or its own message.
pub(super) fn output(mut c: Command) -> Result<String, super::error::EvalError> {
    use super::error::EvalError;
    let out = c.output().map_err(EvalError::Start)?;
    said(out)
}

/// [`output`] of a command made by [`command_as`]: in a counted pass, its
/// count is kept under `who` when it ends.
pub(super) fn output_as(mut c: Command, who: &str) -> Result<String, super::error::EvalError> {
    use super::error::EvalError;
    let Some(dir) = super::counted::dir() else { return output(c) };
    let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(EvalError::Start)?;
    let pid = child.id() as i32;
    let out = child.wait_with_output().map_err(|source| EvalError::Wait { pid, source })?;
    let text = said(out)?;
    super::counted::keep(dir, who, pid)?;
    Ok(text)
}

fn said(out: std::process::Output) -> Result<String, super::error::EvalError> {
    use super::error::EvalError;
    if !out.status.success() {
        let said = message(String::from_utf8_lossy(&out.stderr).lines());
        return Err(EvalError::Nix(if said.is_empty() {
            format!("nix ended with {}", evalbench_host::describe_status(out.status))
        } else {
            said
        }));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// nix's own message, without warnings, traces and blank lines.
pub(super) fn message<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let msg: Vec<&str> =
        lines.filter(|l| !l.trim().is_empty() && !l.starts_with("warning:") && !l.starts_with("trace: ")).collect();
    msg.join("\n")
}

/// Where nix keeps its caches for this process: `$XDG_CACHE_HOME`, else `~/.cache`.
pub fn cache_home() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_default()
}

/// nix's own eval cache databases under a cache home: `nix/eval-cache-v*/*.sqlite`.
pub fn eval_cache_files(home: &Path) -> Vec<PathBuf> {
    let entries = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten();
    entries(&home.join("nix"))
        .filter(|d| d.file_name().to_string_lossy().starts_with("eval-cache-v"))
        .flat_map(|d| entries(&d.path()))
        .filter(|f| f.file_name().to_string_lossy().ends_with(".sqlite"))
        .map(|f| f.path())
        .collect()
}

/// A process's resident memory, in KiB.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rss {
    /// All of it (statm's second field): what the recycling cap reads.
    pub resident_kb: i64,
    /// The anonymous part (resident less file-backed and shared, the third
    /// field): what an attribute's allocations grow. Under memory pressure
    /// the kernel takes file pages back (shared libraries), which made the
    /// whole resident set shrink by 27 MiB inside one attribute in CI; with
    /// no swap, anonymous pages stay, so their growth is the attribute's.
    pub anon_kb: i64,
}

/// A process's resident memory, from `/proc/PID/statm` (in pages): one
/// small read, cheap enough for every attribute.
pub(super) fn rss_kb(pid: i32) -> Option<Rss> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let mut f = s.split_whitespace().skip(1).map(|x| x.parse::<i64>().ok());
    let (resident, shared) = (f.next()??, f.next()??);
    // An exited, unreaped nix (it ran ahead of its reader) has no memory to
    // read: its statm is all zeros, which is no reading.
    if resident == 0 {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as i64;
    Some(Rss { resident_kb: resident * page / 1024, anon_kb: resident.saturating_sub(shared) * page / 1024 })
}

/// A time as the store's files carry it: the kernel stamps a file's ctime
/// from its coarse clock (a tick behind the fine one), so a file nix writes
/// just after a fine reading could seem older than it.
#[derive(Debug, Clone, Copy)]
pub(super) struct StoreTime(libc::timespec);

impl StoreTime {
    pub fn now() -> StoreTime {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec to fill; the clock exists on Linux.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut t) };
        StoreTime(t)
    }

    /// Whether `path` was written (its inode changed) at or after this
    /// time: for a `.drv`, whether nix wrote it to the store since. nix
    /// writes a store path once and never touches it again.
    pub fn wrote(&self, path: &str) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| (m.ctime(), m.ctime_nsec()) >= (self.0.tv_sec, self.0.tv_nsec))
    }
}

/// Reaps `pid`: how it ended and its peak RSS in KiB.
pub(super) fn wait4(pid: i32) -> std::io::Result<(super::error::Ended, i64)> {
    evalbench_host::wait4(pid as u32).map(|(st, u)| (super::error::Ended(st), u.ru_maxrss))
}

/// Makes a pipe hold as much as the system allows an unprivileged process
/// (`/proc/sys/fs/pipe-max-size`, 1 MiB by default) instead of 64 KiB; a
/// pipe that cannot be widened keeps its size.
pub(super) fn widen_pipe(f: &std::fs::File) {
    use std::os::fd::AsRawFd;
    let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .unwrap_or(1 << 20);
    // SAFETY: fcntl on a pipe fd we own; F_SETPIPE_SZ takes an int.
    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETPIPE_SZ, max) };
}

/// Makes a pipe as small as the kernel allows (one page, 4 KiB, instead of
/// 64 KiB). Where an evaluator is recycled past a memory cap, the reader
/// decides at each attribute's marker; with a small pipe nix blocks a few
/// lines ahead of a late reader instead of running on through hundreds of
/// attributes (on a loaded 2-core machine nix 2.26 ran the hello flake's
/// last 75 attributes out before a late reader saw the first). A pipe that
/// cannot be narrowed keeps its size.
pub(super) fn narrow_pipe(f: &std::fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on a pipe fd we own; F_SETPIPE_SZ takes an int, rounded up to a page.
    unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
}

/// A started nix: its pid (ours to reap) and its output pipes.
pub(super) struct Spawned {
    pub pid: i32,
    pub stdout: std::fs::File,
    pub stderr: std::fs::File,
}

/// Starts `c` (stdout and stderr piped); with `untraced`, as a child that a
/// tracer of this process does not follow (clone's CLONE_UNTRACED).
///
/// Why: an instrumented pass straces the worker and its children, and nix's
/// `--trace-function-calls` writes one line per call, a million a second:
/// traced, each write stops nix for strace, and the hello flake's
/// instrumented pass took 175 s instead of 8.5 s. Untraced, the evaluators'
/// own syscalls are missing from `worker/strace` in those passes; the eval
/// subprocess and the worker are still there.
pub(super) fn spawn(c: &mut Command, untraced: bool) -> std::io::Result<Spawned> {
    if !untraced {
        let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let pid = child.id() as i32;
        let (Some(o), Some(e)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(std::io::Error::other("nix's pipes were not made"));
        };
        use std::os::fd::{FromRawFd, IntoRawFd};
        // SAFETY: fds we own, moved out of the ChildStdout/ChildStderr.
        return Ok(unsafe {
            Spawned {
                pid,
                stdout: std::fs::File::from_raw_fd(o.into_raw_fd()),
                stderr: std::fs::File::from_raw_fd(e.into_raw_fd()),
            }
        });
    }
    spawn_untraced(c)
}

/// What execve takes for `c`: the program's path found on PATH, its
/// arguments, and the environment with the command's changes made.
fn exec_args(c: &Command) -> std::io::Result<(std::ffi::CString, Vec<std::ffi::CString>, Vec<std::ffi::CString>)> {
    use std::ffi::{CString, OsString};
    use std::os::unix::ffi::OsStrExt;
    let cstr = |s: &std::ffi::OsStr| CString::new(s.as_bytes()).map_err(std::io::Error::other);
    let program = c.get_program();
    let path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{} not on PATH", program.to_string_lossy()))
        })?;
    let path = cstr(path.as_os_str())?;
    let argv: Vec<CString> = std::iter::once(program).chain(c.get_args()).map(cstr).collect::<Result<_, _>>()?;
    let mut env: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => env.insert(k.to_os_string(), v.to_os_string()),
            None => env.remove(k),
        };
    }
    let envp: Vec<CString> = env
        .iter()
        .map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).map_err(std::io::Error::other)
        })
        .collect::<Result<_, _>>()?;
    Ok((path, argv, envp))
}

fn spawn_untraced(c: &Command) -> std::io::Result<Spawned> {
    use std::os::fd::FromRawFd;
    // Everything is made before the clone: between it and exec the child runs
    // only async-signal-safe calls.
    let (path, argv, envp) = exec_args(c)?;
    let argv_p: Vec<*const libc::c_char> =
        argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp_p: Vec<*const libc::c_char> =
        envp.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let pipe = || -> std::io::Result<[i32; 2]> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two fds into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(fds)
    };
    let (out, err) = (pipe()?, pipe()?);
    // SAFETY: open with a static NUL-terminated path.
    let null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    // SAFETY: a fork-like clone (no new stack: the child runs on a copy of
    // ours). The child calls only async-signal-safe functions (prctl, dup2,
    // execve, _exit) on data prepared above, then replaces itself.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (libc::CLONE_UNTRACED | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid == 0 {
        // SAFETY: see above; the child never returns from this block.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::dup2(null, 0);
            libc::dup2(out[1], 1);
            libc::dup2(err[1], 2);
            libc::execve(path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's ends, which we own.
    unsafe {
        libc::close(out[1]);
        libc::close(err[1]);
        libc::close(null);
    }
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: our read ends.
        unsafe {
            libc::close(out[0]);
            libc::close(err[0]);
        }
        return Err(e);
    }
    // SAFETY: read ends we own.
    Ok(unsafe {
        Spawned {
            pid: pid as i32,
            stdout: std::fs::File::from_raw_fd(out[0]),
            stderr: std::fs::File::from_raw_fd(err[0]),
        }
    })
}
