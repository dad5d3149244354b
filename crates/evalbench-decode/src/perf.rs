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
    /// How many samples: each counts once, whatever its period.
    pub samples: u64,
    pub stacks: u64,
    /// Samples per process name.
    pub by_process: BTreeMap<String, u64>,
    /// The samples' periods added up, when perf wrote them, in `period_unit`:
    /// `ns` for cpu-clock and task-clock, else events of that name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_unit: Option<String>,
    /// Samples in nix writing its own function trace (`TRACE_COST`).
    pub trace_cost_samples: u64,
}

/// The frame nix's `FunctionCallTrace` (constructor and destructor: writing
/// `function-trace entered|exited` lines, escape filtering included) is
/// renamed to: the profiler's own cost, said as such in the flame graph.
pub const TRACE_COST: &str = "[nix writing --trace-function-calls]";

/// Renames nix's trace-writing frames in folded stacks to [`TRACE_COST`].
fn label_trace_cost(stacks: Vec<u8>) -> Vec<u8> {
    const FRAMES: [&str; 2] =
        ["nix::FunctionCallTrace::FunctionCallTrace", "nix::FunctionCallTrace::~FunctionCallTrace"];
    if memchr::memmem::find(&stacks, b"nix::FunctionCallTrace::").is_none() {
        return stacks;
    }
    let mut text = String::from_utf8_lossy(&stacks).into_owned();
    for f in FRAMES {
        text = text
            .replace(&format!(";{f};"), &format!(";{TRACE_COST};"))
            .replace(&format!(";{f} "), &format!(";{TRACE_COST} "));
    }
    text.into_bytes()
}

/// Folded stacks, each sample counted once, and the periods perf gave them.
#[derive(Debug, Clone, Default)]
pub struct Folded {
    /// `comm;frame;frame N` lines, N in samples.
    pub stacks: Vec<u8>,
    /// Periods added up, and the event they are of.
    pub period: Option<(u64, String)>,
}

/// `perf script` text with each sample's period taken out of its header
/// line (and added up), so that inferno, which weights a sample by its
/// period when the text has one, counts every sample once: a profile read
/// from perf.data and the same profile as text give one count.
struct Periods<R> {
    inner: R,
    line: Vec<u8>,
    pos: usize,
    total: u64,
    event: Option<String>,
}

impl<R: std::io::BufRead> Periods<R> {
    fn new(inner: R) -> Self {
        Periods { inner, line: Vec::new(), pos: 0, total: 0, event: None }
    }

    /// `comm pid[/tid] [cpu] time: PERIOD event: ...`: PERIOD out, counted.
    fn rewrite(&mut self) {
        let l = &self.line;
        if l.is_empty() || l[0].is_ascii_whitespace() || l[0] == b'#' {
            return;
        }
        let Some(colon) = l.windows(2).position(|w| w == b": ") else { return };
        let start = l[colon + 2..].iter().position(|b| *b != b' ').map_or(l.len(), |k| colon + 2 + k);
        let digits = l[start..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || l.get(start + digits) != Some(&b' ') {
            return;
        }
        let ev_start = start + digits + 1;
        let ev_len = l[ev_start..].iter().take_while(|b| !b.is_ascii_whitespace()).count();
        let ev = &l[ev_start..ev_start + ev_len];
        if !ev.ends_with(b":") {
            return;
        }
        let Ok(period) = std::str::from_utf8(&l[start..start + digits]).unwrap_or("").parse::<u64>() else { return };
        self.total = self.total.saturating_add(period);
        if self.event.is_none() {
            self.event = Some(event_name(ev));
        }
        self.line.drain(start..start + digits + 1);
    }

    fn period(&self) -> Option<(u64, String)> {
        self.event.clone().map(|e| (self.total, e))
    }

    /// The event of the first sample, read ahead (at most [`PEEK`] bytes,
    /// served again to the reader): inferno's folder, told it, never has to
    /// find it, and asserts where it does not (a blank line first).
    /// `Ok(None)` with text before it: not `perf script` output.
    fn first_event(&mut self) -> std::io::Result<Result<Option<String>, ()>> {
        let mut ahead = Vec::new();
        let (mut text, mut event) = (false, None);
        while event.is_none() && ahead.len() < PEEK {
            self.line.clear();
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                break;
            }
            self.rewrite();
            // With its period taken out, or written without one (`-F` without `period`).
            event = header_event(&self.line);
            text |= self.line.first().is_some_and(|b| *b != b'#') && !self.line.iter().all(u8::is_ascii_whitespace);
            ahead.extend_from_slice(&self.line);
        }
        (self.line, self.pos) = (ahead, 0);
        Ok(match event {
            Some(e) => Ok(Some(e)),
            None if text => Err(()),
            None => Ok(None),
        })
    }
}

impl<R: std::io::BufRead> std::io::Read for Periods<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for Periods<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos >= self.line.len() {
            self.line.clear();
            self.pos = 0;
            if self.inner.read_until(b'\n', &mut self.line)? > 0 {
                self.rewrite();
            }
        }
        Ok(&self.line[self.pos..])
    }
    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

