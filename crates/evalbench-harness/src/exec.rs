//! How a command runs on a host: directly, in a network namespace
//! (`ip netns exec NS`), or through any prefix such as `ssh host`. Capture
//! tools write to their stdout where they can, so the same code captures
//! locally and remotely; files written on a host are fetched with `tar`.

use std::path::Path;
use std::process::{Child, Command, Stdio};

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct HostExec {
    /// Words put before every command; empty runs it here.
    #[serde(default)]
    pub prefix: Vec<String>,
}

impl HostExec {
    pub fn local() -> Self {
        HostExec { prefix: Vec::new() }
    }
    pub fn netns(ns: &str) -> Self {
        HostExec { prefix: vec!["ip".into(), "netns".into(), "exec".into(), ns.into()] }
    }
    pub fn command(&self, program: &str) -> Command {
        let mut words: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        words.push(program);
        let mut c = Command::new(words[0]);
        c.args(&words[1..]);
        c
    }
    /// A shell command line on the host.
    pub fn sh(&self, script: &str) -> Command {
        let mut c = self.command("sh");
        c.args(["-c", script]);
        c
    }
    pub fn run(&self, mut c: Command) -> Result<String, String> {
        let out = c.stdin(Stdio::null()).output().map_err(|e| format!("{c:?}: {e}"))?;
        if !out.status.success() {
            return Err(format!("{c:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
    /// Copies the files of `remote_dir` on the host into `local_dir`.
    pub fn fetch_dir(&self, remote_dir: &str, local_dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(local_dir).map_err(|e| format!("{}: {e}", local_dir.display()))?;
        let mut tar = self.command("tar");
        tar.args(["-C", remote_dir, "-cf", "-", "."]).stdout(Stdio::piped()).stdin(Stdio::null());
        let mut child = tar.spawn().map_err(|e| format!("{tar:?}: {e}"))?;
        let stdout = child.stdout.take().expect("piped");
        let mut untar = Command::new("tar");
        untar.args(["--no-same-owner", "-xf", "-", "-C"]).arg(local_dir).stdin(stdout);
        let out = untar.output().map_err(|e| format!("tar: {e}"))?;
        let st = child.wait().map_err(|e| e.to_string())?;
        if !st.success() || !out.status.success() {
            return Err(format!("fetching {remote_dir}: {}", String::from_utf8_lossy(&out.stderr).trim()));
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
