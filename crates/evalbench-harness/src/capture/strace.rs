//! Syscalls of the worker and its children: `strace -ff -ttt -T`, one file
//! per thread and child (`worker.<pid>`), attached for the capture window
//! to the worker and to the eval subprocesses already running beside it
//! (Gradient's worker keeps them between jobs, so `-f` alone misses them;
//! its benchmark attaches to each as well).

use crate::error::HarnessError;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use evalbench_host::{interrupt, HostExec};

pub struct Strace {
    child: Child,
    host: HostExec,
    scratch: String,
    local: std::path::PathBuf,
}

impl Strace {
    pub fn start(host: &HostExec, pids: &[u32], dir: &Path) -> Result<Strace, HarnessError> {
        std::fs::create_dir_all(dir).map_err(HarnessError::io(dir))?;
        // On a host of its own, strace writes into a scratch directory fetched afterwards.
        let scratch_dir = host.scratch_for(dir, "strace")?;
        if host.is_remote() {
            host.run({
                let mut m = host.command("mkdir");
                m.args(["-p", &scratch_dir]);
                m
            })?;
        }
        let mut c = host.command("strace");
        c.args(["-f", "-ff", "-ttt", "-T", "-s", "128"]);
        for pid in pids {
            c.args(["-p", &pid.to_string()]);
        }
        c.arg("-o")
            .arg(format!("{scratch_dir}/worker"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = c.spawn().map_err(|source| HarnessError::Tool {
            tool: "strace",
            install: "apt-get install strace",
            source,
        })?;
        std::thread::sleep(Duration::from_millis(200));
        Ok(Strace { child, host: host.clone(), scratch: scratch_dir, local: dir.to_path_buf() })
    }

    pub fn stop(mut self) -> Result<(), HarnessError> {
        interrupt(&mut self.child, Duration::from_secs(10));
        Ok(self.host.bring_back(&self.scratch, &self.local, true)?)
    }
}
