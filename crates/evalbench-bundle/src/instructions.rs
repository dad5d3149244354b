//! The instructions nix executed in a counted pass (`run --counted`): one
//! cachegrind file per nix process in `<pass>/eval/`, as Valgrind wrote it
//! (`valgrind --tool=cachegrind --cache-sim=no`), read here into the
//! process's total and its counts per function.
//!
//! Why instructions: a time on a shared machine spreads by several percent
//! from run to run, and nix's own counters (`nrFunctionCalls`, ...) are
//! exact but blind to the work inside a call. The instructions a process
//! executes are counted by Valgrind's simulated CPU, not by the machine's
//! clock: the same evaluation gives the same count to a few parts in a
//! million, whatever else the machine does.
//!
//! The file is a text format of Valgrind's: header lines (`desc:`, `cmd:`,
//! `events:`), then `fl=FILE` and `fn=NAME` lines each followed by lines of
//! `LINE COUNT...` (one count per event, missing ones zero), and a closing
//! `summary:` with the totals. Without debug information every line is 0
//! and every file `???`; a function without a symbol is `???` too. A file
//! without its summary was cut short (Valgrind writes it last, at exit) and
//! is an error, as is a summary the lines do not add up to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{io, BundleError};
use crate::layout;

/// One process as cachegrind counted it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counted {
    /// The command Valgrind ran (`cmd:`), after any exec.
    pub cmd: String,
    /// Instructions executed (`Ir`), the summary's.
    pub instructions: u64,
    /// Instructions per function (Valgrind's demangled names; `???` for
    /// code without a symbol), summed over the files they were listed in.
    pub functions: BTreeMap<String, u64>,
}

/// What the process was doing for the lab's eval subprocess, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// `nix flake metadata`: locking (and fetching) the flake, once per evaluation.
    Lock,
    /// `nix eval ... --apply builtins.attrNames`: listing the attributes.
    Discover,
    /// An evaluator: evaluating its shard and writing its derivations.
    Evaluate,
}

impl Phase {
    /// `lock`, `discover`, or an evaluator's shard (`0`, `0.1`).
    pub fn of(who: &str) -> Option<Phase> {
        match who {
            "lock" => Some(Phase::Lock),
            "discover" => Some(Phase::Discover),
            w if !w.is_empty() && w.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) => {
                Some(Phase::Evaluate)
            }
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Lock => "lock",
            Phase::Discover => "discover",
            Phase::Evaluate => "evaluate",
        }
    }
}

/// One nix process of a counted pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// `lock`, `discover`, `0`, `0.1`: the file's name between prefix and suffix.
    pub who: String,
    pub phase: Phase,
    pub file: PathBuf,
    pub counted: Counted,
    /// Processes it started (or its loader's wrapper started), counted
    /// apart and kept apart: (their file, what they counted).
    pub children: Vec<(PathBuf, Counted)>,
}

/// A counted pass's instructions, its processes in name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassInstructions {
    pub processes: Vec<Process>,
}

impl PassInstructions {
    /// Instructions of every nix process of the pass (not their children).
    pub fn total(&self) -> u64 {
        self.processes.iter().map(|p| p.counted.instructions).sum()
    }
    /// Instructions per phase, in phase order.
    pub fn by_phase(&self) -> BTreeMap<Phase, u64> {
        let mut m = BTreeMap::new();
        for p in &self.processes {
            *m.entry(p.phase).or_default() += p.counted.instructions;
        }
        m
    }
    /// Instructions per function over every nix process of the pass.
    pub fn functions(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> = BTreeMap::new();
        for p in &self.processes {
            for (f, n) in &p.counted.functions {
                *m.entry(f.clone()).or_default() += n;
            }
        }
        m
    }
}

