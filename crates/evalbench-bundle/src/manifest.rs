//! Whose a file is, decided by a record rather than a guess: every
//! directory evalbench writes into holds `evalbench-manifest.json`, listing
//! what evalbench made there (its entries, and for outputs made from an
//! archive, which archive). evalbench replaces only what a manifest lists;
//! a directory without one is judged by `ownership`'s sniffing of the few
//! files evalbench has always written (bundles made before manifests).
//!
//! An entry is claimed before anything is written under it, so a run that
//! stops half-way leaves what it began listed, and a rerun may replace it.
//! An entry is a path relative to the directory (`summary.txt`,
//! `cold-clean/trace.json`), owning everything below it (`cold-clean`
//! owns the whole run directory), or a pattern with one `*` in its first
//! component (`cold-clean-*.svg`, the report's charts).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{io, BundleError};

/// The manifest's name, at the top of the directory it speaks for.
pub const MANIFEST: &str = "evalbench-manifest.json";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// `evalbench <version>`.
    pub written_by: String,
    /// What evalbench made here.
    pub entries: BTreeSet<String>,
    /// The archive these outputs were made from (`summarize X.tar.gz` into
    /// `X/`), as an absolute path; None for outputs made from a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_archive: Option<PathBuf>,
}

/// What stands where evalbench would write, and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Nothing,
    Evalbench,
    /// Someone else's: the first such path.
    Other(PathBuf),
}

fn matches(entry: &str, rel: &str) -> bool {
    match entry.split_once('*') {
        Some((pre, post)) => {
            let first = rel.split('/').next().unwrap_or(rel);
            first.len() >= pre.len() + post.len() && first.starts_with(pre) && first.ends_with(post)
        }
        None => rel == entry || rel.strip_prefix(entry).is_some_and(|rest| rest.starts_with('/')),
    }
}

impl Manifest {
    /// The manifest of `dir`; None where it has none.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, BundleError> {
        let path = dir.join(MANIFEST);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                serde_json::from_str(&text).map(Some).map_err(crate::error::parse(&path, "evalbench's manifest"))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(BundleError::Io { path, source: e }),
        }
    }

    /// Whether `rel` (a path relative to the manifest's directory) is evalbench's.
    pub fn owns(&self, rel: &str) -> bool {
        rel == MANIFEST || self.entries.iter().any(|e| matches(e, rel))
    }
}

