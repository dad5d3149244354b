//! perf.data to folded stacks: `perf script` streamed through inferno's
//! collapser. The first frame of every stack is the process name (comm), so
//! the eval subprocess and nix are told apart from the worker.
//!
//! A file that is already `perf script` text (as another machine's perf
//! wrote it) is folded directly, as inferno's collapse does: the two are told
//! apart by perf.data's magic, not by the file's name.

use crate::error::DecodeError;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PerfSummary {
    pub samples: u64,
    pub stacks: u64,
    /// Samples per process name.
    pub by_process: BTreeMap<String, u64>,
}

/// perf.data begins with this (perf's header, version 2).
const PERF_DATA_MAGIC: &[u8; 8] = b"PERFILE2";

fn is_perf_data(path: &Path) -> Result<bool, DecodeError> {
    use std::io::Read;
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    let n = f.read(&mut head).map_err(DecodeError::io(path))?;
    Ok(n == 8 && &head == PERF_DATA_MAGIC)
}

/// Folded stacks as inferno writes them: `comm;frame;frame N` lines, from
/// perf.data (through `perf script`) or from `perf script` text.
pub fn fold(data: &Path) -> Result<Vec<u8>, DecodeError> {
    if !is_perf_data(data)? {
        let file = std::fs::File::open(data).map_err(DecodeError::io(data))?;
        let mut folded = Vec::new();
        let mut folder = inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
        inferno::collapse::Collapse::collapse(&mut folder, std::io::BufReader::new(file), &mut folded).map_err(|e| {
            let name = data.display().to_string();
            DecodeError::format(name, "", format!("neither perf.data (no PERFILE2 header) nor `perf script` text inferno can fold: {e}"))
        })?;
        return Ok(folded);
    }
    let mut child = Command::new("perf")
        .args(["script", "-F", "comm,pid,tid,time,event,ip,sym,dso", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| DecodeError::Tool { tool: "perf script".into(), message: format!("{e} (apt-get install linux-perf)") })?;
    let stdout = child.stdout.take().expect("piped");
    let mut folded = Vec::new();
    let mut folder = inferno::collapse::perf::Folder::from(inferno::collapse::perf::Options::default());
    let r = inferno::collapse::Collapse::collapse(&mut folder, std::io::BufReader::new(stdout), &mut folded);
    let st = child.wait().map_err(|e| DecodeError::Tool { tool: "perf script".into(), message: e.to_string() })?;
    r.map_err(|e| DecodeError::Tool { tool: "perf script".into(), message: format!("folding {}: {e}", data.display()) })?;
    if !st.success() {
        return Err(DecodeError::Tool {
            tool: format!("perf script -i {}", data.display()),
            message: format!("failed ({st}); is it a perf.data file?"),
        });
    }
    Ok(folded)
}

pub fn summarize(folded: &[u8]) -> PerfSummary {
    let mut s = PerfSummary::default();
    for l in String::from_utf8_lossy(folded).lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else { continue };
        let n: u64 = n.trim().parse().unwrap_or(0);
        s.samples += n;
        s.stacks += 1;
        let comm = stack.split(';').next().unwrap_or("?").to_string();
        *s.by_process.entry(comm).or_default() += n;
    }
    s
}
