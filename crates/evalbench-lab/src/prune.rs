//! Lab directories removed: the one a `run` made for itself, when it ends,
//! and with `evalbench lab prune` every stopped lab under the runs' root.
//! A lab holds PostgreSQL's data (about 60 MB), so runs that leave theirs
//! behind fill the disk: 24 of them made 1.2 GB here.

use std::path::{Path, PathBuf};

use crate::control;
use crate::error::LabError;

/// Where `run` makes the labs it needs when no `--lab-dir` is given.
pub const RUN_LABS: &str = "/var/tmp/evalbench";

/// What a removal or a prune did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Removed {
    pub removed: Vec<PathBuf>,
    pub bytes: u64,
    /// Labs left alone because something still runs in them, with what.
    pub running: Vec<(PathBuf, Vec<String>)>,
}

/// Bytes under `p`, links not followed.
fn size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else { return 0 };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(p).into_iter().flatten().flatten().map(|e| size(&e.path())).sum()
}

/// Removes a stopped lab with the embedded flake beside it
/// (`<dir>.hello-flake`), its network namespaces first (as `lab down`). A
/// lab in which anything runs (`lab up` by hand, another run) is left whole
/// and listed in `running`: a prune never stops what someone uses.
pub fn remove(dir: &Path, out: &mut Removed) -> Result<(), LabError> {
    if !dir.exists() {
        return Ok(());
    }
    let busy = control::still_running(dir);
    if !busy.is_empty() {
        out.running.push((dir.to_path_buf(), busy));
        return Ok(());
    }
    control::down(dir)?;
    for p in [dir.to_path_buf(), dir.with_extension("hello-flake")] {
        if p.exists() {
            delete(p, out)?;
        }
    }
    Ok(())
}

/// Deletes a directory tree, counted in `out`.
fn delete(p: PathBuf, out: &mut Removed) -> Result<(), LabError> {
    let bytes = size(&p);
    std::fs::remove_dir_all(&p).map_err(|source| LabError::Io { path: p.clone(), source })?;
    out.bytes += bytes;
    out.removed.push(p);
    Ok(())
}

/// Every lab directly under `root` (a directory holding lab.json, or an
/// embedded flake whose lab is gone), stopped and removed.
pub fn prune(root: &Path) -> Result<Removed, LabError> {
    let mut out = Removed::default();
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(source) => return Err(LabError::Io { path: root.to_path_buf(), source }),
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for d in dirs {
        if !d.exists() {
            // The embedded flake of a lab removed just before it.
            continue;
        }
        if crate::state::LabState::path(&d).exists() {
            remove(&d, &mut out)?;
        } else if d.extension().is_some_and(|e| e == "hello-flake") && !d.with_extension("").exists() {
            delete(d, &mut out)?;
        }
    }
    Ok(out)
}
