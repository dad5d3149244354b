//! strace output (`-f`/`-ff`, `-tt` or `-ttt`, `-T`): per syscall count,
//! total and max time, per thread; the slowest calls with their arguments.
//! Unfinished/resumed pairs are joined; signals and exits are counted.

use crate::error::DecodeError;
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub tid: u64,
    pub ts_s: f64,
    pub name: String,
    pub args: String,
    pub ret: String,
    pub dur_us: i64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SyscallStat {
    pub name: String,
    pub count: u64,
    pub total_us: i64,
    pub max_us: i64,
    pub errors: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StraceSummary {
    pub files: u64,
    pub threads: u64,
    pub calls: u64,
    pub signals: u64,
    pub exits: u64,
    pub unparsed_lines: u64,
    /// Calls left unfinished when the trace ended (detached, killed).
    pub unfinished: u64,
    /// Calls that never returned (`exit_group(0) = ?`), left out as `strace -c` does.
    pub never_returned: u64,
    pub by_syscall: Vec<SyscallStat>,
    /// Per thread: (tid, calls, total µs in syscalls).
    pub by_thread: Vec<(u64, u64, i64)>,
    pub slowest: Vec<Call>,
}

const SLOWEST: usize = 20;
const MAX_LINE: usize = 64 * 1024;

/// One line, without its pid prefix: (ts, rest).
fn split_ts(l: &str) -> Option<(f64, &str)> {
    let (t, rest) = l.split_once(' ')?;
    let ts = if t.contains(':') {
        // -tt: HH:MM:SS.micro
        let mut parts = t.split(':');
        let h: f64 = parts.next()?.parse().ok()?;
        let m: f64 = parts.next()?.parse().ok()?;
        let s: f64 = parts.next()?.parse().ok()?;
        h * 3600.0 + m * 60.0 + s
    } else {
        t.parse().ok()?
    };
    // To the microsecond strace wrote, without the sum's rounding error.
    let ts = (ts * 1e6).round() / 1e6;
    Some((ts, rest))
}

/// `name(args) = ret <dur>` → (name, args, ret, dur µs).
///
/// strace pads short calls to a column (`close(-1)          = -1 EBADF
/// (...) <0.000258>`), and returns carry annotations in parentheses
/// (`= 0x1 (flags FD_CLOEXEC)`), so the return starts at the last ` = `
/// whose left side ends the argument list with `)`.
fn parse_call(s: &str) -> Option<(String, String, String, Option<i64>)> {
    let open = s.find('(')?;
    let name = s[..open].trim().to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let mut end = s.len();
    let eq = loop {
        let i = s[..end].rfind(" = ")?;
        if i > open && s[..i].trim_end().ends_with(')') {
            break i;
        }
        end = i;
    };
    let close = s[..eq].trim_end().len() - 1;
    let args = s[open + 1..close].to_string();
    let after = s[eq + 3..].trim();
    let (ret, dur) = match after.rfind(" <") {
        Some(i) if after.ends_with('>') => match after[i + 2..after.len() - 1].parse::<f64>() {
            Ok(d) => (after[..i].trim_end().to_string(), Some((d * 1e6).round() as i64)),
            Err(_) => (after.to_string(), None),
        },
        _ => (after.to_string(), None),
    };
    Some((name, args, ret, dur))
}

/// Whether a return is a failure as `strace -c` counts them: an errno name
/// after the value, `-1 EBADF (...)` and also `? ERESTARTNOHAND (...)` (the
/// kernel's restart codes are errors to strace).
fn is_error(ret: &str) -> bool {
    let mut t = ret.split_ascii_whitespace();
    let (Some(value), Some(name)) = (t.next(), t.next()) else { return false };
    (value == "?" || value.starts_with('-'))
        && name.len() > 1
        && name.starts_with('E')
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[derive(Default)]
struct Acc {
    stats: HashMap<String, SyscallStat>,
    threads: HashMap<u64, (u64, i64)>,
    slowest: Vec<Call>,
    s: StraceSummary,
    /// Per tid: the unfinished call's (ts, name, args).
    open: HashMap<u64, (f64, String, String)>,
    /// Inside the summary table `strace -C` writes at the end.
    in_table: bool,
}

impl Acc {
    fn call(&mut self, c: Call) {
        // `exit_group(0) = ?`: the call never returned; `strace -c` leaves it out.
        if c.ret == "?" {
            self.s.never_returned += 1;
            return;
        }
        let st = self
            .stats
            .entry(c.name.clone())
            .or_insert_with(|| SyscallStat { name: c.name.clone(), ..Default::default() });
        st.count += 1;
        st.total_us += c.dur_us;
        st.max_us = st.max_us.max(c.dur_us);
        if is_error(&c.ret) {
            st.errors += 1;
        }
        let t = self.threads.entry(c.tid).or_default();
        t.0 += 1;
        t.1 += c.dur_us;
        self.s.calls += 1;
        if self.slowest.len() < SLOWEST || c.dur_us > self.slowest.last().map_or(0, |x| x.dur_us) {
            self.slowest.push(c);
            self.slowest.sort_by_key(|x| std::cmp::Reverse(x.dur_us));
            self.slowest.truncate(SLOWEST);
        }
    }

    fn line(&mut self, default_tid: u64, l: &str) {
        // `strace -C -o FILE` appends its own summary table to the file:
        // not calls, and not unparsed either.
        if l.starts_with("% time") {
            self.in_table = true;
            return;
        }
        if self.in_table {
            let first = l.split_ascii_whitespace().next().unwrap_or("");
            if l.is_empty() || first.starts_with("---") || first.parse::<f64>().is_ok() {
                return;
            }
            self.in_table = false;
        }
        // `-f` into one file prefixes `[pid N] ` or `N `; `-ff` files have none.
        let (tid, l) = if let Some(r) = l.strip_prefix("[pid ") {
            match r.split_once(']') {
                Some((p, rest)) => (p.trim().parse().unwrap_or(default_tid), rest.trim_start()),
                None => (default_tid, l),
            }
        } else {
            match l.split_once(' ') {
                Some((p, rest)) if p.bytes().all(|c| c.is_ascii_digit()) && split_ts(rest.trim_start()).is_some() => {
                    (p.parse().unwrap_or(default_tid), rest.trim_start())
                }
                _ => (default_tid, l),
            }
        };
        let Some((ts, rest)) = split_ts(l) else {
            self.s.unparsed_lines += 1;
            return;
        };
        if rest.starts_with("---") {
            self.s.signals += 1;
            return;
        }
        if rest.starts_with("+++") {
            self.s.exits += 1;
            return;
        }
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            if let Some(open) = head.find('(') {
                self.open.insert(tid, (ts, head[..open].to_string(), head[open + 1..].to_string()));
                return;
            }
        }
        if let Some(r) = rest.strip_prefix("<... ") {
            // `<... read resumed>, "...", 10) = 10 <0.000012>`
            let Some((name, tail)) = r.split_once(" resumed>") else {
                self.s.unparsed_lines += 1;
                return;
            };
            let (start, args0) = match self.open.remove(&tid) {
                Some((t, _, a)) => (t, a),
                None => (ts, String::new()),
            };
            let joined = format!("{}({}{}", name, args0, tail.trim_start_matches(' '));
            if let Some((name, args, ret, dur)) = parse_call(&joined) {
                self.call(Call {
                    tid,
                    ts_s: start,
                    name,
                    args,
                    ret,
                    dur_us: dur.unwrap_or(((ts - start) * 1e6) as i64),
                });
            } else {
                self.s.unparsed_lines += 1;
            }
            return;
        }
        match parse_call(rest) {
            Some((name, args, ret, dur)) => {
                self.call(Call { tid, ts_s: ts, name, args, ret, dur_us: dur.unwrap_or(0) })
            }
            None => self.s.unparsed_lines += 1,
        }
    }
}

fn tid_of(path: &Path) -> u64 {
    path.extension().and_then(|e| e.to_str()).and_then(|e| e.parse().ok()).unwrap_or(0)
}

/// A file, or a directory of `-ff` files (`worker.<pid>`).
pub fn decode(path: &Path) -> Result<StraceSummary, DecodeError> {
    let mut files: Vec<std::path::PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .map_err(DecodeError::io(path))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    files.sort();
    let mut acc = Acc::default();
    for f in &files {
        let r = std::io::BufReader::new(std::fs::File::open(f).map_err(DecodeError::io(f))?);
        acc.file(r, tid_of(f), &f.display().to_string())?;
    }
    Ok(acc.finish())
}

/// One strace file from any reader (`tid` for lines without a pid prefix).
pub fn decode_from(r: impl BufRead, tid: u64, name: &str) -> Result<StraceSummary, DecodeError> {
    let mut acc = Acc::default();
    acc.file(r, tid, name)?;
    Ok(acc.finish())
}

impl Acc {
    fn file(&mut self, r: impl BufRead, tid: u64, name: &str) -> Result<(), DecodeError> {
        self.s.files += 1;
        for (n, line) in r.split(b'\n').enumerate() {
            let line = line.map_err(|source| DecodeError::Line { name: name.into(), line: n as u64 + 1, source })?;
            if line.len() > MAX_LINE {
                self.s.unparsed_lines += 1;
                continue;
            }
            self.line(tid, String::from_utf8_lossy(&line).trim_end());
        }
        Ok(())
    }

    fn finish(mut self) -> StraceSummary {
        self.s.unfinished = self.open.len() as u64;
        let mut by: Vec<SyscallStat> = self.stats.into_values().collect();
        by.sort_by(|a, b| b.total_us.cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)));
        let mut threads: Vec<(u64, u64, i64)> = self.threads.into_iter().map(|(t, (c, d))| (t, c, d)).collect();
        threads.sort();
        self.s.threads = threads.len() as u64;
        self.s.by_syscall = by;
        self.s.by_thread = threads;
        self.s.slowest = self.slowest;
        self.s
    }
}
