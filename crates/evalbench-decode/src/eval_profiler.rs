//! Nix's own evaluation profiler (Nix ≥ 2.30, `--eval-profiler flamegraph`):
//! collapsed stacks, `frame;frame COUNT`, read and ranked by position and
//! by function.
//!
//! Nix takes a sample when a function is entered and the sampling period
//! has passed since the last one, and writes the stacks it counted every
//! 2 s, starting its counts again: one stack can be on several lines, and
//! they are summed here. A frame is one of (Nix's `eval-profiler.cc`):
//! - a lambda: its call site, `file:line:col`, then `:name` when it has one
//!   (the lambda's own position when the call site is unknown);
//! - a primop: `file:line:col:primop NAME`, or `primop NAME` alone when the
//!   call site is unknown;
//! - a functor: `file:line:col:functor`;
//! - anything else called: its position alone.
//!
//! A position's file is any text (`«string»`, `«derivation …»`), so a
//! frame is split at its last `:line:col` before the function's name.
//! Positions in the store name the flake input they are in
//! (`self:flake.nix:5:13`) as the trace's do; a store that is not at
//! /nix/store (`--store DIR`) is read as if it were.

use std::collections::HashMap;
use std::path::Path;

use evalbench_bundle::inputs::Inputs;

use crate::error::DecodeError;

/// A frame's position and function; either may be absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub position: Option<&'a str>,
    pub function: Option<&'a str>,
}

/// Splits a frame as Nix writes it: the position is the text up to the
/// last `:LINE:COL` that is followed by nothing or by `:NAME`.
pub fn split_frame(frame: &str) -> Frame<'_> {
    if frame.starts_with("primop ") {
        return Frame { position: None, function: Some(frame) };
    }
    let b = frame.as_bytes();
    // Candidate ends of `:LINE:COL`, from the right.
    let mut end = b.len();
    loop {
        if let Some(at) = line_col_before(b, end) {
            let function = (end < b.len()).then(|| &frame[end + 1..]);
            return Frame {
                position: Some(&frame[..end]).filter(|_| at > 0),
                function: function.filter(|f| !f.is_empty()),
            };
        }
        // The next `:` to the left ends a candidate position.
        match frame[..end].rfind(':') {
            Some(i) => end = i,
            None => return Frame { position: Some(frame), function: None },
        }
    }
}

/// Where `:LINE:COL` starts when `b[..end]` ends with one.
fn line_col_before(b: &[u8], end: usize) -> Option<usize> {
    let digits = |to: usize| b[..to].iter().rev().take_while(|c| c.is_ascii_digit()).count();
    let col = digits(end);
    if col == 0 || end < col + 1 || b[end - col - 1] != b':' {
        return None;
    }
    let line_end = end - col - 1;
    let line = digits(line_end);
    if line == 0 || line_end < line + 1 || b[line_end - line - 1] != b':' {
        return None;
    }
    Some(line_end - line - 1)
}

/// A position as shown: the store path's directory named by its input,
/// else the path inside it; a store at another root read as /nix/store.
pub fn name_position(pos: &str, inputs: Option<&Inputs>) -> String {
    let pos = match pos.find("/nix/store/") {
        Some(i) if i > 0 && pos.starts_with('/') => &pos[i..],
        _ => pos,
    };
    match inputs {
        Some(i) => i.name(pos),
        None => evalbench_bundle::nix_stats::store_relative(pos).to_string(),
    }
}

/// A position or function with its samples: those where it is the
/// innermost frame (self) and those where it is anywhere on the stack,
/// counted once a stack (total).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Ranked {
    pub name: String,
    pub self_samples: u64,
    pub total_samples: u64,
}

/// A profile read whole: its stacks summed, frames named.
#[derive(Debug, Default)]
pub struct Sampled {
    /// Each distinct stack (outermost first) and its samples, most first.
    pub stacks: Vec<(Vec<String>, u64)>,
    pub samples: u64,
    pub lines: u64,
}

/// What a function is called when it has no name: a lambda without one.
pub const ANONYMOUS: &str = "(anonymous lambda)";

impl Sampled {
    /// Positions, most self samples first (ties by total, then name).
    pub fn by_position(&self) -> Vec<Ranked> {
        self.rank(|f| split_frame(f).position.map(str::to_string))
    }

    /// Functions by name (`fib`, `primop lessThan`, `functor`), most self
    /// samples first.
    pub fn by_function(&self) -> Vec<Ranked> {
        self.rank(|f| {
            let s = split_frame(f);
            Some(s.function.map(str::to_string).unwrap_or_else(|| ANONYMOUS.to_string()))
        })
    }

