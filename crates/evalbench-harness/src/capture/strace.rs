//! Syscalls of the worker and its children: `strace -ff -ttt -T`, one file
//! per thread and child (`worker.<pid>`), attached for the capture window.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::exec::{interrupt, HostExec};

pub struct Strace {
    child: Child,
}

impl Strace {
    pub fn start(host: &HostExec, pid: u32, dir: &Path) -> Result<Strace, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut c = host.command("strace");
        c.args(["-f", "-ff", "-ttt", "-T", "-s", "128", "-p", &pid.to_string(), "-o"])
            .arg(dir.join("worker"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = c.spawn().map_err(|e| format!("strace: {e} (apt-get install strace)"))?;
        std::thread::sleep(Duration::from_millis(200));
        Ok(Strace { child })
    }

    pub fn stop(mut self) -> Result<(), String> {
        interrupt(&mut self.child, Duration::from_secs(10));
        Ok(())
    }
}
