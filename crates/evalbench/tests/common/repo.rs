//! Git repositories of a generated flake whose commits change nix's work
//! at chosen commits (bisect's tests, on the lab and on a deployment).

use std::path::Path;
use std::process::Command;

use super::{evalbench, run_ok};

/// `git -C dir args`, its stdout trimmed; panics naming the command when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Commits 0..n of a generated flake: `steps` (commit, new list length)
/// change its work, `broken` does not parse (the next commit mends it),
/// the rest add a comment. Returns each commit's hash.
pub fn repo(dir: &Path, n: usize, steps: &[(usize, u32)], broken: usize) -> Vec<String> {
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "10", "--work", "300", "--out"]).arg(dir));
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "t@example.org"]);
    git(dir, &["config", "user.name", "t"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "commit 0: the flake"]);
    let flake = dir.join("flake.nix");
    let mut work = 300;
    for k in 1..n {
        let mut text = std::fs::read_to_string(&flake).unwrap();
        if let Some(&(_, to)) = steps.iter().find(|s| s.0 == k) {
            text = text.replace(&format!("(i: i) {work})"), &format!("(i: i) {to})"));
            work = to;
        } else if k == broken {
            text.push_str("this is not nix {\n");
        } else if k == broken + 1 {
            text = text.replace("this is not nix {\n", "");
        } else {
            text.push_str(&format!("# commit {k}\n"));
        }
        std::fs::write(&flake, text).unwrap();
        git(dir, &["commit", "-qam", &format!("commit {k}")]);
    }
    git(dir, &["rev-list", "--reverse", "HEAD"]).lines().map(String::from).collect()
}
