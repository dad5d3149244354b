//! Opening a bundle: a directory as it is, a `.tar.gz` unpacked (safely) into
//! a temporary directory that lives as long as the [`Bundle`].

use std::path::{Path, PathBuf};

use crate::archive::{unpack, Limits};
use crate::error::{io, BundleError};
use crate::layout;

/// One pass's directory inside a bundle.
#[derive(Debug, Clone)]
pub struct PassDir {
    pub name: String,
    pub path: PathBuf,
}

impl PassDir {
    pub fn file(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }
    pub fn has(&self, rel: &str) -> bool {
        self.path.join(rel).exists()
    }
    pub fn is_clean(&self) -> bool {
        layout::is_clean(&self.name)
    }
}

#[derive(Debug)]
pub struct Bundle {
    /// Where the bundle was given (directory or archive).
    pub source: PathBuf,
    /// The directory holding the passes.
    pub root: PathBuf,
    pub passes: Vec<PassDir>,
    _unpacked: Option<tempfile::TempDir>,
}

fn is_archive(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    n.ends_with(".tar.gz") || n.ends_with(".tgz")
}

fn is_pass_dir(p: &Path) -> bool {
    p.is_dir() && (p.join(layout::RUN_JSON).is_file() || p.join(layout::TRACE_DIR).is_dir())
}

fn find_passes(root: &Path) -> Result<Vec<PassDir>, BundleError> {
    let mut passes = Vec::new();
    for e in std::fs::read_dir(root).map_err(io(root))? {
        let e = e.map_err(io(root))?;
        let p = e.path();
        // Never follow a link out of the bundle to find a pass.
        if e.file_type().map_err(io(&p))?.is_dir() && is_pass_dir(&p) {
            passes.push(PassDir { name: e.file_name().to_string_lossy().into_owned(), path: p });
        }
    }
    passes.sort_by_key(|p| layout::order_key(&p.name));
    Ok(passes)
}

impl Bundle {
    /// What the bundle measured: the provenance in its first pass's run.json
    /// that has one; all unknown for a bundle without (docs/ARCHITECTURE.md, "The bundle").
    pub fn provenance(&self) -> crate::Provenance {
        self.passes.iter().filter_map(|p| crate::RunInfo::read(&p.file(crate::layout::RUN_JSON)).ok()?.provenance).next().unwrap_or_default()
    }

    pub fn open(source: &Path, limits: Limits) -> Result<Bundle, BundleError> {
        let meta = std::fs::metadata(source).map_err(io(source))?;
        let (root, unpacked) = if meta.is_dir() {
            (source.to_path_buf(), None)
        } else if is_archive(source) {
            let tmp = tempfile::Builder::new().prefix("evalbench-bundle.").tempdir().map_err(io(source))?;
            unpack(source, tmp.path(), limits)?;
            (tmp.path().to_path_buf(), Some(tmp))
        } else {
            return Err(BundleError::NotABundle { path: source.into(), reason: "expected a directory or a .tar.gz archive".into() });
        };
        let mut passes = find_passes(&root)?;
        let mut root = root;
        if passes.is_empty() {
            // An archive of `out/` holds one directory with the passes inside.
            let subdirs: Vec<PathBuf> = std::fs::read_dir(&root)
                .map_err(io(&root))?
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect();
            if let [only] = subdirs.as_slice() {
                let inner = find_passes(only)?;
                if !inner.is_empty() {
                    root = only.clone();
                    passes = inner;
                }
            }
        }
        if passes.is_empty() {
            // A pass directory where its bundle was meant: say so, and where the bundle is.
            let is_pass = root.join(crate::layout::RUN_JSON).is_file() || root.join(crate::layout::TRACE_DIR).is_dir();
            let reason = if is_pass {
                let parent = source.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| ".".to_string(), |p| p.display().to_string());
                format!("this is one pass's directory (it holds run.json or trace/), not a bundle; its bundle is the directory above it ({parent})")
            } else {
                "no pass directory (a directory holding run.json or trace/) found".to_string()
            };
            return Err(BundleError::NotABundle { path: source.into(), reason });
        }
        Ok(Bundle { source: source.into(), root, passes, _unpacked: unpacked })
    }
}
