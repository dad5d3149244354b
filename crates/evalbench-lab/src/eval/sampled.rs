//! Nix's own sampled profile (Nix >= 2.30, `--eval-profiler flamegraph`),
//! asked for beside the function trace in instrumented passes: a second,
//! independent view of the same evaluation (sampled at call entry, where
//! the trace is every call's exact time). Each nix process writes a file of
//! its own (nix truncates the one it is given, and a recycled evaluator's
//! successor is another process); at the end they are joined into
//! `eval/nix-eval-profiler.folded`, which `decode nix-profile` reads (a
//! stack on several lines is summed there, as nix's own flushes need).

use std::path::{Path, PathBuf};

/// Samples a second: the instrumented pass's evaluation is slowed by the
/// trace, and a pass of the hello flake gives a few hundred at this rate.
pub(super) const FREQUENCY: &str = "999";

const PART: &str = ".nix-eval-profiler.part";

/// Whether this nix has the profiler: `nix --version` is 2.30 or later.
pub(super) fn supported() -> bool {
    let mut c = super::nix::command();
    c.arg("--version");
    super::nix::output(c).ok().is_some_and(|v| at_least(&v, (2, 30)))
}

/// `nix (Nix) 2.34.8` against (major, minor).
fn at_least(version: &str, want: (u32, u32)) -> bool {
    let v = version.split_whitespace().last().unwrap_or("");
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    matches!((parts.next().flatten(), parts.next().flatten()), (Some(a), Some(b)) if (a, b) >= want)
}

/// The file one nix process writes its profile to: beside its statistics.
pub(super) fn part(stats_file: &Path) -> PathBuf {
    let mut name = stats_file.file_name().unwrap_or_default().to_os_string();
    name.push(PART);
    stats_file.with_file_name(name)
}

/// nix's options for a profile into `file`.
pub(super) fn args(file: &Path) -> [String; 6] {
    [
        "--option".into(),
        "eval-profiler".into(),
        "flamegraph".into(),
        "--option".into(),
        "eval-profile-file".into(),
        file.display().to_string(),
    ]
}

/// Joins the processes' files in `dir` into the pass's one, written whole,
/// and removes them.
pub(super) fn join(dir: &Path) -> Result<(), super::EvalError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| super::EvalError::Io { path, source }
    };
    let mut parts: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(PART))
        .collect();
    if parts.is_empty() {
        return Ok(());
    }
    parts.sort();
    let mut all = Vec::new();
    for p in &parts {
        let mut text = std::fs::read(p).map_err(io(p))?;
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        all.extend_from_slice(&text);
    }
    use evalbench_bundle::layout::{file_name, NIX_EVAL_PROFILER_FOLDED};
    evalbench_bundle::write_atomic(&dir.join(file_name(NIX_EVAL_PROFILER_FOLDED)), &all)?;
    for p in parts {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_from_2_30_have_the_profiler() {
        assert!(super::at_least("nix (Nix) 2.34.8", (2, 30)));
        assert!(super::at_least("nix (Nix) 2.30.0", (2, 30)));
        assert!(!super::at_least("nix (Nix) 2.26.3", (2, 30)));
        assert!(!super::at_least("nix (Nix) 2.8.0", (2, 30)));
        assert!(super::at_least("nix (Nix) 3.0.1", (2, 30)));
        assert!(!super::at_least("garbage", (2, 30)));
    }
}
