//! How a command runs on a host: directly, in a network namespace
//! (`ip netns exec NS`), or through any prefix such as `ssh host`. Capture
//! tools write to their stdout where they can, so the same code captures
//! locally and remotely; files written on a host are fetched with `tar`.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::HostError;

/// Where a command runs.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct HostExec {
    /// Words put before every command; empty runs it here.
    #[serde(default)]
    pub prefix: Vec<String>,
    /// Whether the host has its own file system (files it writes are fetched).
    /// Default: yes for an `ssh` prefix, no otherwise (local, `ip netns exec`).
    #[serde(default)]
    pub remote: Option<bool>,
}

impl HostExec {
    pub fn local() -> Self {
        HostExec { prefix: Vec::new(), remote: None }
    }
    pub fn netns(ns: &str) -> Self {
        HostExec { prefix: vec!["ip".into(), "netns".into(), "exec".into(), ns.into()], remote: None }
    }
    pub fn is_remote(&self) -> bool {
        self.remote.unwrap_or_else(|| self.prefix.first().is_some_and(|p| p == "ssh"))
    }

    /// Where a capture tool on this host writes `local`: the path itself on a
    /// shared file system, else a scratch path on the host (made here).
    pub fn scratch_for(&self, local: &Path, name: &str) -> Result<String, HostError> {
        if !self.is_remote() {
            return Ok(local.to_string_lossy().into_owned());
        }
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = format!(
            "/tmp/evalbench-capture-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        self.run({
            let mut c = self.command("mkdir");
            c.args(["-p", &dir]);
            c
        })?;
        Ok(format!("{dir}/{name}"))
    }

    /// Brings a file or directory written at `scratch` on the host to `local`, then removes it there.
    pub fn bring_back(&self, scratch: &str, local: &Path, is_dir: bool) -> Result<(), HostError> {
        if !self.is_remote() {
            return Ok(());
        }
        let r = if is_dir {
            self.fetch_dir(scratch, local)
        } else {
            let mut c = self.command("cat");
            c.arg(scratch).stdin(Stdio::null());
            match c.output() {
                Ok(o) if o.status.success() => std::fs::write(local, &o.stdout).map_err(HostError::io(local)),
                Ok(o) => Err(HostError::Fetch {
                    what: scratch.into(),
                    why: String::from_utf8_lossy(&o.stderr).trim().into(),
                }),
                Err(e) => Err(HostError::Fetch { what: scratch.into(), why: e.to_string() }),
            }
        };
        let parent = scratch.rsplit_once('/').map_or(scratch, |(d, _)| d).to_string();
        let _ = self.run({
            let mut c = self.command("rm");
            c.args(["-rf", &parent]);
            c
        });
        r
    }
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        self.command_as(program, None)
    }
    /// A command on this host, as `user` when given (`runuser`, which needs root).
    pub fn command_as(&self, program: impl AsRef<std::ffi::OsStr>, user: Option<&str>) -> Command {
        let mut words: Vec<std::ffi::OsString> = self.prefix.iter().map(Into::into).collect();
        if let Some(u) = user {
            words.extend(["runuser".into(), "-u".into(), u.into(), "--".into()]);
        }
        words.push(program.as_ref().to_os_string());
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]);
        c
    }
    /// A shell command line on the host.
    pub fn sh(&self, script: &str) -> Command {
        let mut c = self.command("sh");
        c.args(["-c", script]);
        c
    }
    pub fn run(&self, mut c: Command) -> Result<String, HostError> {
        crate::run(&mut c)
    }
    /// Copies the files of `remote_dir` on the host into `local_dir`.
    pub fn fetch_dir(&self, remote_dir: &str, local_dir: &Path) -> Result<(), HostError> {
        std::fs::create_dir_all(local_dir).map_err(HostError::io(local_dir))?;
        let mut tar = self.command("tar");
        tar.args(["-C", remote_dir, "-cf", "-", "."]).stdout(Stdio::piped()).stdin(Stdio::null());
        let mut child = tar.spawn().map_err(HostError::spawn(&tar))?;
        let stdout = child.stdout.take().expect("piped");
        let mut untar = Command::new("tar");
        untar.args(["--no-same-owner", "-xf", "-", "-C"]).arg(local_dir).stdin(stdout);
        let out = untar.output().map_err(HostError::spawn(&untar))?;
        let st = child.wait().map_err(HostError::spawn(&tar))?;
        if !st.success() || !out.status.success() {
            return Err(HostError::Fetch {
                what: remote_dir.into(),
                why: String::from_utf8_lossy(&out.stderr).trim().into(),
            });
        }
        Ok(())
    }
}

/// Sends SIGINT (what perf, strace and tcpdump expect) and waits.
pub fn interrupt(child: &mut Child, grace: std::time::Duration) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
