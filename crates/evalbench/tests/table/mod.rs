//! docs/faults.md read as a table of rows: the one table the test runs.
//! A row is `| `fault` | `command` | exit | named | what evalbench does |`;
//! its fault and command, in backticks, are ids this test knows, and every
//! id it knows is in the table (a fault added on one side only fails).

use std::path::{Path, PathBuf};

pub mod labs;
pub mod scenes;

/// Whether the command's output must name the faulty file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    Yes,
    /// The command does not read that file (the row's words say why).
    NotRead,
    /// The fault is no file's (a flag, a stage of a run).
    Na,
}

#[derive(Debug, Clone)]
pub struct Row {
    pub fault: String,
    pub command: String,
    pub exit: i32,
    pub named: Named,
    /// The line of docs/faults.md, for the failure's message.
    pub line: usize,
}

impl Row {
    /// Where the row stands in docs/faults.md, as every failure names it.
    pub fn at(&self) -> String {
        format!("docs/faults.md:{} `{}` `{}`", self.line, self.fault, self.command)
    }

    /// The row's verdict: what was wrong, then the first `keep` characters
    /// of what the command said (and `observed`, where the caller has it).
    pub fn verdict(&self, wrong: &[String], observed: Option<&str>, said: &str, keep: usize) -> Result<(), String> {
        if wrong.is_empty() {
            return Ok(());
        }
        let observed = observed.map(|o| format!("\n{o}")).unwrap_or_default();
        Err(format!("{}: {}{observed}\n{}", self.at(), wrong.join("; "), said.chars().take(keep).collect::<String>()))
    }
}

pub fn doc() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/faults.md")
}

fn code(cell: &str) -> Option<String> {
    let c = cell.trim();
    c.strip_prefix('`').and_then(|c| c.strip_suffix('`')).map(String::from)
}

/// Every row of every table in docs/faults.md.
pub fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(doc()).expect("docs/faults.md");
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let cells: Vec<&str> = l.split('|').collect();
        if cells.len() < 7 || !l.starts_with("| `") {
            continue;
        }
        let (Some(fault), Some(command)) = (code(cells[1]), code(cells[2])) else { continue };
        let exit = cells[3]
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("docs/faults.md:{}: exit {:?} is no number", i + 1, cells[3]));
        let named = match cells[4].trim() {
            "yes" => Named::Yes,
            "no" | "not read" => Named::NotRead,
            "—" | "-" => Named::Na,
            other => panic!("docs/faults.md:{}: named {other:?}: yes, no or —", i + 1),
        };
        out.push(Row { fault, command, exit, named, line: i + 1 });
    }
    out
}

/// A directory's files and their bytes' digest, for "byte-identical before and after".
pub fn digests(dir: &Path) -> Vec<(PathBuf, u64)> {
    use std::hash::{BuildHasher, Hasher};
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap_or_default();
                let mut h = evalbench_bundle::Fnv.build_hasher();
                h.write(&bytes);
                out.push((p, h.finish()));
            }
        }
    }
    out.sort();
    out
}