/// The unit of a period: clock events count nanoseconds.
fn period_unit(event: &str) -> String {
    if matches!(event, "cpu-clock" | "task-clock") {
        "ns".into()
    } else {
        event.to_string()
    }
}

/// The event a sample's header line names, when it has no period (as
/// [`Periods::rewrite`] leaves it): `comm pid[/tid] [cpu] time: event: ...`,
/// read as inferno reads it (the event's name before any `:modifier`).
fn header_event(l: &[u8]) -> Option<String> {
    if l.first().is_none_or(|b| b.is_ascii_whitespace() || *b == b'#') {
        return None;
    }
    let colon = l.windows(2).position(|w| w == b": ")?;
    let start = colon + 2 + l[colon + 2..].iter().position(|b| *b != b' ')?;
    let len = l[start..].iter().take_while(|b| !b.is_ascii_whitespace()).count();
    let ev = &l[start..start + len];
    let name = event_name(ev.strip_suffix(b":")?);
    (!name.is_empty()).then_some(name)
}

/// An event token's name, as inferno takes it: before any `:modifier`.
fn event_name(ev: &[u8]) -> String {
    String::from_utf8_lossy(ev).split(':').next().unwrap_or("").to_string()
}

/// How far [`Periods::first_event`] reads ahead for a sample's header.
const PEEK: usize = 1 << 20;

/// perf.data begins with this (perf's header, version 2).
const PERF_DATA_MAGIC: &[u8; 8] = b"PERFILE2";

fn is_perf_data(path: &Path) -> Result<bool, DecodeError> {
    use std::io::Read;
    let mut head = [0u8; 8];
    let mut f = std::fs::File::open(path).map_err(DecodeError::io(path))?;
    let n = f.read(&mut head).map_err(DecodeError::io(path))?;
    Ok(n == 8 && &head == PERF_DATA_MAGIC)
}

/// inferno's perf folder over `input`, told the first sample's event (the
/// one it would pick itself) so that it never asserts on finding none.
/// Anything else inferno asserts on is caught and returned as what it
/// said: a file another machine wrote is never a reason to crash.
fn collapse<R: std::io::BufRead>(input: &mut Periods<R>) -> Result<Vec<u8>, FoldFailed> {
    let event = match input.first_event().map_err(FoldFailed::Read)? {
        Ok(Some(event)) => event,
        Ok(None) => return Ok(Vec::new()),
        Err(()) => return Err(FoldFailed::NoHeader),
    };
    let mut folded = Vec::new();
    let mut options = inferno::collapse::perf::Options::default();
    options.event_filter = Some(event);
    let mut folder = inferno::collapse::perf::Folder::from(options);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        inferno::collapse::Collapse::collapse(&mut folder, input, &mut folded)
    })) {
        Ok(r) => r.map(|()| folded).map_err(FoldFailed::Read),
        Err(p) => {
            let said = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned());
            Err(FoldFailed::GaveUp(said.unwrap_or_else(|| "no message".into())))
        }
    }
}

/// Why `perf script` text could not be folded (worded into a
/// [`DecodeError`] by the caller, who knows the file).
#[derive(Debug, thiserror::Error)]
enum FoldFailed {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("no sample header line (`comm pid time: period event:`) in its first {} KiB", PEEK >> 10)]
    NoHeader,
    #[error("inferno's folder gave up ({0})")]
    GaveUp(String),
}

