//! Starting `nix` for the eval subprocess: the lab's configuration, death
//! with the parent, nix's own message on failure, and the statistics nix
//! writes when asked (`NIX_SHOW_STATS`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A `nix` command with the lab's configuration that dies with this process.
pub(super) fn command() -> Command {
    let mut c = Command::new("nix");
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
pub(super) fn output(mut c: Command) -> Result<String, String> {
    let out = c.output().map_err(|e| format!("nix: {e} (install the Debian package nix-bin)"))?;
    if !out.status.success() {
        return Err(message(String::from_utf8_lossy(&out.stderr).lines()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// nix's own message, without warnings, traces and blank lines.
pub(super) fn message<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let msg: Vec<&str> = lines.filter(|l| !l.trim().is_empty() && !l.starts_with("warning:") && !l.starts_with("trace: ")).collect();
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

/// The resident set of a process in KiB, from `/proc/PID/statm` (its second
/// field, in pages): one small read, cheap enough for every attribute.
pub(super) fn rss_kb(pid: i32) -> Option<i64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let pages: i64 = s.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as i64;
    Some(pages * page / 1024)
}

/// Reaps `pid`: its exit code (None if a signal ended it) and its peak RSS in KiB.
pub(super) fn wait4(pid: i32) -> (Option<i32>, i64) {
    match evalbench_host::wait4(pid as u32) {
        Ok((st, u)) => (libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st)), u.ru_maxrss),
        Err(_) => (None, 0),
    }
}

pub(super) fn describe(status: Option<i32>) -> String {
    match status {
        Some(code) => format!("exit status {code}"),
        None => "a signal".into(),
    }
}
