//! nix's own profile of an evaluation, folded as it streams.
//!
//! nix 2.8's `--trace-function-calls` writes a line when a function or primop
//! is entered and one when it returns (`function-trace entered POS at NS`,
//! `function-trace exited POS at NS`; POS is the call site, or `undefined
//! position`; NS nanoseconds since the epoch). A small evaluation writes a
//! million of them, so they are never held: [`Fold`] keeps a stack of the
//! open calls and, per distinct stack of call sites, the self time (the
//! call's time less its callees') and the calls. Nix's contrib
//! `stack-collapse.py` counts inclusive time per stack instead, so a parent
//! is counted again in every child; here each nanosecond is counted once.
//!
//! A root frame can be set while folding ([`Fold::set_root`], the attribute
//! the lab's evaluator is on): calls opened after it are under it.
//!
//! Nix 2.30 and later sample the stack instead (`--eval-profiler
//! flamegraph`) and write folded stacks (`file:line:col:name;... COUNT`) of
//! their own; [`read`] reads both.

use std::collections::HashMap;
use std::path::Path;

use crate::error::DecodeError;

/// Position text to a short frame: a store path's `/nix/store/<hash>-<name>/`
/// is dropped, so a flake's files read as their path inside it.
pub fn shorten(pos: &str) -> String {
    evalbench_bundle::nix_stats::store_relative(pos).to_string()
}

struct Open {
    frame: u32,
    stack: u32,
    start: u64,
    child_ns: u64,
}

/// The fold of one stream (or of several, one after the other).
#[derive(Default)]
pub struct Fold {
    frames: Vec<String>,
    frame_ids: HashMap<String, u32>,
    /// stack id -> (parent stack id or NONE, frame id)
    stacks: Vec<(u32, u32)>,
    stack_ids: HashMap<(u32, u32), u32>,
    self_ns: Vec<u64>,
    calls: Vec<u64>,
    pos_calls: Vec<u64>,
    pos_self_ns: Vec<u64>,
    open: Vec<Open>,
    root: Option<u32>,
    /// Frames a stack keeps below its root; deeper calls count in the cut frame.
    max_depth: Option<usize>,
    /// The cut frame's id, once a call went past the cap.
    cut: Option<u32>,
    /// The flake's inputs, which name the store paths in positions.
    inputs: Option<evalbench_bundle::inputs::Inputs>,
    pub lines: u64,
    pub entered: u64,
    /// Exit lines with no open call of their site: the trace began inside
    /// that call, or the line is not what nix wrote.
    pub unmatched_exits: u64,
    pub first_ns: Option<u64>,
    pub last_ns: u64,
}

const NONE: u32 = u32::MAX;

/// Call sites a stack keeps below its root in the lab's profile, and
/// `decode nix-trace`'s default: enough for a flake's own structure, and
/// a bound on the stacks a deep recursion makes.
pub const PROFILE_DEPTH: usize = 32;

/// The frame that holds every call deeper than the cap, under the deepest
/// call site kept: what the flame graph shows as cut, instead of charging
/// the deeper calls to a site that did not spend the time.
pub fn truncation_frame(depth: usize) -> String {
    format!("[deeper than {depth} call sites]")
}

/// One stack, root first, with its self time and calls.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stack {
    pub stack: Vec<String>,
    pub self_us: u64,
    pub calls: u64,
}

/// A call site: how often it was entered and its self time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub position: String,
    pub calls: u64,
    pub self_us: u64,
}

fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

impl Fold {
    pub fn new() -> Fold {
        Fold::default()
    }

    /// A fold whose stacks keep at most `depth` call sites below the root:
    /// a deep recursion (a dependency chain evaluated depth-first) makes as
    /// many distinct stacks as it is deep, and a folded file that grows with
    /// the square of the depth. Deeper calls count, self time and calls, in
    /// one [`truncation_frame`] under the deepest frame kept; positions'
    /// totals are unaffected.
    pub fn with_max_depth(depth: usize) -> Fold {
        Fold { max_depth: Some(depth.max(1)), ..Fold::default() }
    }

    /// Positions name the input they are in (`alpha:lib/default.nix:1:3`).
    pub fn with_inputs(mut self, inputs: evalbench_bundle::inputs::Inputs) -> Fold {
        self.inputs = Some(inputs).filter(|i| !i.is_empty());
        self
    }

    fn frame(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.frame_ids.get(name) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(name.to_string());
        self.frame_ids.insert(name.to_string(), id);
        self.pos_calls.push(0);
        self.pos_self_ns.push(0);
        id
    }