/// The paths under `dir` that `entry` names and that exist.
fn existing(dir: &Path, entry: &str) -> Vec<PathBuf> {
    match entry.split_once('*') {
        Some(_) => std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| matches(entry, &e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect(),
        None => {
            let p = dir.join(entry);
            if std::fs::symlink_metadata(&p).is_ok() {
                vec![p]
            } else {
                Vec::new()
            }
        }
    }
}

/// Whether the directory holds output evalbench wrote before manifests
/// were kept: one of the files it has always written, sniffed as its own.
fn sniffed_ours(dir: &Path) -> bool {
    [crate::layout::SUMMARY_TXT, "index.html"]
        .iter()
        .any(|n| dir.join(n).is_file() && !crate::ownership::foreign(&dir.join(n)))
}

/// Whose are the things at `entries` under `dir`: by its manifest where it
/// has one; else each file by what it looks like (`ownership::foreign`),
/// and anything evalbench has no way to recognise is someone else's unless
/// the directory holds evalbench's own older output beside it.
pub fn owner(dir: &Path, entries: &[String], from_archive: Option<&Path>) -> Result<Owner, BundleError> {
    let manifest = Manifest::read(dir)?;
    if let (Some(m), Some(_)) = (&manifest, from_archive) {
        if m.from_archive.as_deref() != from_archive {
            let why = match &m.from_archive {
                Some(other) => format!("made from another archive, {}", other.display()),
                None => "not made from this archive".into(),
            };
            return Err(BundleError::NotOurs { path: dir.to_path_buf(), why });
        }
    }
    if manifest.is_none() && from_archive.is_some() && std::fs::read_dir(dir).is_ok_and(|mut r| r.next().is_some()) {
        return Err(BundleError::NotOurs {
            path: dir.to_path_buf(),
            why: "exists and was not made from this archive by evalbench (it has no manifest)".into(),
        });
    }
    let mut found = false;
    for e in entries {
        for p in existing(dir, e) {
            found = true;
            let rel = p.strip_prefix(dir).unwrap_or(&p).to_string_lossy().into_owned();
            let ours = match &manifest {
                Some(m) => m.owns(&rel),
                None if from_archive.is_some() => false,
                None => match crate::ownership::sniffable(&p) {
                    true => !crate::ownership::foreign(&p),
                    false => sniffed_ours(dir),
                },
            };
            if !ours {
                return Ok(Owner::Other(p));
            }
        }
    }
    Ok(if found { Owner::Evalbench } else { Owner::Nothing })
}

/// Claims `entries` in `dir` before anything is written there: refused
/// (naming the path) where something of someone else's stands, else listed
/// in the manifest. `from_archive`: the archive the outputs are made from,
/// where the directory is that archive's own (`summarize X.tar.gz` into X/).
pub fn claim(dir: &Path, entries: &[String], from_archive: Option<&Path>) -> Result<(), BundleError> {
    refuse_link(dir)?;
    if let Owner::Other(p) = owner(dir, entries, from_archive)? {
        return Err(BundleError::NotOurs {
            path: p,
            why: "not written by evalbench (no manifest of evalbench's lists it)".into(),
        });
    }
    record(dir, entries, from_archive)
}

/// Lists `entries` in `dir`'s manifest, unchecked: for a caller that has
/// already seen that everything there is evalbench's (`run`'s output
/// directory, with its lock held).
pub fn record(dir: &Path, entries: &[String], from_archive: Option<&Path>) -> Result<(), BundleError> {
    let mut m = Manifest::read(dir)?.unwrap_or_default();
    m.written_by = format!("evalbench {}", env!("CARGO_PKG_VERSION"));
    m.entries.extend(entries.iter().cloned());
    if from_archive.is_some() {
        m.from_archive = from_archive.map(Path::to_path_buf);
    }
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let text = serde_json::to_string_pretty(&m).expect("a manifest serializes");
    crate::write_atomic(&dir.join(MANIFEST), format!("{text}\n").as_bytes())
}

/// The entries of `dir` (its top level) that its manifest does not list:
/// someone else's. A directory without a manifest: all of them, but for
/// an empty directory.
pub fn foreign_entries(dir: &Path) -> Result<Vec<PathBuf>, BundleError> {
    let manifest = Manifest::read(dir)?;
    let mut out: Vec<PathBuf> = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(out) };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !manifest.as_ref().is_some_and(|m| m.owns(&name)) {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// A symbolic link where evalbench would write is refused, never written
/// through or replaced: it points at someone else's file or directory.
pub fn refuse_link(path: &Path) -> Result<(), BundleError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(BundleError::NotOurs {
            path: path.to_path_buf(),
            why: "a symbolic link: evalbench writes through none (give a real directory)".into(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_own_what_lies_below_them_and_patterns_their_names() {
        assert!(matches("cold-clean", "cold-clean"));
        assert!(matches("cold-clean", "cold-clean/trace.json"));
        assert!(!matches("cold-clean", "cold-clean.2/trace.json"));
        assert!(matches("cold-clean-*.svg", "cold-clean-span-flame.svg"));
        assert!(!matches("cold-clean-*.svg", "cold-clean.2-span-flame.svg"));
        assert!(!matches("cold-clean-*.svg", "cold-clean-x.png"));
    }

    #[test]
    fn a_claim_is_refused_where_another_wrote_and_listed_where_none_did() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("out");
        claim(&dir, &["summary.txt".into()], None).unwrap();
        std::fs::write(dir.join("summary.txt"), "evalbench summary of x\n").unwrap();
        claim(&dir, &["summary.txt".into(), "cold-clean/trace.json".into()], None).unwrap();
        let m = Manifest::read(&dir).unwrap().unwrap();
        assert!(m.owns("cold-clean/trace.json") && m.owns("summary.txt") && !m.owns("notes.txt"));
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        assert!(matches!(claim(&dir, &["notes.txt".into()], None), Err(BundleError::NotOurs { .. })));
        assert_eq!(foreign_entries(&dir).unwrap(), vec![dir.join("notes.txt")]);
        // An archive's output directory is that archive's alone.
        let x = d.path().join("x");
        claim(&x, &["summary.txt".into()], Some(Path::new("/a/x.tar.gz"))).unwrap();
        claim(&x, &["summary.txt".into()], Some(Path::new("/a/x.tar.gz"))).unwrap();
        assert!(claim(&x, &["summary.txt".into()], Some(Path::new("/b/x.tar.gz"))).is_err());
        assert!(
            claim(&dir, &["summary.txt".into()], Some(Path::new("/a/out.tar.gz"))).is_err(),
            "a directory's output is no archive's"
        );
    }
}
