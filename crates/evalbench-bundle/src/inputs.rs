//! A flake's inputs by store path, so a position says which input it is in:
//! `alpha:lib/default.nix:1:3`, `self:flake.nix:10:34`. Two inputs that both
//! have a `lib/default.nix` read apart; without this, only the path inside
//! the input is left (`nix_stats::store_relative`).
//!
//! The lab asks nix (`nix flake archive --json`) in instrumented passes and
//! keeps the answer as `eval/nix-inputs.json` (name to store path); nix's
//! profile and its call counts are named from it.
//!
//! Nix 2.34's function trace shows a position in an input not by its store
//! path but by the input's locked reference,
//! `«path:/src/b?lastModified=…&narHash=sha256-…»/lib/default.nix:1:42`.
//! Such a position is named by its `narHash`, which `nix flake metadata
//! --json` gives for each input ([`Inputs::with_locks`]); the file keeps
//! them as entries `"narHash:sha256-…": name` beside the store paths (an
//! input's name has no colon).

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
    /// Each input's locked narHash (SRI, `sha256-…`), to its name.
    by_hash: BTreeMap<String, String>,
}

/// How a narHash is kept among the names in nix-inputs.json.
const HASH_KEY: &str = "narHash:";

impl From<BTreeMap<String, String>> for Inputs {
    fn from(mut paths: BTreeMap<String, String>) -> Inputs {
        let hashes: Vec<String> = paths.keys().filter(|k| k.starts_with(HASH_KEY)).cloned().collect();
        let mut by_hash = BTreeMap::new();
        for k in hashes {
            let name = paths.remove(&k).expect("listed");
            by_hash.insert(k[HASH_KEY.len()..].to_string(), name);
        }
        let mut by_dir = HashMap::new();
        for (name, path) in &paths {
            if let Some(dir) = path.strip_prefix("/nix/store/") {
                // One store path under two names (a `follows`): the first name.
                by_dir.entry(dir.trim_end_matches('/').to_string()).or_insert_with(|| name.clone());
            }
        }
        Inputs { paths, by_dir, by_hash }
    }
}

impl From<Inputs> for BTreeMap<String, String> {
    fn from(i: Inputs) -> BTreeMap<String, String> {
        let mut m = i.paths;
        m.extend(i.by_hash.into_iter().map(|(h, name)| (format!("{HASH_KEY}{h}"), name)));
        m
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
        let mut paths = BTreeMap::new();
        if let Some(p) = v["path"].as_str() {
            paths.insert("self".to_string(), p.to_string());
        }
        for (name, p) in keyed(found) {
            paths.entry(name).or_insert(p);
        }
        Inputs::from(paths)
    }

    /// With each input's locked narHash from `nix flake metadata --json`
    /// (the flake's own as `self`), named as [`Inputs::from_archive`] names
    /// them: the lock file's graph walked from its root, by input names.
    pub fn with_locks(mut self, metadata: &serde_json::Value) -> Inputs {
        let nodes = &metadata["locks"]["nodes"];
        fn walk(nodes: &serde_json::Value, key: &str, at: &str, out: &mut Vec<(String, String)>, depth: usize) {
            // A lock file is a graph; `follows` are paths (arrays), not
            // nodes, and are skipped: the input they follow is named already.
            for (name, target) in nodes[key]["inputs"].as_object().into_iter().flatten() {
                let Some(t) = target.as_str() else { continue };
                let here = if at.is_empty() { name.clone() } else { format!("{at}/{name}") };
                if let Some(h) = nodes[t]["locked"]["narHash"].as_str() {
                    out.push((here.clone(), h.to_string()));
                }
                if depth < 64 {
                    walk(nodes, t, &here, out, depth + 1);
                }
            }
        }
        let mut found = Vec::new();
        walk(nodes, metadata["locks"]["root"].as_str().unwrap_or("root"), "", &mut found, 0);
        if let Some(h) = metadata["locked"]["narHash"].as_str() {
            self.by_hash.entry(h.to_string()).or_insert_with(|| "self".to_string());
        }
        for (name, h) in keyed(found) {
            self.by_hash.entry(h).or_insert(name);
        }
        self
    }

