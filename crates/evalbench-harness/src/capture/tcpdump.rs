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
    /// tcpdump's stderr after "listening on": its closing statistics.
    rest: std::sync::mpsc::Receiver<Result<(), String>>,
    out: std::path::PathBuf,
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
            Ok(Ok(())) => Ok(Tcpdump { child, what: format!("{iface} port {port}"), rest: rx, out: out.to_path_buf() }),
            Ok(Err(msg)) => Err(HarnessError::Message(format!("tcpdump on {iface} port {port}: {}", msg.trim()))),
            Err(_) => {
                let _ = child.kill();
                Err(HarnessError::Message(format!("tcpdump on {iface} port {port} did not start")))
            }
        }
    }

    /// Stops the capture. A capture that lost packets (tcpdump's "N packets
    /// dropped by kernel", N > 0) is an error naming how many: its file is
    /// kept, and said to be incomplete, never taken for the whole traffic.
    pub fn stop(mut self) -> Result<(), HarnessError> {
        // tcpdump drops what the kernel holds for it and it has not read yet
        // when it is interrupted: on a busy machine it lags, and the last
        // packets of a capture were lost (9 transactions of 80). Wait until
        // its file has stopped growing for a while (at most 10 s).
        let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut last, mut quiet) = (size(&self.out), 0);
        while quiet < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            let now = size(&self.out);
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
        }
        interrupt(&mut self.child, Duration::from_secs(5));
        let text = match self.rest.recv_timeout(Duration::from_secs(5)) {
            Ok(Err(seen)) => seen,
            _ => String::new(),
        };
        // "N packets captured", "N packets received by filter", "N packets dropped by kernel".
        let count =
            |what: &str| -> u64 { text.lines().filter(|l| l.contains(what)).filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok()).sum() };
        let (captured, received, dropped) = (count("captured"), count("received by filter"), count("dropped by"));
        if dropped > 0 || received > captured {
            return Err(HarnessError::Message(format!(
                "tcpdump on {}: {captured} packets captured of {received} received, {dropped} dropped by the kernel; the capture is incomplete",
                self.what
            )));
        }
        Ok(())
    }
}
