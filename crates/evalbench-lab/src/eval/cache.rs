//! The lab's eval cache: what a warm pass is answered from.
//!
//! nix 2.8's own eval cache answers only installables (`FLAKE#attr`, one
//! cursor walk each), and the lab now evaluates a shard as one `nix eval
//! --apply` over `packages.<system>`, which nix evaluates without its cache.
//! So the lab keeps its own: one file per locked source, keyed on the
//! source's narHash, holding the attribute list and each attribute's
//! drvPath, written whole after an evaluation succeeded.
//!
//! Against Gradient's: Gradient keeps nix's eval cache (one SQLite file per
//! flake fingerprint, shared across its workers) and walks it with a cursor,
//! so it also answers the attribute sets between the root and a derivation.
//! Ours answers the two things the lab asks, the attribute names and each
//! drvPath, under the same kind of key (the locked content, never the
//! checkout's path). Like nix's, a cached drvPath whose `.drv` is no longer
//! in the store is not a hit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One locked source's evaluation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Entry {
    pub nar_hash: String,
    /// `packages.<system>`'s attribute names, in nix's order.
    pub attrs: Vec<String>,
    /// attribute name -> drvPath
    pub drvs: BTreeMap<String, String>,
}

impl Entry {
    /// The cached drvPath of `attr`, if its `.drv` is still in the store.
    pub fn hit(&self, attr: &str) -> Option<&str> {
        self.drvs.get(attr).map(String::as_str).filter(|d| Path::new(d).is_file())
    }
}

/// The cache's directory under a cache home (emptied by the lab's cold reset
/// with the rest of the worker's cache home).
pub(super) fn dir(home: &Path) -> PathBuf {
    home.join("evalbench").join("eval-cache-v1")
}

/// A file name from a narHash (`sha256-<base64>`, `?dir=D` for a flake below
/// its repository's root): base64's `/` and `+` as in base64url, anything
/// else outside [A-Za-z0-9=-] as `%XX`, so two keys never share a file.
fn file(home: &Path, nar_hash: &str) -> PathBuf {
    let name: String = nar_hash
        .bytes()
        .map(|b| match b {
            b'/' => "_".to_string(),
            b'+' => "-".to_string(),
            b if b.is_ascii_alphanumeric() || b == b'=' || b == b'-' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect();
    dir(home).join(format!("{name}.json"))
}

/// How many sources the cache holds: evidence of a warm evaluation.
pub(super) fn entries(home: &Path) -> usize {
    std::fs::read_dir(dir(home))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .count()
}

/// The entry of a source; None when there is none or it does not read (a
/// cache that does not read is a miss, never an error).
pub(super) fn load(home: &Path, nar_hash: &str) -> Option<Entry> {
    let text = std::fs::read(file(home, nar_hash)).ok()?;
    serde_json::from_slice::<Entry>(&text).ok().filter(|e| e.nar_hash == nar_hash)
}

/// Writes an entry whole (`evalbench_bundle::write_atomic`).
pub(super) fn store(home: &Path, e: &Entry) -> Result<(), evalbench_bundle::BundleError> {
    evalbench_bundle::write_atomic(&file(home, &e.nar_hash), &serde_json::to_vec(e).expect("serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_round_trips_and_a_missing_drv_is_no_hit() {
        let home = tempfile::tempdir().unwrap();
        let drv = home.path().join("x.drv");
        std::fs::write(&drv, "Derive()").unwrap();
        let e = Entry {
            nar_hash: "sha256-ab/c+d=".into(),
            attrs: vec!["a".into(), "b".into()],
            drvs: [
                ("a".to_string(), drv.to_string_lossy().into_owned()),
                ("b".to_string(), "/nonexistent/y.drv".to_string()),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(entries(home.path()), 0);
        store(home.path(), &e).unwrap();
        assert_eq!(entries(home.path()), 1);
        let back = load(home.path(), "sha256-ab/c+d=").unwrap();
        assert_eq!(back, e);
        assert!(back.hit("a").is_some());
        assert!(back.hit("b").is_none(), "a drvPath gone from the store is a miss");
        assert!(load(home.path(), "sha256-other").is_none());
        std::fs::write(file(home.path(), "sha256-ab/c+d="), "{not json").unwrap();
        assert!(load(home.path(), "sha256-ab/c+d=").is_none(), "a cache that does not read is a miss");
    }
}
