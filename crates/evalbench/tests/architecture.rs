//! The crate rules and habits of docs/ARCHITECTURE.md, checked against the
//! tree: which crate may depend on which, no source file over 500 lines, no
//! comment citing documents outside the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Our crates a crate's `[dependencies]` names (dev-dependencies aside).
fn our_deps(manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]";
            continue;
        }
        if in_deps {
            if let Some(name) = l.split([' ', '=', '.']).next().filter(|n| n.starts_with("evalbench-")) {
                out.push(name.trim_start_matches("evalbench-").to_string());
            }
        }
    }
    out.sort();
    out
}

/// The table of docs/ARCHITECTURE.md itself: crate (short name) to the
/// crates of ours it may depend on, read from its last column.
fn allowed_by_the_document() -> BTreeMap<String, Vec<String>> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in doc.lines().filter(|l| l.starts_with("| `evalbench")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let name = cells[0].trim_matches('`').trim_start_matches("evalbench-").trim_start_matches("evalbench");
        if name.is_empty() {
            continue; // the binary: it may depend on all
        }
        // Each crate's one job, in one short line: the details go below the table.
        let job = cells[2];
        assert!(job.len() <= 90 && !job.contains(';'), "{name}'s job in docs/ARCHITECTURE.md is more than one: {job:?}");
        let last = cells.last().unwrap();
        let deps: Vec<String> =
            if *last == "nothing" { Vec::new() } else { last.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect() };
        out.insert(name.to_string(), deps);
    }
    assert!(out.len() >= 10, "the crate table was not found in docs/ARCHITECTURE.md: {out:?}");
    out
}

#[test]
fn crates_depend_only_on_what_the_architecture_allows() {
    let allowed = allowed_by_the_document();
    let mut seen = Vec::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(short) = name.strip_prefix("evalbench-") else { continue };
        seen.push(short.to_string());
        let deps = our_deps(&e.path().join("Cargo.toml"));
        let ok = allowed.get(short).unwrap_or_else(|| panic!("crate {name} is not in docs/ARCHITECTURE.md's table"));
        for d in &deps {
            assert!(ok.contains(d), "{name} depends on evalbench-{d}; docs/ARCHITECTURE.md allows {ok:?}");
        }
    }
    assert_eq!(seen.len(), allowed.len(), "crates {seen:?} against the table's {:?}", allowed.keys().collect::<Vec<_>>());
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target" && n != "corpus" && n != "artifacts") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_source_file_is_over_500_lines_or_cites_outside_documents() {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("fuzz"), &mut files);
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut long = Vec::new();
    let mut citing = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let n = text.lines().count();
        if n > 500 {
            long.push(format!("{} ({n} lines)", f.display()));
        }
        for (i, l) in text.lines().enumerate() {
            let c = l.trim_start();
            let comment = c.starts_with("//");
            if comment && (c.contains("DESIGN.md") || c.contains("seed 0") || c.contains("seeds/")) {
                citing.push(format!("{}:{}", f.display(), i + 1));
            }
        }
    }
    assert!(long.is_empty(), "over 500 lines: {long:?}");
    assert!(citing.is_empty(), "comments citing documents outside the repository: {citing:?}");
}

#[test]
fn bench_scripts_are_executable() {
    use std::os::unix::fs::PermissionsExt;
    let mut not = Vec::new();
    for e in std::fs::read_dir(root().join("bench")).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "sh") && p.metadata().unwrap().permissions().mode() & 0o111 == 0 {
            not.push(p.display().to_string());
        }
    }
    assert!(not.is_empty(), "not executable: {not:?}");
}