    /// A pass's `eval/nix-inputs.json`; None when there is none or it does not read.
    pub fn read(pass_dir: &Path) -> Option<Inputs> {
        let text = std::fs::read(pass_dir.join(layout::NIX_INPUTS_JSON)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.by_hash.is_empty()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("inputs serialize")
    }

    /// A position or file with its store directory replaced by the input's
    /// name (`alpha:lib/default.nix:1:3`); one in no known input keeps only
    /// its path inside the store path, as before.
    pub fn name(&self, pos: &str) -> String {
        if let Some((name, tail)) = self.locked_ref(pos) {
            return format!("{name}:{tail}");
        }
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

impl Inputs {
    /// A position shown by its input's locked reference (Nix 2.34): the
    /// input's name by the reference's narHash, and the path inside it.
    fn locked_ref<'a>(&self, pos: &'a str) -> Option<(&str, &'a str)> {
        let (reference, tail) = pos.strip_prefix('«')?.split_once("»/")?;
        let hash = reference.split(['?', '&']).find_map(|kv| kv.strip_prefix("narHash="))?;
        let name = self.by_hash.get(&percent_decoded(hash))?;
        Some((name, tail))
    }
}

/// A URL query value with its %XX escapes decoded (narHash's `+`, `=`, `/`).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).and_then(|&c| hex(c)), b.get(i + 2).and_then(|&c| hex(c))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Inputs found by their path of names (`parts/alpha`), each keyed by its
/// own name where no other input has it, else by the path.
fn keyed<T>(found: Vec<(String, T)>) -> Vec<(String, T)> {
    let leaf = |name: &str| name.rsplit('/').next().unwrap_or(name).to_string();
    let mut leaves: HashMap<String, usize> = HashMap::new();
    for (name, _) in &found {
        *leaves.entry(leaf(name)).or_default() += 1;
    }
    found
        .into_iter()
        .map(|(name, x)| {
            let l = leaf(&name);
            (if leaves[&l] == 1 && l != "self" { l } else { name }, x)
        })
        .collect()
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
        assert_eq!(
            i.name("/nix/store/04drdjiv2v7rp7b5mfbq0ivsxf4z8hka-source/lib/default.nix:1:3"),
            "alpha:lib/default.nix:1:3"
        );
        assert_eq!(
            i.name("/nix/store/clvygz23dxy87m15ln35sw1hn6x3na7s-source/flake.nix:10:34"),
            "self:flake.nix:10:34"
        );
        assert_eq!(
            i.name("/nix/store/0000000000000000000000000000000a-source/lib/modules.nix:9:1"),
            "nixpkgs-lib:lib/modules.nix:9:1"
        );
        // Two inputs named alpha: the nested one by its path of names.
        assert_eq!(i.name("/nix/store/0000000000000000000000000000000b-source/x.nix:1:1"), "parts/alpha:x.nix:1:1");
        // Unknown store paths and the rest read as before.
        assert_eq!(i.name("/nix/store/0123456789abcdfghijklmnpqrsvwxyz-source/lib/fix.nix:3:1"), "lib/fix.nix:3:1");
        assert_eq!(i.name("undefined position"), "undefined position");
        let back: Inputs = serde_json::from_str(&i.to_json()).unwrap();
        assert_eq!(back, i);
    }

    /// Nix 2.34's positions by locked reference name their input by its
    /// narHash, as `nix flake metadata --json` locks it; kept in the file.
    #[test]
    fn locked_references_name_their_input_by_narhash() {
        let metadata = serde_json::json!({
            "locked": {"narHash": "sha256-PBa9kqHmPadOll8X3rKF2WpP3M3TVVFsZJG+EAvhvQU=", "type": "path"},
            "locks": {"root": "root", "nodes": {
                "root": {"inputs": {"alpha": "alpha", "parts": "parts"}},
                "alpha": {"locked": {"narHash": "sha256-8fHVJvO6bPxC13D0khRt8/PeGgTtovwn2dxhg9oywoA="}},
                "parts": {"locked": {"narHash": "sha256-AAAA"}, "inputs": {"alpha": "alpha_2", "nixpkgs": ["alpha"]}},
                "alpha_2": {"locked": {"narHash": "sha256-BBBB"}}
            }}
        });
        let i = Inputs::from_archive(&serde_json::json!({"path": "/nix/store/x", "inputs": {}})).with_locks(&metadata);
        let at = |h: &str, tail: &str| format!("«path:/src/b?lastModified=1796414207&narHash={h}»/{tail}");
        assert_eq!(
            i.name(&at("sha256-8fHVJvO6bPxC13D0khRt8%2FPeGgTtovwn2dxhg9oywoA%3D", "lib/default.nix:1:42")),
            "alpha:lib/default.nix:1:42"
        );
        assert_eq!(
            i.name(&at("sha256-PBa9kqHmPadOll8X3rKF2WpP3M3TVVFsZJG%2BEAvhvQU%3D", "flake.nix:5:1")),
            "self:flake.nix:5:1"
        );
        assert_eq!(i.name(&at("sha256-BBBB", "x.nix:1:1")), "parts/alpha:x.nix:1:1");
        assert_eq!(i.name(&at("sha256-AAAA", "x.nix:1:1")), "parts:x.nix:1:1");
        // An unknown hash, or no reference: as it was.
        assert_eq!(i.name(&at("sha256-CCCC", "x.nix:1:1")), at("sha256-CCCC", "x.nix:1:1"));
        assert_eq!(i.name("«string»:8:18"), "«string»:8:18");
        let back: Inputs = serde_json::from_str(&i.to_json()).unwrap();
        assert_eq!(back, i);
        assert!(i.to_json().contains("\"narHash:sha256-AAAA\": \"parts\""), "{}", i.to_json());
    }
}