/// Folded stacks as inferno writes them: `comm;frame;frame N` lines, N in
/// samples, from perf.data (through `perf script`) or from `perf script` text.
pub fn fold(data: &Path) -> Result<Folded, DecodeError> {
    if !is_perf_data(data)? {
        // Only text can be `perf script` output: inferno's folder is not
        // for a pcap or a JSON file (it panicked on a 33 MB capture).
        let head = crate::sniff::head(data, 4096)?;
        if !matches!(crate::sniff::looks_like(&head), "text" | "an empty file") {
            return Err(crate::sniff::wrong(data, "perf.data or the text of `perf script`", &head));
        }
        let file = std::fs::File::open(data).map_err(DecodeError::io(data))?;
        let mut input = Periods::new(std::io::BufReader::new(file));
        let folded = collapse(&mut input).map_err(|e| {
            let name = data.display().to_string();
            DecodeError::format(
                name,
                "",
                format!("neither perf.data (no PERFILE2 header) nor `perf script` text inferno can fold: {e}"),
            )
        })?;
        if folded.is_empty() && !head.iter().all(u8::is_ascii_whitespace) {
            return Err(crate::sniff::wrong(
                data,
                "`perf script` text (a command line, then one stack frame a line)",
                &head,
            ));
        }
        return Ok(Folded { stacks: label_trace_cost(folded), period: input.period() });
    }
    let mut child = Command::new("perf")
        // No inlined frames: perf finds them by running addr2line on every
        // address, which on the lab worker's own perf.data (29 MB, debug
        // info) took 144 s against 0.6 s without. A sample inside inlined
        // code counts in the function it was inlined into.
        .args(["script", "--no-inline", "-F", "comm,pid,tid,time,period,event,ip,sym,dso", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| DecodeError::Tool {
            tool: "perf script".into(),
            message: format!("{e} (apt-get install linux-perf)"),
        })?;
    let stdout = child.stdout.take().expect("piped");
    let mut input = Periods::new(std::io::BufReader::new(stdout));
    let r = collapse(&mut input);
    if r.is_err() {
        // perf script may still be writing; it is not read any further.
        let _ = child.kill();
    }
    let st = child.wait().map_err(|e| DecodeError::Tool { tool: "perf script".into(), message: e.to_string() })?;
    let folded = r.map_err(|e| DecodeError::Tool {
        tool: "perf script".into(),
        message: format!("folding {}: {e}", data.display()),
    })?;
    if !st.success() {
        return Err(DecodeError::Tool {
            tool: format!("perf script -i {}", data.display()),
            message: format!("failed ({st}); is it a perf.data file?"),
        });
    }
    Ok(Folded { stacks: label_trace_cost(folded), period: input.period() })
}

pub fn summarize(folded: &Folded) -> PerfSummary {
    let mut s = PerfSummary {
        period_total: folded.period.as_ref().map(|p| p.0),
        period_unit: folded.period.as_ref().map(|p| period_unit(&p.1)),
        ..PerfSummary::default()
    };
    for l in String::from_utf8_lossy(&folded.stacks).lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else { continue };
        let n: u64 = n.trim().parse().unwrap_or(0);
        s.samples += n;
        s.stacks += 1;
        let comm = stack.split(';').next().unwrap_or("?").to_string();
        *s.by_process.entry(comm).or_default() += n;
        if stack.contains(TRACE_COST) {
            s.trace_cost_samples += n;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_s_own_cost_is_said_as_such() {
        let folded = Folded {
            stacks: b"nix;main;nix::EvalState::callFunction;nix::FunctionCallTrace::FunctionCallTrace;\
                nix::filterANSIEscapes 5\n\
nix;main;nix::FunctionCallTrace::~FunctionCallTrace 2\nnix;main;nix::EvalState::callFunction 7\n"
                .to_vec(),
            period: None,
        };
        let labelled = Folded { stacks: label_trace_cost(folded.stacks), period: None };
        let text = String::from_utf8(labelled.stacks.clone()).unwrap();
        assert!(!text.contains("FunctionCallTrace"), "{text}");
        assert_eq!(text.matches(TRACE_COST).count(), 2, "{text}");
        assert!(text.contains(&format!(";{TRACE_COST};nix::filterANSIEscapes 5")), "{text}");
        let s = summarize(&labelled);
        assert_eq!((s.samples, s.trace_cost_samples), (14, 7));
    }
    use std::io::Read;

    #[test]
    fn text_inferno_asserted_on_folds_and_text_without_samples_is_refused() {
        // The perf_script fuzz target's find: a blank line first made
        // inferno assert that it had found the event. Told it, it folds.
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("blank-first.txt");
        std::fs::write(&f, "\nsh 1/1 1.0: 1 cpu-clock: \n\t 1 main (/bin/sh)\n\n").unwrap();
        assert_eq!(summarize(&fold(&f).unwrap()).samples, 1);
        std::fs::write(&f, "sh 1/1 1.0: 1 cpu-clock: \n\t 1 main (/bin/sh)\n\n").unwrap();
        assert_eq!(summarize(&fold(&f).unwrap()).samples, 1);
        // Written without periods (`-F` without `period`), blank line first.
        std::fs::write(&f, "\nsh 1/1 1.0: cpu-clock:ppp: \n\t 1 main (/bin/sh)\n\n").unwrap();
        assert_eq!(summarize(&fold(&f).unwrap()).samples, 1);
        assert_eq!(header_event(b"sh 1/1 [001] 1.0:    cpu-clock:ppp: "), Some("cpu-clock".into()));
        assert_eq!(header_event(b"\t 1 main (/bin/sh)"), None);
        // Text with no sample header is no profile, named as such.
        let g = d.path().join("prose.txt");
        std::fs::write(&g, "\nno samples here\n\n").unwrap();
        let e = fold(&g).unwrap_err().to_string();
        assert!(e.contains("prose.txt") && e.contains("no sample header line"), "{e}");
    }

    #[test]
    fn periods_are_taken_out_of_headers_and_added_up() {
        let text = "python3  4242 [001] 12.345678:    1001001 cpu-clock:ppp: \n\t    7f00 main \
            (/usr/bin/python3)\n\nsh 7/7 1.000000: 5 cycles: \n\t    1 f (x)\n";
        let mut p = Periods::new(std::io::BufReader::new(text.as_bytes()));
        let mut out = String::new();
        p.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("python3  4242 [001] 12.345678:    cpu-clock:ppp: \n"), "{out}");
        assert!(out.contains("sh 7/7 1.000000: cycles: \n") && out.contains("\t    7f00 main"), "{out}");
        assert_eq!(p.period(), Some((1_001_006, "cpu-clock".to_string())));
        assert_eq!(period_unit("cpu-clock"), "ns");
    }
}
