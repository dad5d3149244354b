//! Packets: tcpdump on the server host, on one interface with a port
//! filter, writing pcap to its stdout so it works through any host prefix.

use crate::error::HarnessError;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use evalbench_decode::pcap_window::{Cut, Tail};
use evalbench_host::{interrupt, HostExec};

/// How to put a packet on a capture's link once its window has ended: a
/// TCP connection to the captured port, opened (and closed unused) from
/// where it crosses the captured interface. tcpdump writes packets in
/// order, so once this one is in the file every packet of the window is:
/// the wait for that ([`Tcpdump::stop`]) ends at once instead of after
/// 400 ms of silence, which a quiet link (the protocol's, after a run) always
/// took, on every run. Outside the window, so cut from the file with the
/// rest; PostgreSQL logs nothing for a connection that sends nothing.
#[derive(Debug, Clone)]
pub struct Nudge {
    /// Where the connection is opened.
    pub from: HostExec,
    /// The address it connects to there, and the captured port.
    pub to: String,
    pub port: u16,
}

impl Nudge {
    /// Opens and closes the connection; a nudge that fails only leaves the
    /// wait as it was (bash's /dev/tcp: `sh` on Debian has none).
    fn send(&self) {
        let mut c = self.from.command("bash");
        c.args(["-c", &format!("exec 3<>/dev/tcp/{}/{}", self.to, self.port)])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let _ = c.status();
    }
}

pub struct Tcpdump {
    child: Child,
    what: String,
    /// tcpdump's stderr after "listening on": its closing statistics.
    rest: std::sync::mpsc::Receiver<Said>,
    out: std::path::PathBuf,
}

/// What tcpdump's stderr said: that it listens, and all of it when it ended.
enum Said {
    Listening,
    Ended(String),
}

impl Tcpdump {
    /// Starts and waits until tcpdump says it is listening.
    pub fn start(host: &HostExec, iface: &str, port: u16, out: &Path) -> Result<Tcpdump, HarnessError> {
        let file = std::fs::File::create(out).map_err(HarnessError::io(out))?;
        let mut c = host.command("tcpdump");
        // --immediate-mode: without it, packets wait in a kernel block that SIGINT throws away.
        c.args([
            "-i",
            iface,
            "--immediate-mode",
            "-B",
            "32768",
            "-U",
            "-s",
            "0",
            "-w",
            "-",
            &format!("tcp port {port}"),
        ])
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|source| HarnessError::Tool {
            tool: "tcpdump",
            install: "apt-get install tcpdump",
            source,
        })?;
        // The capture before the traffic it watches: a tcpdump that waits for
        // a core behind PostgreSQL and its clients falls behind its ring and
        // the kernel drops packets (on 2 cores, pgbench against a server on
        // tmpfs: 73 dropped and 1,193 never read). Nice -10 where allowed
        // (root), else as it was. The pid is tcpdump's, or that of `ip netns
        // exec`, which becomes it; over ssh it is ssh's, and the remote
        // tcpdump keeps its own priority.
        // SAFETY: setpriority reads no memory of ours.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS, child.id(), -10) };
        // tcpdump prints "listening on ..." once the capture is armed.
        let mut err = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let mut seen = String::new();
            // Said once: its closing statistics, read after it, must not be
            // taken for another "listening" (stop() would then read no
            // statistics and miss the packets the kernel dropped).
            let mut listening = false;
            loop {
                match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
                        if !listening && seen.contains("listening on") {
                            listening = true;
                            let _ = tx.send(Said::Listening);
                        }
                    }
                }
            }
            let _ = tx.send(Said::Ended(seen));
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Said::Listening) => {
                Ok(Tcpdump { child, what: format!("{iface} port {port}"), rest: rx, out: out.to_path_buf() })
            }
            Ok(Said::Ended(msg)) => {
                Err(HarnessError::Tcpdump { iface: iface.to_string(), port, said: Some(msg.trim().to_string()) })
            }
            Err(_) => {
                let _ = child.kill();
                Err(HarnessError::Tcpdump { iface: iface.to_string(), port, said: None })
            }
        }
    }

    /// Stops the capture once tcpdump has written every packet up to
    /// `until_us` (the end of the pass's window), then cuts the file to
    /// `[from_us, until_us]` (see `evalbench_decode::pcap_window`). A capture
    /// that lost packets (tcpdump's "N packets dropped by kernel", N > 0) is
    /// cut all the same and comes back with an error naming how many (the
    /// pass's problems say it): never taken for the whole traffic. On a
    /// loaded 2-core machine 6 of 64 clean runs lost 20 to 3,036 packets of
    /// pg.pcap's.
    pub fn stop(mut self, from_us: i64, until_us: i64, nudge: Option<&Nudge>) -> Result<Stopped, HarnessError> {
        if let Some(n) = nudge {
            n.send();
        }
        // tcpdump drops what the kernel holds for it and it has not read yet
        // when it is interrupted: on a busy machine it lags, and the last
        // packets of a capture were lost (9 transactions of 80). So wait
        // until its file holds a packet from after the window (it has caught
        // up), or has stopped growing for 400 ms (no traffic since), at most
        // 10 s. Waiting for silence alone never ended while the server's
        // scheduler polled the database: every clean pass idled 10 s.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut tail = Tail::default();
        let mut read = 0u64;
        let mut quiet = 0;
        while quiet < 8 && Instant::now() < deadline {
            let grown = follow(&self.out, &mut read, &mut tail);
            if tail.last_ts_us.is_some_and(|t| t > until_us) {
                break;
            }
            quiet = if grown { 0 } else { quiet + 1 };
            std::thread::sleep(Duration::from_millis(50));
        }
        let (captured, received, dropped) = self.end();
        // Only the kernel's drops are losses: on lo the filter counts each
        // packet twice (both directions), and "received" is twice "captured"
        // in a whole capture (3,633 of 7,266 in a clean pass here).
        let cut = cut_to_window(&self.out, from_us, until_us)?;
        let lost =
            (dropped > 0).then(|| HarnessError::Incomplete { what: self.what.clone(), captured, received, dropped });
        Ok(Stopped { cut, lost })
    }
}

