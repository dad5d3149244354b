//! Flakes for the lab: the project repository made from a flake directory,
//! and a generator for self-contained flakes of any size.

use crate::error::LabError;
use std::path::{Path, PathBuf};
use std::process::Command;

use evalbench_host::run;

/// A self-contained flake (no nixpkgs): a package built with
/// `builtins.derivation` for each of `graph`'s (`shape::generate` for
/// `seed`: depth bounded, a few hubs), depending on each other as it says,
/// each doing `work` steps of deliberate evaluation work so that evaluation
/// costs real time and the eval cache has something to save. `default` is
/// the last package.
pub fn flake_text(graph: &crate::shape::Graph, work: u32, seed: u64) -> String {
    let count = graph.deps.len();
    let table = graph.nix_table();
    format!(
        r#"{{
  description = "evalbench flake: {count} self-contained derivations with dependencies (no nixpkgs; seed {seed})";

  outputs = {{ self }}:
    let
      system = "x86_64-linux";
      count = {count};
      # Deliberate evaluation work in every package, so that a cold
      # evaluation takes real time and the eval cache has something to save.
      work = k: builtins.foldl' (acc: i: acc + (builtins.bitAnd (i * k + acc) 1023)) 0 (builtins.genList (i: i) {work});
      name = i: "pkg${{toString i}}";
      # Each package's dependencies, by index (evalbench's shape::generate).
      table = {table};
      deps = i: map (j: packages.${{name j}}) (builtins.elemAt table i);
      mk = i: builtins.derivation {{
        name = "hello-${{toString i}}";
        inherit system;
        builder = "/bin/sh";
        args = [ "-c" "echo ${{toString (work i)}} $deps > $out" ];
        deps = deps i;
      }};
      packages = builtins.listToAttrs (builtins.genList (i: {{ name = name i; value = mk i; }}) count);
    in
    {{
      packages.${{system}} = packages // {{ default = packages.${{name (count - 1)}}; }};
    }};
}}
"#
    )
}

/// A flake of `machines` "machines", each a derivation over `count`
/// packages of its own (salted, so machines share nothing but a small base),
/// under `machines.<name>`: what a deploy gate evaluates, without nixpkgs.
pub fn machines_flake_text(machines: u32, count: u32, work: u32) -> String {
    format!(
        concat!(
            r#"{{
  description = "evalbench flake: {machines} machines of {count} packages each (no nixpkgs)";

  outputs = {{ self }}:
    let
      system = "x86_64-linux";
      work = k: builtins.foldl' (acc: i: acc + (builtins.bitAnd (i * k + acc) 1023)) 0 (builtins.genList (i: i) {work});
      drv = name: deps: k: builtins.derivation {{
        inherit name system deps;
        builder = "/bin/sh";
        args = [ "-c" "echo ${{toString (work k)}} $deps > $out" ];
      }};
      base = builtins.genList (i: drv "base-${{toString i}}" [ ] i) 20;
      machine = m:
        let
          pkgs = builtins.genList (i: drv "m${{toString m}}-pkg${{toString i}}" (if i == 0 then base "#,
            concat!(
                r#"else [ (builtins.elemAt pkgs (i / 2)) (builtins.elemAt pkgs (i - 1)) ]) (m * 100003 + i)) {count};
        in
        drv "machine-${{toString m}}-toplevel" pkgs m;
      names = builtins.genList (m: "m${{toString m}}") {machines};
    in
    {{
      machines = builtins.listToAttrs (builtins.genList (m: {{ name = "m${{toString m}}"; value = "#,
                r#"machine m; }}) {machines});
      packages.${{system}}.default = drv "all-machines" (map (n: self.machines.${{n}}) names) 0;
    }};
}}
"#
            )
        ),
        count = count,
        machines = machines,
        work = work
    )
}

/// The hello flake, embedded, so the lab works from any directory.
pub const HELLO_FLAKE: &str = include_str!("../../../examples/hello-flake/flake.nix");

/// Writes the embedded hello flake into `dir` and returns it.
pub fn hello_flake(dir: &Path) -> Result<PathBuf, LabError> {
    std::fs::create_dir_all(dir).map_err(crate::LabError::io(dir))?;
    std::fs::write(dir.join("flake.nix"), HELLO_FLAKE).map_err(crate::LabError::io(dir))?;
    Ok(dir.to_path_buf())
}

pub const HELLO_COUNT: u32 = 100;
pub const HELLO_WORK: u32 = 1500;

fn git(dir: &Path, args: &[&str]) -> Result<String, LabError> {
    Ok(run(Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "evalbench")
        .env("GIT_AUTHOR_EMAIL", "evalbench@localhost")
        .env("GIT_COMMITTER_NAME", "evalbench")
        .env("GIT_COMMITTER_EMAIL", "evalbench@localhost"))?)
}

fn copy_tree(src: &Path, dst: &Path) -> Result<(), LabError> {
    std::fs::create_dir_all(dst).map_err(crate::LabError::io(dst))?;
    for e in std::fs::read_dir(src).map_err(crate::LabError::io(src))? {
        let e = e.map_err(LabError::io(src))?;
        if e.file_name() == ".git" {
            continue;
        }
        let (from, to) = (e.path(), dst.join(e.file_name()));
        if e.file_type().map_err(LabError::io(&e.path()))?.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            std::fs::copy(&from, &to).map_err(crate::LabError::io(&from))?;
        }
    }
    Ok(())
}

/// The project's git repository: the flake's files committed in `dir/repo`.
/// A changed flake makes a new commit; an unchanged one keeps the commit.
pub fn prepare_repo(flake: &Path, lab_dir: &Path) -> Result<PathBuf, LabError> {
    prepare_repo_in(flake, &lab_dir.join("repo"))
}

/// As [`prepare_repo`], into the repository `repo` (a lab that serves a
/// second flake keeps it in a repository of its own).
pub fn prepare_repo_in(flake: &Path, repo: &Path) -> Result<PathBuf, LabError> {
    if !flake.join("flake.nix").is_file() {
        return Err(LabError::NoFlake(flake.to_path_buf()));
    }
    let repo = repo.to_path_buf();
    if !repo.join(".git").is_dir() {
        std::fs::create_dir_all(&repo).map_err(crate::LabError::io(&repo))?;
        git(&repo, &["init", "--quiet", "--initial-branch=main"])?;
    }
    // Replace the tracked files with the flake's.
    for e in std::fs::read_dir(&repo).map_err(LabError::io(&repo))?.flatten() {
        if e.file_name() != ".git" {
            let p = e.path();
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
    copy_tree(flake, &repo)?;
    git(&repo, &["add", "--all"])?;
    if !git(&repo, &["status", "--porcelain"])?.trim().is_empty() {
        git(&repo, &["commit", "--quiet", "-m", "evalbench lab project"])?;
    }
    Ok(repo)
}
