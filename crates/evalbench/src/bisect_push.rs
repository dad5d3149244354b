//! `evalbench bisect --target gradient`: a deployment evaluates its
//! project's repository at the head of the branch it watches (Gradient's
//! evaluate fetches the repository's state; it takes no commit), so each
//! probe first puts its commit there: `git push --force REMOTE
//! <commit>:refs/heads/BRANCH` from the flake's repository. The branch's
//! head as found is fetched first and put back when the bisect ends,
//! however it ends (deleted again if there was none), so the deployment
//! is left watching what it watched.

use anyhow::Context;
use std::path::{Path, PathBuf};

use crate::baseline_rev::git;

/// The branch a deployment watches, moved probe by probe and put back on drop.
pub struct Pushed {
    repo: PathBuf,
    remote: String,
    refname: String,
    /// The branch's head before the bisect (None: there was no such branch).
    found: Option<String>,
    moved: bool,
}

impl Pushed {
    /// Reads the branch's head on `remote` (and fetches its commit, so that it can be pushed back).
    pub fn new(repo: &Path, remote: &str, branch: &str) -> anyhow::Result<Self> {
        let refname = if branch.starts_with("refs/") { branch.to_string() } else { format!("refs/heads/{branch}") };
        let listed = git(repo, &["ls-remote", remote, &refname])
            .with_context(|| format!("--push {remote}: the repository the deployment watches could not be read"))?;
        let found = listed
            .lines()
            .find(|l| l.ends_with(&format!("\t{refname}")))
            .map(|l| l.split('\t').next().unwrap_or("").to_string());
        if found.is_some() {
            git(repo, &["fetch", "--quiet", remote, &refname])
                .with_context(|| format!("fetching {refname} from {remote}, to put it back afterwards"))?;
        }
        Ok(Self { repo: repo.to_path_buf(), remote: remote.to_string(), refname, found, moved: false })
    }

    /// What the branch held before the bisect, for the text.
    pub fn describe(&self) -> String {
        match &self.found {
            Some(h) => {
                format!("{} of {} (at {}; put back afterwards)", self.refname, self.remote, &h[..h.len().min(12)])
            }
            None => format!("{} of {} (a new branch; deleted afterwards)", self.refname, self.remote),
        }
    }

    /// Makes the branch's head `commit`.
    pub fn put(&mut self, commit: &str) -> anyhow::Result<()> {
        self.moved = true;
        git(&self.repo, &["push", "--quiet", "--force", &self.remote, &format!("{commit}:{}", self.refname)])
            .with_context(|| format!("putting {commit} at {} of {}", self.refname, self.remote))?;
        Ok(())
    }
}

impl Drop for Pushed {
    fn drop(&mut self) {
        if !self.moved {
            return;
        }
        let spec = match &self.found {
            Some(h) => format!("{h}:{}", self.refname),
            None => format!(":{}", self.refname),
        };
        if let Err(e) = git(&self.repo, &["push", "--quiet", "--force", &self.remote, &spec]) {
            eprintln!("evalbench bisect: could not put {} of {} back ({spec}): {e:#}", self.refname, self.remote);
        }
    }
}
