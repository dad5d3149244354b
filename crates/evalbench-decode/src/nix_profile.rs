//! `nix-profile.json`, the summary beside a pass's folded nix profile: one
//! type for the one format. The lab writes it from its evaluators' folds,
//! the report's view reads it back, and `decode nix-trace --json` prints
//! the same record for a trace it folded, so the three cannot drift apart.
//! Every time in it is in µs.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::DecodeError;
use crate::nix_trace::{Fold, Position};

/// One root frame of the fold (an attribute the lab's evaluator was on):
/// the self time of every stack under it, and their calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeCost {
    pub attr: String,
    pub self_us: u64,
    pub calls: u64,
}

/// The summary of one or more folds (one per evaluator).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NixProfile {
    /// Trace lines read, and calls entered.
    pub lines: u64,
    pub calls: u64,
    /// From each trace's first line to its last, summed over evaluators.
    pub traced_us: u64,
    pub evaluators: usize,
    /// Call sites a stack kept below its attribute; deeper calls were
    /// counted in a truncation frame under the deepest kept (None: stacks
    /// were not cut; absent in older files).
    #[serde(default)]
    pub max_depth: Option<usize>,
    /// Call sites by self time, largest first.
    pub by_position: Vec<Position>,
    /// Attributes by self time, largest first.
    pub by_attribute: Vec<AttributeCost>,
}

impl NixProfile {
    /// The folds' summaries added up: a call site or attribute in several
    /// evaluators counts once, with their sums.
    pub fn of(folds: &[&Fold]) -> NixProfile {
        let mut positions: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut attrs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut p = NixProfile {
            evaluators: folds.len(),
            max_depth: folds.iter().filter_map(|f| f.max_depth()).max(),
            ..NixProfile::default()
        };
        for f in folds {
            p.lines += f.lines;
            p.calls += f.entered;
            p.traced_us += f.traced_ns() / 1000;
            for s in f.positions() {
                let e = positions.entry(s.position).or_default();
                e.0 += s.calls;
                e.1 += s.self_us;
            }
            for a in f.by_root() {
                let e = attrs.entry(a.attr).or_default();
                e.0 += a.self_us;
                e.1 += a.calls;
            }
        }
        p.by_position =
            positions.into_iter().map(|(position, (calls, self_us))| Position { position, calls, self_us }).collect();
        p.by_position.sort_by(|a, b| {
            b.self_us.cmp(&a.self_us).then_with(|| b.calls.cmp(&a.calls)).then_with(|| a.position.cmp(&b.position))
        });
        p.by_attribute =
            attrs.into_iter().map(|(attr, (self_us, calls))| AttributeCost { attr, self_us, calls }).collect();
        p.by_attribute.sort_by(|a, b| b.self_us.cmp(&a.self_us).then_with(|| a.attr.cmp(&b.attr)));
        p
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a profile serializes")
    }

    /// Reads a `nix-profile.json`; a file that is not one is an error that
    /// names it and says where serde stopped.
    pub fn read(path: &Path) -> Result<NixProfile, DecodeError> {
        let text = std::fs::read_to_string(path).map_err(DecodeError::io(path))?;
        serde_json::from_str(&text).map_err(|e| {
            DecodeError::format(
                path.display().to_string(),
                format!("line {} column {}", e.line(), e.column()),
                format!("expected evalbench's nix-profile.json: {e}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(root: &str, lines: &[&str]) -> Fold {
        let mut f = Fold::new();
        f.set_root(root);
        for l in lines {
            f.line(l);
        }
        f
    }

    #[test]
    fn two_evaluators_add_up_and_read_back_as_written() {
        let a = fold("pkg1", &["function-trace entered a.nix:1:1 at 1000", "function-trace exited a.nix:1:1 at 4000"]);
        let b = fold(
            "pkg2",
            &[
                "function-trace entered a.nix:1:1 at 0",
                "function-trace entered b.nix:2:2 at 1000",
                "function-trace exited b.nix:2:2 at 3000",
                "function-trace exited a.nix:1:1 at 9000",
            ],
        );
        let p = NixProfile::of(&[&a, &b]);
        assert_eq!((p.lines, p.calls, p.traced_us, p.evaluators, p.max_depth), (6, 3, 12, 2, None));
        assert_eq!(NixProfile::of(&[&Fold::with_max_depth(32)]).max_depth, Some(32), "the cut is said, not assumed");
        // a.nix: 3 µs in one evaluator and 7 in the other, two calls in all.
        assert_eq!(p.by_position[0], Position { position: "a.nix:1:1".into(), calls: 2, self_us: 10 });
        // Attributes in µs (the fold keeps ns), largest first.
        assert_eq!(
            p.by_attribute,
            vec![
                AttributeCost { attr: "pkg2".into(), self_us: 9, calls: 2 },
                AttributeCost { attr: "pkg1".into(), self_us: 3, calls: 1 }
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nix-profile.json");
        std::fs::write(&path, p.to_json()).unwrap();
        assert_eq!(NixProfile::read(&path).unwrap(), p);
        std::fs::write(&path, "{\"lines\": 1, \"calls\": \"x\"}").unwrap();
        let e = NixProfile::read(&path).unwrap_err().to_string();
        assert!(e.contains("nix-profile.json") && e.contains("line 1"), "{e}");
    }
}