    fn stack(&mut self, parent: u32, frame: u32) -> u32 {
        if let Some(&id) = self.stack_ids.get(&(parent, frame)) {
            return id;
        }
        let id = self.stacks.len() as u32;
        self.stacks.push((parent, frame));
        self.stack_ids.insert((parent, frame), id);
        self.self_ns.push(0);
        self.calls.push(0);
        id
    }

    /// nix's time from now on (the last line's timestamp) is under `root`
    /// (an attribute), the calls open now included: what each of them spent
    /// so far stays under the old root, and the rest of it is counted under
    /// the new one, as the same calls. So an attribute's self time is the
    /// stretch of nix's clock between its root and the next, whatever
    /// calls were open across the boundary.
    pub fn set_root(&mut self, root: &str) {
        let f = self.frame(&root.replace(';', ":"));
        let r = self.stack(NONE, f);
        self.root = Some(r);
        let now = self.last_ns;
        let mut parent = r;
        for i in 0..self.open.len() {
            let inner = self.open.get(i + 1).map_or(0, |n| now.saturating_sub(n.start));
            let o = &self.open[i];
            let so_far = now.saturating_sub(o.start).saturating_sub(o.child_ns).saturating_sub(inner);
            let (frame, old) = (o.frame, o.stack);
            self.self_ns[old as usize] += so_far;
            self.pos_self_ns[frame as usize] += so_far;
            let stack = self.child_stack(parent, frame, i);
            let o = &mut self.open[i];
            o.stack = stack;
            o.start = now;
            o.child_ns = 0;
            parent = stack;
        }
    }

    /// The stack of a call to `frame` under `parent`, `depth` calls below
    /// the root already: past the cap, the cut frame.
    fn child_stack(&mut self, parent: u32, frame: u32, depth: usize) -> u32 {
        match self.max_depth {
            Some(d) if depth >= d && parent != NONE => {
                // The first call past the cap opens the cut frame; calls below it stay in it.
                let cut = match self.cut {
                    Some(c) => c,
                    None => {
                        let c = self.frame(&truncation_frame(d));
                        self.cut = Some(c);
                        c
                    }
                };
                if self.stacks[parent as usize].1 == cut {
                    parent
                } else {
                    self.stack(parent, cut)
                }
            }
            _ => self.stack(parent, frame),
        }
    }

    /// Feeds one line; other lines (nix's own messages) are skipped.
    pub fn line(&mut self, line: &str) {
        let (entered, rest) = if let Some(r) = line.strip_prefix("function-trace entered ") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("function-trace exited ") {
            (false, r)
        } else {
            return;
        };
        let Some((pos, ns)) = rest.trim_end().rsplit_once(" at ") else { return };
        let Ok(ns) = ns.parse::<u64>() else { return };
        self.lines += 1;
        self.first_ns.get_or_insert(ns);
        self.last_ns = self.last_ns.max(ns);
        let named = match &self.inputs {
            Some(i) => i.name(pos),
            None => shorten(pos),
        };
        let frame = self.frame(&named.replace(';', ":"));
        if entered {
            self.entered += 1;
            self.pos_calls[frame as usize] += 1;
            // Every open call is under the root (set_root moves them there).
            let parent = self.open.last().map_or(self.root.unwrap_or(NONE), |o| o.stack);
            let stack = self.child_stack(parent, frame, self.open.len());
            self.calls[stack as usize] += 1;
            self.open.push(Open { frame, stack, start: ns, child_ns: 0 });
            return;
        }
        // The innermost open call of this site; calls above it never returned (a throw unwound them).
        let Some(at) = self.open.iter().rposition(|o| o.frame == frame) else {
            self.unmatched_exits += 1;
            return;
        };
        while self.open.len() > at {
            let o = self.open.pop().expect("non-empty");
            let total = ns.saturating_sub(o.start);
            let own = total.saturating_sub(o.child_ns);
            self.self_ns[o.stack as usize] += own;
            self.pos_self_ns[o.frame as usize] += own;
            if let Some(p) = self.open.last_mut() {
                p.child_ns += total;
            }
        }
    }

    fn path(&self, mut s: u32) -> Vec<String> {
        let mut v = Vec::new();
        while s != NONE {
            let (parent, frame) = self.stacks[s as usize];
            v.push(self.frames[frame as usize].clone());
            s = parent;
        }
        v.reverse();
        v
    }

    /// Every stack with calls, root first, in a stable order.
    pub fn stacks(&self) -> Vec<Stack> {
        let mut v: Vec<Stack> = (0..self.stacks.len() as u32)
            .filter(|&s| self.calls[s as usize] > 0 || self.self_ns[s as usize] > 0)
            .map(|s| Stack {
                stack: self.path(s),
                self_us: us(self.self_ns[s as usize]),
                calls: self.calls[s as usize],
            })
            .collect();
        v.sort_by(|a, b| a.stack.cmp(&b.stack));
        v
    }