/// Reads Valgrind's cachegrind output; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Counted, BundleError> {
    let err = |line: usize, expected: &'static str, found: &str| BundleError::Line {
        path: path.to_path_buf(),
        line,
        expected,
        found: format!("{:?}", found.chars().take(80).collect::<String>()),
    };
    let mut c = Counted::default();
    let mut ir: Option<usize> = None;
    let mut function: Option<String> = None;
    let mut summary: Option<u64> = None;
    let mut sum: u64 = 0;
    // Valgrind writes the command as it was given: an argument with
    // newlines in it (the lab's `--apply` function) continues `cmd:` on the
    // lines before `events:`.
    let mut in_cmd = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if in_cmd && !line.starts_with("events:") {
            c.cmd.push('\n');
            c.cmd.push_str(line);
            continue;
        }
        in_cmd = false;
        if line.is_empty() || line.starts_with('#') || line.starts_with("desc:") || line.starts_with("fl=") {
            continue;
        }
        if summary.is_some() {
            return Err(err(n, "nothing after the summary line", line));
        }
        if let Some(cmd) = line.strip_prefix("cmd:") {
            c.cmd = cmd.trim().to_string();
            in_cmd = ir.is_none();
        } else if let Some(events) = line.strip_prefix("events:") {
            ir = Some(
                events
                    .split_whitespace()
                    .position(|e| e == "Ir")
                    .ok_or_else(|| err(n, "an events line that counts Ir (instructions)", line))?,
            );
        } else if let Some(name) = line.strip_prefix("fn=") {
            function = Some(name.to_string());
        } else if let Some(totals) = line.strip_prefix("summary:") {
            let at = ir.ok_or_else(|| err(n, "an events line before the summary", line))?;
            let total = counts(totals).nth(at).ok_or_else(|| err(n, "a summary with a count per event", line))?;
            summary = Some(total.ok_or_else(|| err(n, "a summary of whole numbers", line))?);
        } else if line.starts_with(|ch: char| ch.is_ascii_digit()) {
            let at = ir.ok_or_else(|| err(n, "an events line before the first count", line))?;
            let name = function.as_ref().ok_or_else(|| err(n, "a fn= line before the first count", line))?;
            let mut fields = counts(line);
            fields.next().ok_or_else(|| err(n, "a line number", line))?.ok_or_else(|| err(n, "a line number", line))?;
            let v = match fields.nth(at) {
                None => 0,
                Some(v) => v.ok_or_else(|| err(n, "counts that are whole numbers", line))?,
            };
            sum = sum.checked_add(v).ok_or_else(|| err(n, "counts that add up within 64 bits", line))?;
            let f = c.functions.entry(name.clone()).or_default();
            *f = f.saturating_add(v);
        } else {
            return Err(err(n, "a cachegrind line (cmd:, events:, fl=, fn=, counts, summary:)", line));
        }
    }
    let lines = text.lines().count();
    let total = summary.ok_or_else(|| {
        err(lines, "a summary: line at the end (the file is cut short: Valgrind writes it when the process exits)", "")
    })?;
    if total != sum {
        return Err(err(lines, "a summary equal to the sum of the counts", &format!("summary {total}, counts {sum}")));
    }
    c.instructions = total;
    c.functions.retain(|_, v| *v > 0);
    Ok(c)
}

fn counts(s: &str) -> impl Iterator<Item = Option<u64>> + '_ {
    s.split_whitespace().map(|f| f.parse::<u64>().ok())
}

