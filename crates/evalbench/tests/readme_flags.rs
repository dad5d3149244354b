//! The README is a user's guide whose reference matches `--help`: every
//! long flag a command's help lists appears in that command's section of
//! the README's Reference, and every flag the README names exists in the
//! help of the command it is written under (or, outside the Reference, in
//! some command's). It stays at most 400 lines: measurements and design
//! notes live in docs/, one file per topic, and every docs/ link resolves.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;

/// The long flags an option line of a help text starts with
/// (`  -o, --out <OUT>`, `      --json`), not those its prose mentions.
fn help_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            let t = t.strip_prefix('-').filter(|r| !r.starts_with('-')).map_or(t, |r| r.get(3..).unwrap_or(""));
            let name = t.strip_prefix("--")?;
            let name: String = name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            (!name.is_empty() && name != "help" && name != "version").then(|| format!("--{name}"))
        })
        .collect()
}

/// Every `--flag` a text names.
fn named_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let s = i + at;
        let before_ok = s == 0 || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'-');
        let name: String = text[s + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if before_ok && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
            out.insert(format!("--{}", name.trim_end_matches('-')));
        }
        i = s + 2 + name.len();
    }
    out
}

#[test]
fn the_readme_reference_matches_every_commands_help() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "README.md has {lines} lines; measurements and design go to docs/");

    // Each top-level command's flags: its own, or all its subcommands'.
    let mut flags: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in subcommands(&help_of::<&str>(&[])) {
        let help = help_of(&[&c]);
        let mut f = help_flags(&help);
        for sub in subcommands(&help) {
            f.extend(help_flags(&help_of(&[&c, &sub])));
        }
        flags.insert(c, f);
    }
    assert!(flags.len() >= 10 && flags["run"].contains("--baseline-rev"), "{flags:?}");
    // Every command has --help (the README says so once); none lists it as its own.
    let every: BTreeSet<String> = flags.values().flatten().cloned().chain(["--help".to_string()]).collect();

    // The Reference: a section per command, `### `evalbench CMD ...``.
    let reference = readme.split("\n## Reference").nth(1).expect("a Reference section").split("\n## ").next().unwrap();
    let mut sections: BTreeMap<String, String> = BTreeMap::new();
    for s in reference.split("\n### `evalbench ").skip(1) {
        let cmd = s.split([' ', '`']).next().unwrap().to_string();
        sections.insert(cmd, s.to_string());
    }
    let mut wrong = Vec::new();
    for (cmd, f) in &flags {
        let Some(text) = sections.get(cmd) else {
            wrong.push(format!("no section `evalbench {cmd}` in the README's Reference"));
            continue;
        };
        let named = named_flags(text);
        for missing in f.difference(&named) {
            wrong.push(format!("evalbench {cmd}: {missing} is in --help, not in its README section"));
        }
        for unknown in named.difference(f) {
            wrong.push(format!("evalbench {cmd}: the README names {unknown}, which its --help does not list"));
        }
    }
    for unknown in named_flags(&readme).difference(&every) {
        wrong.push(format!("the README names {unknown}, which no command's --help lists"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // Every docs/ file the README links to is there.
    for link in readme.split("](docs/").skip(1) {
        let file = link.split(')').next().unwrap();
        assert!(root.join("docs").join(file).is_file(), "README links docs/{file}, which does not exist");
    }
}

#[test]
fn flags_are_read_from_option_lines_only() {
    let help = "Options:\n  -o, --out <OUT>  Where; see --json\n      --no-trace  Do not\n  -h, --help  Print help\n";
    assert_eq!(help_flags(help), ["--out", "--no-trace"].iter().map(|s| s.to_string()).collect());
    assert_eq!(named_flags("a --x-y, `--z` and ---w x--y"), ["--x-y", "--z"].iter().map(|s| s.to_string()).collect());
}
