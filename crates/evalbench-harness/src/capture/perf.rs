//! CPU profiles: `perf record -e cpu-clock -g` attached to a process (its
//! threads and the children it starts, such as the eval subprocess), then
//! `perf script` folded by inferno into flame.svg.

use crate::error::HarnessError;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use evalbench_host::{interrupt, HostExec};

/// How perf walks a sample's stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwind {
    /// `-g`: frame pointers; cheap, and enough for our own server.
    FramePointers,
    /// `--call-graph dwarf,4096`: 4 KiB of stack per sample, unwound from
    /// `.eh_frame`, which Debian's stripped nix keeps. Its frame pointers are
    /// gone, so `-g` left 78% of nix's samples without a nix frame in the
    /// hello flake's instrumented evaluation; this leaves 1%, for a
    /// perf.data 42 times larger (16 MB against 0.38 MB there).
    Dwarf,
}

pub struct Perf {
    child: Child,
    host: HostExec,
    scratch: String,
    local: std::path::PathBuf,
}

impl Perf {
    pub fn start(host: &HostExec, pid: u32, out: &Path, unwind: Unwind) -> Result<Perf, HarnessError> {
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir).map_err(HarnessError::io(dir))?;
        }
        let scratch = host.scratch_for(out, evalbench_bundle::layout::PERF_DATA)?;
        let mut c = host.command("perf");
        c.args(["record", "-e", "cpu-clock", "-F", "999"])
            .args(match unwind {
                Unwind::FramePointers => &["-g"][..],
                Unwind::Dwarf => &["--call-graph", "dwarf,4096"][..],
            })
            .args(["-p", &pid.to_string(), "-o"])
            .arg(&scratch)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = c.spawn().map_err(|source| HarnessError::Tool {
            tool: "perf",
            install: "apt-get install linux-perf",
            source,
        })?;
        // perf needs a moment to attach to every thread.
        std::thread::sleep(Duration::from_millis(200));
        Ok(Perf { child, host: host.clone(), scratch, local: out.to_path_buf() })
    }

    pub fn stop(mut self) -> Result<(), HarnessError> {
        interrupt(&mut self.child, Duration::from_secs(30));
        Ok(self.host.bring_back(&self.scratch, &self.local, false)?)
    }
}

/// Folded stacks (nix's profile) to a flame graph, drawn by inferno, written whole.
pub fn flamegraph_of_folded(folded: &Path, svg: &Path, title: &str, unit: &str) -> Result<(), HarnessError> {
    let text =
        std::fs::read_to_string(folded).map_err(|source| HarnessError::Io { path: folded.to_path_buf(), source })?;
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = unit.to_string();
    let mut drawn = Vec::new();
    let r = if text.trim().is_empty() {
        opts.title = format!("{title} (no calls)");
        inferno::flamegraph::from_lines(&mut opts, ["idle 1"], &mut drawn)
    } else {
        inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut drawn)
    };
    r.map_err(HarnessError::io(svg))?;
    Ok(evalbench_bundle::write_atomic(svg, &drawn)?)
}

/// perf.data to flame.svg: folded by the decoder, drawn by inferno. Both
/// files are written whole or not at all (`evalbench_bundle::write_atomic`).
pub fn flamegraph(data: &Path, svg: &Path, title: &str) -> Result<(), HarnessError> {
    let folded = evalbench_decode::perf::fold(data)?.stacks;
    evalbench_bundle::write_atomic(&evalbench_bundle::layout::folded_beside(svg), &folded)?;
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    let mut drawn = Vec::new();
    let r = if folded.is_empty() {
        // No samples (an idle process): still a valid, empty graph.
        opts.title = format!("{title} (no samples)");
        inferno::flamegraph::from_lines(&mut opts, ["idle 1"], &mut drawn)
    } else {
        let text = String::from_utf8_lossy(&folded);
        inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut drawn)
    };
    r.map_err(HarnessError::io(svg))?;
    Ok(evalbench_bundle::write_atomic(svg, &drawn)?)
}