/// `cachegrind.<who>.out` -> `who`, and whether it is a child's file
/// (`cachegrind.<who>.child-<pid>.out`).
fn who_of(name: &str) -> Option<(&str, bool)> {
    let rest = name.strip_prefix(layout::CACHEGRIND_PREFIX)?.strip_suffix(layout::CACHEGRIND_SUFFIX)?;
    match rest.split_once(layout::CACHEGRIND_CHILD) {
        Some((who, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => Some((who, true)),
        Some(_) => None,
        None => Some((rest, false)),
    }
}

/// A counted pass's processes; None when the pass has no cachegrind files.
/// A file that does not read is an error naming it and the line.
pub fn read(pass_dir: &Path) -> Result<Option<PassInstructions>, BundleError> {
    let dir = pass_dir.join(layout::EVAL_DIR);
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
        .filter(|(n, _)| who_of(n).is_some())
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    names.sort();
    let mut out = PassInstructions::default();
    let mut children: Vec<(String, PathBuf, Counted)> = Vec::new();
    for (name, path) in &names {
        let (who, child) = who_of(name).expect("filtered above");
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let counted = parse(path, &text)?;
        if child {
            children.push((who.to_string(), path.clone(), counted));
            continue;
        }
        let phase = Phase::of(who).ok_or_else(|| BundleError::Line {
            path: path.clone(),
            line: 0,
            expected: "a file named for lock, discover or an evaluator's shard (cachegrind.0.out)",
            found: format!("{name:?}"),
        })?;
        out.processes.push(Process { who: who.to_string(), phase, file: path.clone(), counted, children: Vec::new() });
    }
    for (who, path, counted) in children {
        match out.processes.iter_mut().find(|p| p.who == who) {
            Some(p) => p.children.push((path, counted)),
            None => {
                return Err(BundleError::Line {
                    path,
                    line: 0,
                    expected: "a child of a nix process whose own file is there",
                    found: format!("no cachegrind.{who}.out"),
                })
            }
        }
    }
    // Shards in number order (`2` before `10`), after lock and discover.
    out.processes
        .sort_by_key(|p| (p.phase, p.who.split('.').map(|x| x.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>()));
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "desc: I1 cache: 32768 B\ncmd: /usr/bin/nix eval --json\nevents: Ir\nfl=???\nfn=(below main)\n0 \
        10\nfn=nix::EvalState::callFunction(nix::Value&, unsigned long, nix::Value**, nix::Value&, nix::PosIdx)\n0 \
        70\nfl=other\nfn=(below main)\n0 20\nsummary: 100\n";

    #[test]
    fn a_file_reads_into_its_total_and_functions() {
        let c = parse(Path::new("x"), ONE).unwrap();
        assert_eq!(c.instructions, 100);
        assert_eq!(c.cmd, "/usr/bin/nix eval --json");
        assert_eq!(c.functions["(below main)"], 30, "one function in two files is summed");
        assert_eq!(c.functions.len(), 2);
    }

    /// The lab's `--apply` function has newlines: the command goes on until `events:`.
    #[test]
    fn a_command_with_newlines_reads_whole() {
        let text =
            ONE.replace("cmd: /usr/bin/nix eval --json", "cmd: nix eval --apply ps: let\n  names = 1;\nin names");
        let c = parse(Path::new("x"), &text).unwrap();
        assert_eq!(c.cmd, "nix eval --apply ps: let\n  names = 1;\nin names");
        assert_eq!(c.instructions, 100);
    }

    #[test]
    fn a_file_cut_short_or_wrong_is_an_error_with_its_line() {
        let cut = &ONE[..ONE.find("summary").unwrap()];
        let e = parse(Path::new("/b/cachegrind.0.out"), cut).unwrap_err().to_string();
        assert!(e.starts_with("/b/cachegrind.0.out:11: expected a summary: line at the end"), "{e}");
        let wrong = ONE.replace("summary: 100", "summary: 101");
        let e = parse(Path::new("f"), &wrong).unwrap_err().to_string();
        assert!(
            e.contains("f:12: expected a summary equal to the sum of the counts, found \"summary 101, counts 100\""),
            "{e}"
        );
        let e = parse(Path::new("f"), &ONE.replace("0 70", "0 7x")).unwrap_err().to_string();
        assert!(e.contains("f:8: expected counts that are whole numbers"), "{e}");
        let e = parse(Path::new("f"), &ONE.replace("events: Ir", "events: Dr")).unwrap_err().to_string();
        assert!(e.contains("f:3: expected an events line that counts Ir"), "{e}");
        let e = parse(Path::new("f"), "hello\n").unwrap_err().to_string();
        assert!(e.contains("f:1: expected a cachegrind line"), "{e}");
        let e = parse(Path::new("f"), &format!("{ONE}fn=late\n")).unwrap_err().to_string();
        assert!(e.contains("f:13: expected nothing after the summary line"), "{e}");
        let e = parse(Path::new("f"), "events: Ir\nfn=a\n0 18446744073709551615\n0 1\nsummary: 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("f:4: expected counts that add up within 64 bits"), "{e}");
    }

    #[test]
    fn a_pass_reads_its_processes_in_order_with_children_apart() {
        let d = tempfile::tempdir().unwrap();
        let eval = d.path().join(layout::EVAL_DIR);
        std::fs::create_dir_all(&eval).unwrap();
        for who in ["10", "2", "lock", "discover", "2.1"] {
            std::fs::write(eval.join(format!("cachegrind.{who}.out")), ONE).unwrap();
        }
        std::fs::write(
            eval.join("cachegrind.lock.child-77.out"),
            ONE.replace("0 70", "0 1070").replace("summary: 100", "summary: 1100"),
        )
        .unwrap();
        std::fs::write(eval.join("nix-stats.0.json"), "{}").unwrap();
        let p = read(d.path()).unwrap().unwrap();
        let order: Vec<&str> = p.processes.iter().map(|p| p.who.as_str()).collect();
        assert_eq!(order, ["lock", "discover", "2", "2.1", "10"]);
        assert_eq!(p.total(), 500, "children are not added");
        assert_eq!(p.processes[0].children.len(), 1);
        assert_eq!(p.by_phase()[&Phase::Evaluate], 300);
        std::fs::write(eval.join("cachegrind.x.child-1.out"), ONE).unwrap();
        let e = read(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("cachegrind.x.child-1.out:0: expected a child of a nix process whose own file is there"),
            "{e}"
        );
        std::fs::remove_file(eval.join("cachegrind.x.child-1.out")).unwrap();
        std::fs::write(eval.join("cachegrind.evil.out"), ONE).unwrap();
        assert!(read(d.path()).unwrap_err().to_string().contains("expected a file named for lock, discover"));
        assert_eq!(read(&d.path().join("none")).unwrap(), None);
    }
}