/// A capture stopped: its file cut to the window, and what tcpdump lost, if
/// it lost any.
pub struct Stopped {
    pub cut: Cut,
    pub lost: Option<HarnessError>,
}

impl Tcpdump {
    /// Interrupts tcpdump and reads its closing statistics: packets
    /// captured, received by the filter, dropped by the kernel.
    fn end(&mut self) -> (u64, u64, u64) {
        interrupt(&mut self.child, Duration::from_secs(5));
        let text = match self.rest.recv_timeout(Duration::from_secs(5)) {
            Ok(Said::Ended(seen)) => seen,
            _ => String::new(),
        };
        closing_counts(&text)
    }
}

/// "N packets captured", "N packets received by filter", "N packets dropped by kernel".
fn closing_counts(text: &str) -> (u64, u64, u64) {
    let count = |what: &str| -> u64 {
        text.lines().filter(|l| l.contains(what)).filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok()).sum()
    };
    (count("captured"), count("received by filter"), count("dropped by"))
}

/// Reads what was appended to `path` since `read` bytes into `tail`; whether it grew.
fn follow(path: &Path, read: &mut u64, tail: &mut Tail) -> bool {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    if f.seek(SeekFrom::Start(*read)).is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let n = f.read_to_end(&mut buf).unwrap_or(0);
    tail.feed(&buf[..n]);
    *read += n as u64;
    n > 0
}

/// Rewrites the capture with only the packets of the window, whole or not at all.
fn cut_to_window(path: &Path, from_us: i64, until_us: i64) -> Result<Cut, HarnessError> {
    let io = |e: std::io::Error| HarnessError::Io { path: path.to_path_buf(), source: e };
    let input = std::fs::File::open(path).map_err(io)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = evalbench_bundle::readable_temp(dir).map_err(io)?;
    let name = path.display().to_string();
    let c = evalbench_decode::pcap_window::cut(&name, input, tmp.as_file_mut(), from_us, until_us)?;
    evalbench_bundle::persist(tmp, path).map_err(io)?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statistics tcpdump prints when it is interrupted are read: they
    /// were once taken for a second "listening on" and never looked at, so
    /// that no capture that lost packets was ever called incomplete.
    #[test]
    fn the_closing_statistics_of_a_real_capture_are_read() {
        // Root and tcpdump, as the test command has them: a missing one fails here, never skips.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let mut t = Tcpdump::start(&HostExec::local(), "lo", port, &dir.path().join("lo.pcap")).unwrap();
        for _ in 0..5 {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            std::io::Write::write_all(&mut c, b"hello").unwrap();
            listener.accept().unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        let (captured, received, dropped) = t.end();
        assert!(captured >= 10, "{captured} packets captured");
        assert!(received >= captured && dropped == 0, "{captured} {received} {dropped}");
    }
}
