//! Opening a bundle: a directory as it is, a `.tar.gz` unpacked (safely) into
//! a temporary directory that lives as long as the [`Bundle`].

use std::path::{Path, PathBuf};

use crate::archive::{unpack, Limits};
use crate::error::{io, BundleError};
use crate::layout;
use crate::outcome::Outcome;

/// One run's directory inside a bundle (a pass's runs are `cold-clean`,
/// `cold-clean.2`, ...), and how the run ended.
#[derive(Debug, Clone)]
pub struct PassDir {
    pub name: String,
    pub path: PathBuf,
    pub outcome: Outcome,
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
    /// The runs a figure may use: those that completed, and those whose
    /// evaluated seconds alone are unknown ([`Outcome::NoEvaluated`]).
    pub passes: Vec<PassDir>,
    /// The runs that did not complete (failed, timed out, interrupted,
    /// crashed): kept for what they show, in no figure (docs/faults.md).
    pub incomplete: Vec<PassDir>,
    /// The warm-up runs (`warmup/`), in no figure either: read for how
    /// they ended, which is how a run that stopped in its warm-up is told.
    pub warmups: Vec<PassDir>,
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
            let outcome = Outcome::of_dir(&p);
            passes.push(PassDir { name: e.file_name().to_string_lossy().into_owned(), path: p, outcome });
        }
    }
    passes.sort_by_key(|p| layout::order_key(&p.name));
    Ok(passes)
}

impl Bundle {
    /// What the bundle measured: the provenance in its first pass's run.json
    /// that has one; all unknown for a bundle without (docs/decisions.md, "The bundle").
    pub fn provenance(&self) -> crate::Provenance {
        self.every_run()
            .filter_map(|p| crate::RunInfo::read(&p.file(crate::layout::RUN_JSON)).ok()?.provenance)
            .next()
            .unwrap_or_default()
    }

    /// Every run directory: the passes' runs (complete or not), then the warm-ups.
    pub fn every_run(&self) -> impl Iterator<Item = &PassDir> {
        self.passes.iter().chain(&self.incomplete).chain(&self.warmups)
    }

    /// How many runs of `pass` (a pass's base name) the run planned, from
    /// its recorded plan; None where the bundle has none (Gradient's).
    pub fn planned_runs(&self, plan: &crate::provenance::Plan, pass: &str) -> Option<usize> {
        if !plan.passes.iter().any(|p| p == pass) {
            return None;
        }
        match layout::PassKind::of(pass) {
            layout::PassKind::Clean => plan.repeat_clean,
            layout::PassKind::Instrumented => plan.repeat_instrumented,
            layout::PassKind::Counted => plan.repeat_counted,
        }
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
            return Err(BundleError::NotABundle {
                path: source.into(),
                reason: "expected a directory or a .tar.gz archive".into(),
            });
        };
        let mut passes = find_passes(&root)?;
        let mut root = root;
        let warmup = |root: &Path| -> Result<Vec<PassDir>, BundleError> {
            let dir = root.join(layout::WARMUP_DIR);
            let is_dir = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
            if is_dir {
                find_passes(&dir)
            } else {
                Ok(Vec::new())
            }
        };
        let mut warmups = warmup(&root)?;
        if passes.is_empty() && warmups.is_empty() {
            // An archive of `out/` holds one directory with the passes inside.
            // Never `warmup/`: a warm-up never stands for the pass it warmed.
            let subdirs: Vec<PathBuf> = std::fs::read_dir(&root)
                .map_err(io(&root))?
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != layout::WARMUP_DIR)
                .map(|e| e.path())
                .collect();
            if let [only] = subdirs.as_slice() {
                let inner = find_passes(only)?;
                let inner_warmups = warmup(only)?;
                if !inner.is_empty() || !inner_warmups.is_empty() {
                    root = only.clone();
                    passes = inner;
                    warmups = inner_warmups;
                }
            }
        }
        let (passes, incomplete): (Vec<PassDir>, Vec<PassDir>) = passes.into_iter().partition(|p| p.outcome.counts());
        if !incomplete.is_empty() || !warmups.is_empty() {
            return Ok(Bundle { source: source.into(), root, passes, incomplete, warmups, _unpacked: unpacked });
        }
        if passes.is_empty() {
            // A pass directory where its bundle was meant: say so, and where the bundle is.
            let is_pass = root.join(crate::layout::RUN_JSON).is_file() || root.join(crate::layout::TRACE_DIR).is_dir();
            let reason = if is_pass {
                let parent = source
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| ".".to_string(), |p| p.display().to_string());
                format!(
                    "this is one pass's directory (it holds run.json or trace/), not a bundle; its bundle is the \
                        directory above it ({parent})"
                )
            } else {
                "no pass directory (a directory holding run.json or trace/) found".to_string()
            };
            return Err(BundleError::NotABundle { path: source.into(), reason });
        }
        Ok(Bundle { source: source.into(), root, passes, incomplete, warmups, _unpacked: unpacked })
    }
}
