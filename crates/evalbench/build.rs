//! evalbench's git revision, for the provenance every bundle records
//! (`-dirty` when the tree had uncommitted changes to tracked files). None
//! outside a git checkout (a source tarball).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status.success().then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    if let Some(top) = git(&["rev-parse", "--show-toplevel"]) {
        // A new commit or a changed index changes the revision.
        for f in ["HEAD", "index", "refs/heads"] {
            println!("cargo:rerun-if-changed={top}/.git/{f}");
        }
    }
    if let Some(rev) = git(&["rev-parse", "--short=12", "HEAD"]) {
        let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        println!("cargo:rustc-env=EVALBENCH_GIT_REV={rev}{}", if dirty { "-dirty" } else { "" });
    }
    println!("cargo:rerun-if-changed=build.rs");
}
