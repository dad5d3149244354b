//! Every value-taking flag of every visible command, given hostile values:
//! an error with exit status 2, never a panic. The commands and their flags
//! are read from clap's own help, so a new flag is covered when it is added.
//! Each command runs in a context that makes it stop with an error of its
//! own right after its options are read (a missing bundle, an unopenable
//! database, a path under a regular file), so nothing real is started.

mod common;

use std::path::Path;

use common::*;

/// The long flags that take a value (`--name <VALUE>`).
fn value_flags(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let at = l.find("--")?;
            let rest = &l[at + 2..];
            let (name, after) = rest.split_once(' ')?;
            after.starts_with('<').then(|| name.trim_end_matches(',').to_string())
        })
        .collect()
}

/// Arguments after which the command stops with an error of its own.
fn context(path: &[String], tmp: &Path) -> Vec<String> {
    let t = |p: &str| tmp.join(p).display().to_string();
    let v: Vec<String> = match path.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["run"] => {
            vec!["--target".into(), "gradient".into(), "--target-config".into(), "/nonexistent/target.json".into()]
        }
        ["bisect"] => vec!["--flake".into(), "/nonexistent/flake".into(), "good".into(), "bad".into()],
        ["bench"] => vec!["--runs".into(), "0".into(), "--".into(), "true".into()],
        ["compare"] => vec!["/nonexistent/a".into(), "/nonexistent/b".into()],
        ["gate"] => vec!["/nonexistent/flake".into()],
        ["decode"] => vec!["pg".into(), "/nonexistent/capture".into()],
        ["inspect"] | ["summarize"] | ["whatif"] => vec!["/nonexistent/bundle".into()],
        ["sample"] => vec!["--out".into(), "/etc/hostname/x".into()],
        ["history", "add"] => {
            vec![t("bundle"), "--commit".into(), "c1".into(), "--db".into(), tmp.display().to_string()]
        }
        ["history", _] => vec!["--db".into(), tmp.display().to_string()],
        ["lab", "up"] => vec!["--lab-dir".into(), t("lab"), "--flake".into(), "/nonexistent/flake".into()],
        ["lab", "gen-flake"] => vec!["--out".into(), "/etc/hostname/x".into()],
        ["lab", "sql"] => vec!["--lab-dir".into(), "/etc/hostname/x".into(), "SELECT 1".into()],
        ["lab", _] => vec!["--lab-dir".into(), "/etc/hostname/x".into()],
        other => panic!("no context for {other:?}: add one, so its flags are tried"),
    };
    v
}

/// Values no flag of that kind accepts.
fn hostile(flag: &str) -> Vec<String> {
    let long_path = format!("/tmp/{}", "x".repeat(5000));
    match flag {
        // Directories to write into: a path is a path; these are not ones.
        "out" | "lab-dir" | "trace-dir" | "nix-stats-dir" => vec!["".into(), "/etc/hostname/x".into(), long_path],
        // Files and flakes to read or write.
        "db" | "export-json" | "target-config" | "flake" | "provision" => {
            vec!["".into(), "/etc/hostname/x".into(), long_path, "/nonexistent/\u{e9}\u{4e2d}".into()]
        }
        _ => vec![
            "".into(),
            "-1".into(),
            "1e999".into(),
            "99999999999999999999999".into(),
            "x".repeat(5000),
            "\u{e9}\u{4e2d}".into(),
            "/tmp".into(),
            // Near misses of a time: a multi-byte character where a digit goes, a day that does not exist.
            "2023-11-14T22:13:20+0\u{e9}00".into(),
            "2023-02-31T22:13:20Z".into(),
        ],
    }
}

#[test]
fn no_flag_value_panics_and_every_bad_one_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    // A bundle that reads, for `history add` to get as far as its flags.
    let pass = tmp.path().join("bundle/cold-clean");
    std::fs::create_dir_all(&pass).unwrap();
    std::fs::write(pass.join("run.json"), r#"{"pass": "cold-clean", "status": "Completed", "evaluated_s": 1.5}"#)
        .unwrap();

    let mut paths: Vec<Vec<String>> = subcommands(&help_of::<&str>(&[])).into_iter().map(|c| vec![c]).collect();
    let mut i = 0;
    while i < paths.len() {
        for sub in subcommands(&help_of(&paths[i])) {
            let mut p = paths[i].clone();
            p.push(sub);
            paths.push(p);
        }
        i += 1;
    }
    let mut tried = 0;
    let mut bad = Vec::new();
    for path in &paths {
        let help = help_of(path);
        if !subcommands(&help).is_empty() {
            continue;
        }
        let ctx = context(path, tmp.path());
        for flag in value_flags(&help) {
            for value in hostile(&flag) {
                let out = evalbench()
                    .current_dir(tmp.path())
                    .args(path)
                    .arg(format!("--{flag}"))
                    .arg(&value)
                    .args(&ctx)
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                tried += 1;
                if out.status.code() != Some(2) || stderr.contains("panicked") {
                    let shown: String = value.chars().take(40).collect();
                    bad.push(format!(
                        "{} --{flag} {shown:?}: {:?} {}",
                        path.join(" "),
                        out.status.code(),
                        stderr.lines().next().unwrap_or("")
                    ));
                }
            }
        }
    }
    assert!(tried > 150, "only {tried} flag values tried: is the help parsed?");
    assert!(bad.is_empty(), "{} of {tried}:\n{}", bad.len(), bad.join("\n"));
}

/// The default count of clean runs is the one the README and power.rs give.
#[test]
fn the_default_is_the_measured_count_of_clean_runs() {
    let help = String::from_utf8(run_ok(evalbench().args(["run", "--help"])).stdout).unwrap();
    let repeat = help.split("--repeat <REPEAT>").nth(1).unwrap_or("");
    let default = repeat.split("[default: ").nth(1).and_then(|r| r.split(']').next());
    assert_eq!(default, Some(evalbench_analyze::power::DEFAULT_CLEAN_RUNS.to_string().as_str()), "{repeat}");
    assert_eq!(evalbench_analyze::power::DEFAULT_CLEAN_RUNS, 32, "the README's count");
}