    /// Self time of each root frame's stacks (the attributes), and their
    /// calls, largest first.
    pub fn by_root(&self) -> Vec<crate::nix_profile::AttributeCost> {
        let mut m: HashMap<u32, (u64, u64)> = HashMap::new();
        for (s, &(_, _)) in self.stacks.iter().enumerate() {
            let mut r = s as u32;
            while self.stacks[r as usize].0 != NONE {
                r = self.stacks[r as usize].0;
            }
            let e = m.entry(self.stacks[r as usize].1).or_default();
            e.0 += self.self_ns[s];
            e.1 += self.calls[s];
        }
        let mut v: Vec<crate::nix_profile::AttributeCost> = m
            .into_iter()
            .map(|(f, (ns, calls))| crate::nix_profile::AttributeCost {
                attr: self.frames[f as usize].clone(),
                self_us: us(ns),
                calls,
            })
            .collect();
        v.sort_by(|a, b| b.self_us.cmp(&a.self_us).then_with(|| a.attr.cmp(&b.attr)));
        v
    }

    /// Inferno's folded lines (`root;frame;frame self_us`), stacks of at least 1 µs.
    pub fn folded(&self) -> String {
        let mut out = String::new();
        for s in self.stacks() {
            if s.self_us > 0 {
                out.push_str(&s.stack.join(";"));
                out.push(' ');
                out.push_str(&s.self_us.to_string());
                out.push('\n');
            }
        }
        out
    }

    /// Every call site entered, with its calls and self time, in no order
    /// ([`crate::nix_profile::NixProfile::of`] sorts).
    pub fn positions(&self) -> Vec<Position> {
        (0..self.frames.len())
            .filter(|&f| self.pos_calls[f] > 0)
            .map(|f| Position {
                position: self.frames[f].clone(),
                calls: self.pos_calls[f],
                self_us: us(self.pos_self_ns[f]),
            })
            .collect()
    }

    /// Call sites a stack keeps below its root (None: all).
    pub fn max_depth(&self) -> Option<usize> {
        self.max_depth
    }

    /// Nanoseconds from the first trace line to the last.
    pub fn traced_ns(&self) -> u64 {
        self.first_ns.map_or(0, |f| self.last_ns.saturating_sub(f))
    }
}

/// What a saved profile holds: nix 2.8's trace, folded; or Nix 2.30's
/// sampled folded stacks as they are (weights in samples).
pub enum Profile {
    Traced(Box<Fold>),
    Sampled { stacks: Vec<(Vec<String>, u64)>, lines: u64 },
}

/// What a saved profile's lines are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lines {
    /// nix 2.8's `function-trace entered|exited POS at NS`.
    Trace,
    /// Nix 2.30's `frame;frame COUNT`.
    Sampled,
}

