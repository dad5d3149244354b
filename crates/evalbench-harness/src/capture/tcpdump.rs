//! Packets: tcpdump on the server host, on one interface with a port
//! filter, writing pcap to its stdout so it works through any host prefix.

use crate::error::HarnessError;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use evalbench_host::{interrupt, HostExec};

pub struct Tcpdump {
    child: Child,
    what: String,
}

impl Tcpdump {
    /// Starts and waits until tcpdump says it is listening.
    pub fn start(host: &HostExec, iface: &str, port: u16, out: &Path) -> Result<Tcpdump, HarnessError> {
        let file = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let mut c = host.command("tcpdump");
        // --immediate-mode: without it, packets wait in a kernel block that SIGINT throws away.
        c.args(["-i", iface, "--immediate-mode", "-B", "32768", "-U", "-s", "0", "-w", "-", &format!("tcp port {port}")])
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| format!("tcpdump: {e} (apt-get install tcpdump)"))?;
        // tcpdump prints "listening on ..." once the capture is armed.
        let mut err = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let mut seen = String::new();
            loop {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
                        if seen.contains("listening on") {
                            let _ = tx.send(Ok(()));
                        }
                    }
                }
            }
            let _ = tx.send(Err(seen));
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(())) => Ok(Tcpdump { child, what: format!("{iface} port {port}") }),
            Ok(Err(msg)) => Err(HarnessError::Message(format!("tcpdump on {iface} port {port}: {}", msg.trim()))),
            Err(_) => {
                let _ = child.kill();
                Err(HarnessError::Message(format!("tcpdump on {iface} port {port} did not start")))
            }
        }
    }

    pub fn stop(mut self) -> Result<(), HarnessError> {
        interrupt(&mut self.child, Duration::from_secs(5));
        let _ = &self.what;
        Ok(())
    }
}