    fn rank(&self, key: impl Fn(&str) -> Option<String>) -> Vec<Ranked> {
        let mut at: HashMap<String, (u64, u64)> = HashMap::new();
        for (stack, n) in &self.stacks {
            let keys: Vec<Option<String>> = stack.iter().map(|f| key(f)).collect();
            // Counts come from the file: summed without overflow.
            if let Some(Some(leaf)) = keys.last() {
                let e = at.entry(leaf.clone()).or_default();
                e.0 = e.0.saturating_add(*n);
            }
            let mut seen: std::collections::HashSet<&String> = Default::default();
            for k in keys.iter().flatten() {
                if seen.insert(k) {
                    let e = at.entry(k.clone()).or_default();
                    e.1 = e.1.saturating_add(*n);
                }
            }
        }
        let mut out: Vec<Ranked> =
            at.into_iter().map(|(name, (s, t))| Ranked { name, self_samples: s, total_samples: t }).collect();
        out.sort_by(|a, b| {
            b.self_samples.cmp(&a.self_samples).then(b.total_samples.cmp(&a.total_samples)).then(a.name.cmp(&b.name))
        });
        out
    }
}

/// Names a frame's position by `inputs`, its function kept.
fn name_frame(frame: &str, inputs: Option<&Inputs>) -> String {
    let f = split_frame(frame);
    match (f.position, f.function) {
        (Some(p), Some(func)) => format!("{}:{func}", name_position(p, inputs)),
        (Some(p), None) => name_position(p, inputs),
        (None, _) => frame.to_string(),
    }
}

/// Reads a profile Nix's eval profiler wrote. A function trace, or a file
/// of something else, is refused, saying what it looks like; a line that
/// is not `STACK COUNT` is named by its number.
pub fn read(path: &Path, inputs: Option<&Inputs>) -> Result<Sampled, DecodeError> {
    let head = crate::sniff::head(path, 4096)?;
    let expected = "a Nix eval profiler's flamegraph profile (`frame;frame COUNT` lines)";
    if !matches!(crate::sniff::looks_like(&head), "text" | "an empty file") {
        return Err(crate::sniff::wrong(path, expected, &head));
    }
    // nix's function trace, after a warning or two nix printed on the same stderr.
    if String::from_utf8_lossy(&head).lines().any(|l| l.starts_with("function-trace ")) {
        return Err(DecodeError::format(
            path.display().to_string(),
            "",
            format!("expected {expected}, but this looks like nix's function trace (decode nix-trace)"),
        ));
    }
    let mut summed: HashMap<Vec<String>, u64> = HashMap::new();
    let mut samples = 0u64;
    let bad = |n: u64, what: &str| {
        DecodeError::format(path.display().to_string(), format!("line {n}: "), format!("{what}; {expected}"))
    };
    let n = crate::sniff::each_line(path, |n, line| {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            return Err(bad(n, "no sample count after a space"));
        };
        let Ok(count) = count.parse::<u64>() else {
            return Err(bad(n, &format!("`{}` is not a sample count", count.chars().take(40).collect::<String>())));
        };
        if stack.is_empty() {
            return Err(bad(n, "an empty stack"));
        }
        let frames = stack.split(';').map(|f| name_frame(f, inputs)).collect();
        let at = summed.entry(frames).or_default();
        *at = at.saturating_add(count);
        samples = samples.saturating_add(count);
        Ok(())
    })?;
    let mut stacks: Vec<(Vec<String>, u64)> = summed.into_iter().collect();
    stacks.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(Sampled { stacks, samples, lines: n })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_where_nix_joins_them() {
        fn f<'a>(p: Option<&'a str>, func: Option<&'a str>) -> Frame<'a> {
            Frame { position: p, function: func }
        }
        assert_eq!(
            split_frame("/nix/store/x-source/flake.nix:5:13:fib"),
            f(Some("/nix/store/x-source/flake.nix:5:13"), Some("fib"))
        );
        assert_eq!(split_frame("/a/b.nix:3:19:primop lessThan"), f(Some("/a/b.nix:3:19"), Some("primop lessThan")));
        assert_eq!(split_frame("primop lessThan"), f(None, Some("primop lessThan")));
        assert_eq!(split_frame("/a/b.nix:3:19"), f(Some("/a/b.nix:3:19"), None));
        assert_eq!(split_frame("/a/b.nix:3:19:functor"), f(Some("/a/b.nix:3:19"), Some("functor")));
        // A file name with colons and digits of its own, and a name after it.
        assert_eq!(split_frame("«string»:1:2:f:3:4"), f(Some("«string»:1:2:f:3:4"), None));
        assert_eq!(split_frame("/x:1:2/y.nix:7:8:go"), f(Some("/x:1:2/y.nix:7:8"), Some("go")));
        assert_eq!(split_frame("«none»:0"), f(Some("«none»:0"), None));
    }

    #[test]
    fn a_store_elsewhere_reads_as_nix_store() {
        assert_eq!(
            name_position("/tmp/s/nix/store/krvwmxai31rhzdcwic180z5ifjwdcs39-source/flake.nix:5:13", None),
            "flake.nix:5:13"
        );
        assert_eq!(name_position("«string»:1:1", None), "«string»:1:1");
    }
}