/// Reads a saved profile of either kind, a line at a time; a trace's stacks
/// keep at most `max_depth` call sites (None: all; see [`Fold::with_max_depth`]).
/// Positions name the input they are in when `inputs` are given.
pub fn read(
    path: &Path,
    max_depth: Option<usize>,
    inputs: Option<evalbench_bundle::inputs::Inputs>,
) -> Result<Profile, DecodeError> {
    let head = crate::sniff::head(path, 4096)?;
    let expected =
        "nix's function trace (`function-trace entered …` lines) or a Nix flamegraph profile (`frame;frame COUNT`)";
    if !matches!(crate::sniff::looks_like(&head), "text" | "an empty file" | "nix's function trace (decode nix-trace)")
    {
        return Err(crate::sniff::wrong(path, expected, &head));
    }
    let mut fold = match max_depth {
        Some(d) => Fold::with_max_depth(d),
        None => Fold::new(),
    };
    if let Some(i) = inputs {
        fold = fold.with_inputs(i);
    }
    let mut sampled: Vec<(Vec<String>, u64)> = Vec::new();
    // Decided by the first line that is not empty.
    let mut kind: Option<Lines> = None;
    let n = crate::sniff::each_line(path, |n, line| {
        let is_trace = line.starts_with("function-trace ");
        let k =
            *kind.get_or_insert(if is_trace || line.rsplit_once(' ').is_none_or(|(_, c)| c.parse::<u64>().is_err()) {
                Lines::Trace
            } else {
                Lines::Sampled
            });
        if k == Lines::Trace {
            fold.line(line);
        } else {
            let Some((stack, count)) = line.rsplit_once(' ') else {
                return Err(DecodeError::format(
                    path.display().to_string(),
                    format!("line {n}"),
                    "expected `frame;frame COUNT` (a Nix flamegraph profile)",
                ));
            };
            let Ok(count) = count.parse::<u64>() else {
                return Err(DecodeError::format(
                    path.display().to_string(),
                    format!("line {n}"),
                    "expected a sample count after the last space",
                ));
            };
            sampled.push((stack.split(';').map(String::from).collect(), count));
        }
        Ok(())
    })?;
    // Text with lines, none of them a trace line: not nix's trace at all.
    if kind == Some(Lines::Trace) && fold.lines == 0 {
        return Err(DecodeError::format(
            path.display().to_string(),
            "",
            format!(
                "expected {expected}, but none of its {n} lines is one (it looks like {})",
                crate::sniff::looks_like(&head)
            ),
        ));
    }
    Ok(match kind {
        Some(Lines::Sampled) => Profile::Sampled { stacks: sampled, lines: n },
        _ => Profile::Traced(Box::new(fold)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(lines: &[&str]) -> Fold {
        let mut f = Fold::new();
        for l in lines {
            f.line(l);
        }
        f
    }

    #[test]
    fn self_time_is_counted_once_and_nests() {
        let f = fold(&[
            "function-trace entered a.nix:1:1 at 1000",
            "function-trace entered b.nix:2:2 at 2000",
            "function-trace exited b.nix:2:2 at 5000",
            "function-trace entered b.nix:2:2 at 6000",
            "function-trace exited b.nix:2:2 at 7000",
            "function-trace exited a.nix:1:1 at 11000",
        ]);
        let s = f.stacks();
        assert_eq!(
            s,
            vec![
                Stack { stack: vec!["a.nix:1:1".into()], self_us: 6, calls: 1 },
                Stack { stack: vec!["a.nix:1:1".into(), "b.nix:2:2".into()], self_us: 4, calls: 2 },
            ]
        );
        assert_eq!(f.folded(), "a.nix:1:1 6\na.nix:1:1;b.nix:2:2 4\n");
        assert_eq!(f.entered, 3);
        assert_eq!(f.traced_ns(), 10_000);
    }

    #[test]
    fn roots_store_paths_and_unwound_calls() {
        let mut f = Fold::new();
        f.line("function-trace entered (string):1:5 at 0");
        f.set_root("packages.x86_64-linux.pkg1");
        f.line("function-trace entered /nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/flake.nix:10:34 at 1000");
        f.line("function-trace entered undefined position at 2000");
        // A throw: the outer call exits with the inner one still open.
        f.line("function-trace exited /nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/flake.nix:10:34 at 4000");
        f.line("function-trace exited (string):1:5 at 5000");
        f.line("some other line from nix");
        let s = f.stacks();
        let paths: Vec<String> = s.iter().map(|x| x.stack.join(";")).collect();
        // The call open when the root was set goes on under it, as the same call.
        assert!(
            paths.contains(&"packages.x86_64-linux.pkg1;(string):1:5;flake.nix:10:34;undefined position".to_string()),
            "{paths:?}"
        );
        let root = f.by_root();
        // All 5 µs of nix's clock after the root was set are the root's.
        assert_eq!(root.iter().find(|r| r.attr == "packages.x86_64-linux.pkg1").map(|r| r.self_us), Some(5));
        assert_eq!(f.lines, 5);
        assert_eq!(shorten("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/lib/fix.nix:3:1"), "lib/fix.nix:3:1");
        assert_eq!(shorten("//builtin/derivation.nix:9:12"), "//builtin/derivation.nix:9:12");
    }

    #[test]
    fn a_root_switched_while_a_call_is_open_takes_the_rest_of_its_time() {
        let mut f = Fold::new();
        f.set_root("a");
        f.line("function-trace entered x.nix:1:1 at 0");
        f.line("function-trace entered y.nix:2:2 at 100000");
        f.line("function-trace exited y.nix:2:2 at 300000");
        // Root b from 1000 µs on, with x still open: x's 700 µs of self so far stay a's.
        f.line("function-trace entered z.nix:3:3 at 900000");
        f.line("function-trace exited z.nix:3:3 at 1000000");
        f.set_root("b");
        f.line("function-trace exited x.nix:1:1 at 1500000");
        let root: std::collections::BTreeMap<String, u64> =
            f.by_root().into_iter().map(|r| (r.attr, r.self_us)).collect();
        // a: x 0..100, 300..900 (700 µs) + y 200 + z 100 = 1000 µs; b: x's last 500 µs.
        assert_eq!(root["a"], 1000);
        assert_eq!(root["b"], 500, "{root:?}");
        let total: u64 = f.stacks().iter().map(|s| s.self_us).sum();
        assert_eq!(total, 1500, "nothing counted twice: {:?}", f.stacks());
        // Positions keep their whole self time: x 1200 µs.
        let x = f.positions().into_iter().find(|p| p.position == "x.nix:1:1").unwrap();
        assert_eq!((x.calls, x.self_us), (1, 1200));
    }
}
