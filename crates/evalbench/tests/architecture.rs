//! The crate rules and habits of docs/ARCHITECTURE.md, checked against the
//! tree: which crate may depend on which; sizes a reader can hold (no source
//! file over 800 lines, no line over 120 columns, no function over 80
//! lines); no comment citing documents outside the repository.

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
        assert!(
            job.len() <= 90 && !job.contains(';'),
            "{name}'s job in docs/ARCHITECTURE.md is more than one: {job:?}"
        );
        let last = cells.last().unwrap();
        let deps: Vec<String> = if *last == "nothing" {
            Vec::new()
        } else {
            last.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect()
        };
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
    assert_eq!(
        seen.len(),
        allowed.len(),
        "crates {seen:?} against the table's {:?}",
        allowed.keys().collect::<Vec<_>>()
    );
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

fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&root().join("crates"), &mut files);
    rust_files(&root().join("fuzz"), &mut files);
    assert!(files.len() > 50, "found only {} source files", files.len());
    files.sort();
    files
}

fn relative(f: &Path) -> String {
    f.strip_prefix(root()).unwrap_or(f).display().to_string()
}

#[test]
fn files_and_lines_are_of_a_size_a_reader_holds_and_cite_nothing_outside() {
    let mut long = Vec::new();
    let mut wide = Vec::new();
    let mut citing = Vec::new();
    for f in &all_sources() {
        let text = std::fs::read_to_string(f).unwrap();
        let n = text.lines().count();
        if n > 800 {
            long.push(format!("{} ({n} lines)", relative(f)));
        }
        for (i, l) in text.lines().enumerate() {
            // Columns as a reader counts them: characters, not bytes (→, µ).
            let cols = l.chars().count();
            if cols > 120 {
                wide.push(format!("{}:{} ({cols} columns)", relative(f), i + 1));
            }
            let c = l.trim_start();
            let comment = c.starts_with("//");
            if comment && (c.contains("DESIGN.md") || c.contains("seed 0") || c.contains("seeds/")) {
                citing.push(format!("{}:{}", relative(f), i + 1));
            }
        }
    }
    assert!(long.is_empty(), "over 800 lines: {long:?}");
    assert!(wide.is_empty(), "over 120 columns (rustfmt.toml's max_width; split the literal): {wide:?}");
    assert!(citing.is_empty(), "comments citing documents outside the repository: {citing:?}");
}

/// Each function's name, where it starts and its length in lines, from
/// rustfmt's layout: a function opens on a line `[pub[(..)] ][const |async
/// |unsafe ]fn name` and closes at the first later line that is its own
/// indentation and `}`. (A declaration ending in `;` has no body.)
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let indent = l.len() - l.trim_start().len();
        let mut rest = l.trim_start();
        if let Some(r) = rest.strip_prefix("pub") {
            rest =
                if let Some(r) = r.strip_prefix('(') { r.split_once(") ").map_or("", |x| x.1) } else { r.trim_start() };
        }
        for q in ["const ", "async ", "unsafe ", "extern \"C\" "] {
            rest = rest.strip_prefix(q).unwrap_or(rest);
        }
        let Some(sig) = rest.strip_prefix("fn ") else { continue };
        let name: String = sig.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() || l.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{}}}", &l[..indent]);
        if l.trim_end().ends_with('}') {
            continue; // one line
        }
        if let Some(end) = (i + 1..lines.len()).find(|&j| lines[j] == close) {
            out.push((name, i + 1, end - i + 1));
        }
    }
    out
}

#[test]
fn no_function_is_over_80_lines() {
    let mut wrong = Vec::new();
    let mut counted = 0;
    for f in &all_sources() {
        for (name, line, n) in functions(&std::fs::read_to_string(f).unwrap()) {
            counted += 1;
            if n > 80 {
                wrong.push(format!("{}:{line} {name}: {n} lines (at most 80)", relative(f)));
            }
        }
    }
    assert!(counted > 1000, "found only {counted} functions: the scan is broken");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_function_scan_finds_what_rustfmt_lays_out() {
    let text =
        "fn a() {\n    x;\n}\n\npub(crate) async fn b(\n    y: u8,\n) -> u8 {\n    y\n}\nfn c();\n    pub fn d() {}\n";
    let got = functions(text);
    assert_eq!(got, [("a".to_string(), 1, 3), ("b".to_string(), 5, 5)]);
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
