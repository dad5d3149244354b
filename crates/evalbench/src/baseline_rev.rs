//! `run --baseline-rev REV`: the baseline is the flake as it was at a git
//! revision, checked out beside the user's tree as a worktree of its own
//! (nothing in the user's checkout changes) and removed when the run ends.
//! Both are then measured interleaved in one session, as `--baseline` does.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// A worktree of the flake's repository at a revision, removed on drop.
pub struct Worktree {
    repo: PathBuf,
    dir: tempfile::TempDir,
    /// The flake inside it (the flake's place below the repository's top).
    pub flake: PathBuf,
    /// `FLAKE@REV`: the baseline's name in its bundle and in compare.
    pub label: String,
    pub commit: String,
}

/// `git -C dir args`: its stdout, trimmed; a failure names the command and git's message.
pub(crate) fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let o = Command::new("git").arg("-C").arg(dir).args(args).output().context("running git (is it installed?)")?;
    if !o.status.success() {
        // Quiet git (`--quiet`) says nothing: its exit status is said instead.
        let said = String::from_utf8_lossy(&o.stderr).trim().to_string();
        let why = if said.is_empty() { format!("it failed ({}) and printed nothing", o.status) } else { said };
        bail!("git -C {} {}: {why}", dir.display(), args.join(" "));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

impl Worktree {
    /// Checks `rev` of the repository holding `flake` out into a new directory.
    pub fn add(flake: &Path, rev: &str) -> anyhow::Result<Worktree> {
        let flake = std::path::absolute(flake).with_context(|| flake.display().to_string())?;
        let repo = git(&flake, &["rev-parse", "--show-toplevel"]).with_context(|| {
            format!("--baseline-rev needs --flake to be a directory in a git checkout; {} is not", flake.display())
        })?;
        let prefix = git(&flake, &["rev-parse", "--show-prefix"])?;
        let commit = git(&flake, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
            .with_context(|| format!("--baseline-rev {rev}: no such commit in {repo}"))?;
        // World-traversable, as the lab's processes read it as other users.
        let parent = Path::new("/var/tmp/evalbench");
        std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
        let dir = tempfile::Builder::new()
            .prefix("baseline-")
            .tempdir_in(parent)
            .with_context(|| parent.display().to_string())?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
                .with_context(|| dir.path().display().to_string())?;
        }
        let tree = dir.path().join("tree");
        git(Path::new(&repo), &["worktree", "add", "--detach", "--quiet", &tree.to_string_lossy(), &commit])?;
        let short: String = commit.chars().take(12).collect();
        Ok(Worktree {
            flake: tree.join(prefix.trim_end_matches('/')),
            label: format!("{}@{short}", flake.display()),
            repo: PathBuf::from(repo),
            dir,
            commit,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let tree = self.dir.path().join("tree");
        if let Err(e) = git(&self.repo, &["worktree", "remove", "--force", &tree.to_string_lossy()]) {
            eprintln!("evalbench run: the baseline's worktree {} was not removed: {e}", tree.display());
        }
    }
}
