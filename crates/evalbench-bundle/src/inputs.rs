//! A flake's inputs by store path, so a position says which input it is in:
//! `alpha:lib/default.nix:1:3`, `self:flake.nix:10:34`. Two inputs that both
//! have a `lib/default.nix` read apart; without this, only the path inside
//! the input is left (`nix_stats::store_relative`).
//!
//! The lab asks nix (`nix flake archive --json`) in instrumented passes and
//! keeps the answer as `eval/nix-inputs.json` (name to store path); nix's
//! profile and its call counts are named from it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::layout;

/// Inputs by name (`self` for the flake itself; a nested input by its own
/// name, or by its path of names where two share one: `a/nixpkgs`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "BTreeMap<String, String>", into = "BTreeMap<String, String>")]
pub struct Inputs {
    paths: BTreeMap<String, String>,
    /// The store directory (`<hash>-<name>`) of each path, to its input's name.
    by_dir: HashMap<String, String>,
}

impl From<BTreeMap<String, String>> for Inputs {
    fn from(paths: BTreeMap<String, String>) -> Inputs {
        let mut by_dir = HashMap::new();
        for (name, path) in &paths {
            if let Some(dir) = path.strip_prefix("/nix/store/") {
                // One store path under two names (a `follows`): the first name.
                by_dir.entry(dir.trim_end_matches('/').to_string()).or_insert_with(|| name.clone());
            }
        }
        Inputs { paths, by_dir }
    }
}

impl From<Inputs> for BTreeMap<String, String> {
    fn from(i: Inputs) -> BTreeMap<String, String> {
        i.paths
    }
}

impl Inputs {
    /// From `nix flake archive --json`: `{"path": …, "inputs": {name: {"path": …, "inputs": …}}}`.
    pub fn from_archive(v: &serde_json::Value) -> Inputs {
        fn walk(v: &serde_json::Value, at: &str, out: &mut Vec<(String, String)>) {
            for (name, i) in v["inputs"].as_object().into_iter().flatten() {
                let here = if at.is_empty() { name.clone() } else { format!("{at}/{name}") };
                if let Some(p) = i["path"].as_str() {
                    out.push((here.clone(), p.to_string()));
                }
                walk(i, &here, out);
            }
        }
        let mut found = Vec::new();
        walk(v, "", &mut found);
        let mut leaves: HashMap<String, usize> = HashMap::new();
        for (name, _) in &found {
            *leaves.entry(name.rsplit('/').next().unwrap_or(name).to_string()).or_default() += 1;
        }
        let mut paths = BTreeMap::new();
        if let Some(p) = v["path"].as_str() {
            paths.insert("self".to_string(), p.to_string());
        }
        for (name, p) in found {
            let leaf = name.rsplit('/').next().unwrap_or(&name).to_string();
            let key = if leaves[&leaf] == 1 && leaf != "self" { leaf } else { name };
            paths.entry(key).or_insert(p);
        }
        Inputs::from(paths)
    }

    /// A pass's `eval/nix-inputs.json`; None when there is none or it does not read.
    pub fn read(pass_dir: &Path) -> Option<Inputs> {
        let text = std::fs::read(pass_dir.join(layout::NIX_INPUTS_JSON)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("inputs serialize")
    }

    /// A position or file with its store directory replaced by the input's
    /// name (`alpha:lib/default.nix:1:3`); one in no known input keeps only
    /// its path inside the store path, as before.
    pub fn name(&self, pos: &str) -> String {
        if let Some(rest) = pos.strip_prefix("/nix/store/") {
            if let Some((dir, tail)) = rest.split_once('/') {
                if let Some(name) = self.by_dir.get(dir) {
                    return format!("{name}:{tail}");
                }
            }
        }
        crate::nix_stats::store_relative(pos).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_name_their_input() {
        let archive = serde_json::json!({
            "path": "/nix/store/clvygz23dxy87m15ln35sw1hn6x3na7s-source",
            "inputs": {
                "alpha": {"path": "/nix/store/04drdjiv2v7rp7b5mfbq0ivsxf4z8hka-source", "inputs": {}},
                "parts": {"path": "/nix/store/9xw85nc4gw1jc1vw7226h6a9hgkh6c9m-source", "inputs": {
                    "nixpkgs-lib": {"path": "/nix/store/0000000000000000000000000000000a-source", "inputs": {}},
                    "alpha": {"path": "/nix/store/0000000000000000000000000000000b-source", "inputs": {}}
                }}
            }
        });
        let i = Inputs::from_archive(&archive);
        assert_eq!(i.name("/nix/store/04drdjiv2v7rp7b5mfbq0ivsxf4z8hka-source/lib/default.nix:1:3"), "alpha:lib/default.nix:1:3");
        assert_eq!(i.name("/nix/store/clvygz23dxy87m15ln35sw1hn6x3na7s-source/flake.nix:10:34"), "self:flake.nix:10:34");
        assert_eq!(i.name("/nix/store/0000000000000000000000000000000a-source/lib/modules.nix:9:1"), "nixpkgs-lib:lib/modules.nix:9:1");
        // Two inputs named alpha: the nested one by its path of names.
        assert_eq!(i.name("/nix/store/0000000000000000000000000000000b-source/x.nix:1:1"), "parts/alpha:x.nix:1:1");
        // Unknown store paths and the rest read as before.
        assert_eq!(i.name("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/lib/fix.nix:3:1"), "lib/fix.nix:3:1");
        assert_eq!(i.name("undefined position"), "undefined position");
        let back: Inputs = serde_json::from_str(&i.to_json()).unwrap();
        assert_eq!(back, i);
    }
}
