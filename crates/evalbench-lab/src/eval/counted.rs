//! Counted passes: every nix process of the evaluation runs under
//! Valgrind's cachegrind without cache simulation, which counts the
//! instructions it executes: an exact measure of nix's work that a busy
//! machine does not blur (`evalbench_bundle::instructions`).
//!
//! Why cachegrind: measured on the bundled hello flake with nix 2.8, it was
//! the cheapest of the exact counts (2.5 s against callgrind's 3.4 s and
//! 0.1 s without Valgrind; `valgrind --tool=none` alone 1.6 s), and gives
//! per-function counts with Valgrind's demangled names.
//!
//! Valgrind follows execs and children (`--trace-children=yes`): a nix
//! started through its own loader by a wrapper script (Debian's 2.26 and
//! 2.34 beside the project) is counted as the process it ends as. Each
//! process writes `cachegrind.<who>.<pid>.part`; when nix has ended, its own
//! file becomes `cachegrind.<who>.out` and any other (the wrapper's
//! helpers) `cachegrind.<who>.child-<pid>.out`, kept and never added. git,
//! which nix runs to lock a checkout, is not followed at all.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use evalbench_bundle::layout::{CACHEGRIND_CHILD, CACHEGRIND_PREFIX, CACHEGRIND_SUFFIX};

use super::error::EvalError;

pub(super) const VALGRIND: &str = "valgrind";
const PART: &str = ".part";

static DIR: OnceLock<PathBuf> = OnceLock::new();

/// From now on, this eval subprocess counts its nix processes into `dir`.
pub(super) fn count_into(dir: &Path) {
    let _ = DIR.set(dir.to_path_buf());
}

/// Where counts go, in a counted pass.
pub(super) fn dir() -> Option<&'static Path> {
    DIR.get().map(PathBuf::as_path)
}

/// Valgrind's arguments before nix's program.
pub(super) fn args(dir: &Path, who: &str) -> Vec<String> {
    vec![
        "--tool=cachegrind".into(),
        "--cache-sim=no".into(),
        "--branch-sim=no".into(),
        "--trace-children=yes".into(),
        // git (nix 2.8 runs five to lock a checkout) is not nix's work and
        // is never added: run natively, it costs no Valgrind start.
        "--trace-children-skip=*/git".into(),
        // Valgrind's own lines go to a file, so that nix's stderr (its
        // markers and errors) reads as without it.
        format!("--log-file={}", log(dir, who).display()),
        format!("--cachegrind-out-file={}/{CACHEGRIND_PREFIX}{who}.%p{PART}", dir.display()),
    ]
}

/// Valgrind's log of each process (`%p`: its pid), so that a child does not write over nix's.
fn log(dir: &Path, who: &str) -> PathBuf {
    dir.join(format!("valgrind.{who}.%p.log"))
}

/// After nix's process `pid` ended: its count kept as `cachegrind.<who>.out`,
/// its children's beside it. No count of its own is an error: the pass
/// would otherwise report fewer instructions than nix executed.
pub(super) fn keep(dir: &Path, who: &str, pid: i32) -> Result<(), EvalError> {
    let prefix = format!("{CACHEGRIND_PREFIX}{who}.");
    let parts: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|source| EvalError::Io { path: dir.to_path_buf(), source })?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let p = name.strip_prefix(&prefix)?.strip_suffix(PART)?.to_string();
            p.bytes().all(|b| b.is_ascii_digit()).then(|| (p, e.path()))
        })
        .collect();
    let mut own = false;
    for (p, path) in parts {
        let to = if p == pid.to_string() {
            own = true;
            dir.join(format!("{CACHEGRIND_PREFIX}{who}{CACHEGRIND_SUFFIX}"))
        } else {
            dir.join(format!("{CACHEGRIND_PREFIX}{who}{CACHEGRIND_CHILD}{p}{CACHEGRIND_SUFFIX}"))
        };
        std::fs::rename(&path, &to).map_err(|source| EvalError::Io { path: path.clone(), source })?;
    }
    if !own {
        let log = dir.join(format!("valgrind.{who}.{pid}.log"));
        return Err(EvalError::Uncounted { who: who.to_string(), pid, dir: dir.to_path_buf(), log });
    }
    Ok(())
}
