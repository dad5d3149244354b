//! The lab's evaluator on its own (`evalbench lab eval`, the worker's eval
//! subprocess), against nix's own answers: the same derivations as `nix
//! path-info --derivation` gives per installable, with one evaluator and
//! with two; and nix's counters, identical run after run.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;

fn gen_flake(dir: &Path, packages: u32, work: u32) {
    run_ok(evalbench().args(["lab", "gen-flake", "--out"]).arg(dir).args([
        "--packages",
        &packages.to_string(),
        "--work",
        &work.to_string(),
    ]));
}

/// One run of the eval subprocess with an empty cache: the drvPaths it printed.
fn lab_eval(
    n: &Option<std::path::PathBuf>,
    flake: &Path,
    shards: u32,
    cache: &Path,
    stats: Option<&Path>,
) -> Vec<String> {
    lab_eval_lines(n, flake, shards, cache, stats).iter().filter_map(|l| l["drv"].as_str().map(String::from)).collect()
}

/// The same, every line it printed.
fn lab_eval_lines(
    n: &Option<std::path::PathBuf>,
    flake: &Path,
    shards: u32,
    cache: &Path,
    stats: Option<&Path>,
) -> Vec<serde_json::Value> {
    let mut c = evalbench();
    with_nix(&mut c, n);
    c.args(["lab", "eval", "--job", "t", "--eval-workers", &shards.to_string(), "--flake"])
        .arg(flake)
        .env("XDG_CACHE_HOME", cache);
    // Without a statistics directory, the evaluation makes one of its own
    // in TMPDIR, under a name no one could make beforehand, and removes it.
    let tmp = tempfile::tempdir().unwrap();
    match stats {
        Some(s) => c.arg("--nix-stats-dir").arg(s),
        None => c.env("TMPDIR", tmp.path()),
    };
    let out = run_ok(&mut c);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("evalbench-nix-stats."))
        .collect();
    assert!(left.is_empty(), "the evaluation's own statistics directory is removed: {left:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .collect()
}

fn nix(n: &Option<std::path::PathBuf>, args: &[&str]) -> String {
    let out = nix_command(n).args(args).env("NIX_CONFIG", NIX_CONFIG).output().expect("nix runs");
    assert!(out.status.success(), "nix {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn store_path(n: &Option<std::path::PathBuf>, flake: &Path) -> String {
    let m: serde_json::Value =
        serde_json::from_str(&nix(n, &["flake", "metadata", "--json", flake.to_str().unwrap()])).unwrap();
    m["path"].as_str().unwrap().to_string()
}

/// nix's own answer, one evaluation: attribute -> drvPath.
fn drv_paths(n: &Option<std::path::PathBuf>, source: &str) -> BTreeMap<String, String> {
    let out = nix(
        n,
        &[
            "eval",
            "--json",
            "--option",
            "eval-cache",
            "false",
            &format!("path:{source}#packages.x86_64-linux"),
            "--apply",
            "ps: builtins.mapAttrs (n: p: p.drvPath) ps",
        ],
    );
    serde_json::from_str(&out).unwrap()
}

/// `nix path-info --derivation` over the given attributes, one installable each.
fn path_info(n: &Option<std::path::PathBuf>, source: &str, attrs: &[String]) -> BTreeSet<String> {
    let mut args = vec!["path-info".to_string(), "--derivation".to_string()];
    args.extend(attrs.iter().map(|a| format!("path:{source}#packages.x86_64-linux.{a}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    nix(n, &args).lines().map(String::from).collect()
}

#[test]
fn the_same_derivations_as_nix_path_info_with_one_evaluator_and_two() {
    for n in nixes() {
        same_derivations(&n);
    }
}

fn same_derivations(n: &Option<std::path::PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    // The bundled hello flake: every installable through path-info.
    let hello = tmp.path().join("hello");
    gen_flake(&hello, 100, 1500);
    let source = store_path(n, &hello);
    let mut attrs: Vec<String> = (0..100).map(|i| format!("pkg{i}")).collect();
    attrs.push("default".into());
    let truth = path_info(n, &source, &attrs);
    assert_eq!(truth.len(), 100, "default is pkg99");
    for shards in [1, 2] {
        let got = lab_eval(n, &hello, shards, &tmp.path().join(format!("cache-hello-{shards}")), None);
        assert_eq!(got.len(), 101, "one drvPath per attribute");
        assert_eq!(got.iter().cloned().collect::<BTreeSet<_>>(), truth, "hello flake, {shards} evaluator(s)");
    }

    // 2,000 packages: path-info pays 0.1 s an installable here, so it answers
    // for every 20th attribute; nix's own one-evaluation answer for all.
    let big = tmp.path().join("big");
    gen_flake(&big, 2000, 100);
    let source = store_path(n, &big);
    let all = drv_paths(n, &source);
    assert_eq!(all.len(), 2001);
    let sample: Vec<String> = all.keys().step_by(20).cloned().collect();
    let sampled = path_info(n, &source, &sample);
    let expected: BTreeSet<String> = sample.iter().map(|a| all[a].clone()).collect();
    assert_eq!(sampled, expected, "nix eval and nix path-info agree on the sample");
    let got = lab_eval(n, &big, 2, &tmp.path().join("cache-big"), None);
    assert_eq!(got.len(), 2001);
    assert_eq!(
        got.into_iter().collect::<BTreeSet<_>>(),
        all.values().cloned().collect::<BTreeSet<_>>(),
        "2,000 packages, two evaluators"
    );
}

#[test]
fn a_flake_s_first_evaluation_writes_its_drvs_and_later_ones_find_them() {
    for n in nixes() {
        store_writes(&n);
    }
}

/// The eval subprocess counts the `.drv` files nix wrote: all of a new
/// flake's on its first evaluation (the alias `default` once), none after,
/// with one evaluator or two, and none when the lab's cache answers.
fn store_writes(n: &Option<std::path::PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let flake = tmp.path().join("f");
    gen_flake(&flake, 60, 10);
    // Derivations no store has yet: a nonce in each.
    let nonce = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    );
    let text = std::fs::read_to_string(flake.join("flake.nix")).unwrap();
    assert!(text.contains(r#"builder = "/bin/sh";"#), "the generated flake's builder line moved: {text}");
    std::fs::write(
        flake.join("flake.nix"),
        text.replace(r#"builder = "/bin/sh";"#, &format!(r#"builder = "/bin/sh"; nonce = "{nonce}";"#)),
    )
    .unwrap();
    let written = |shards: u32, cache: &str| {
        let lines = lab_eval_lines(n, &flake, shards, &tmp.path().join(cache), None);
        let drvs: BTreeSet<&str> = lines.iter().filter_map(|l| l["drv"].as_str()).collect();
        let done = lines.iter().find_map(|l| l.get("done")).unwrap_or_else(|| panic!("no done line: {lines:?}"));
        (drvs.len(), done["drvs_written"].as_u64().unwrap_or_else(|| panic!("{done}")))
    };
    assert_eq!(written(2, "c1"), (60, 60), "{n:?}: the first evaluation writes every .drv");
    assert_eq!(written(1, "c2"), (60, 0), "{n:?}: a second evaluation finds them");
    assert_eq!(written(2, "c1"), (60, 0), "{n:?}: answered from the lab's cache");
}

#[test]
fn nix_counts_the_same_work_every_time() {
    for n in nixes() {
        same_work(&n);
    }
}

/// Every counter is exact (the same run after run) or judged like a time
/// (`NOISY`): under each nix, its new counters included.
fn same_work(n: &Option<std::path::PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let flake = tmp.path().join("f");
    gen_flake(&flake, 100, 300);
    let mut seen: Vec<BTreeMap<String, f64>> = Vec::new();
    for i in 0..10 {
        let stats = tmp.path().join(format!("stats{i}"));
        lab_eval(n, &flake, 1, &tmp.path().join(format!("cache{i}")), Some(&stats));
        // The bundle's reading of them: every numeric value, nested keys joined.
        let mut counters = BTreeMap::new();
        for f in ["nix-stats.discover.json", "nix-stats.0.json"] {
            fn walk(k: &str, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
                match v {
                    serde_json::Value::Object(m) => m
                        .iter()
                        .for_each(|(n, v)| walk(&if k.is_empty() { n.clone() } else { format!("{k}.{n}") }, v, out)),
                    serde_json::Value::Number(n) => *out.entry(k.to_string()).or_insert(0.0) += n.as_f64().unwrap(),
                    _ => {}
                }
            }
            walk("", &read_json(&stats.join(f)), &mut counters);
        }
        seen.push(counters);
    }
    // The second nix is the one that ran: 2.26 counts expressions, 2.8 does not.
    assert_eq!(seen[0].contains_key("nrExprs"), n.is_some(), "{n:?}: {:?}", seen[0].keys().collect::<Vec<_>>());
    let exact: Vec<&String> = seen[0].keys().filter(|k| !evalbench_noisy(k)).collect();
    assert!(exact.iter().any(|k| *k == "nrFunctionCalls") && exact.iter().any(|k| *k == "gc.totalBytes"));
    for (i, s) in seen.iter().enumerate().skip(1) {
        for k in &exact {
            assert_eq!(s[*k], seen[0][*k], "{n:?}, run {i}: {k} differs between runs of one input");
        }
    }
}

/// What the verdicts judge like times, and `sizes` (constants of the nix build).
fn evalbench_noisy(k: &str) -> bool {
    evalbench_analyze::counters::NOISY.contains(&k) || k.starts_with("sizes.")
}

#[test]
fn a_nixpkgs_shaped_flake_evaluates_to_nix_s_own_derivations() {
    for n in nixes() {
        nixpkgs_shaped(&n);
    }
}

fn nixpkgs_shaped(n: &Option<std::path::PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let flake = tmp.path().join("np");
    run_ok(evalbench().args(["lab", "gen-flake", "--shape", "nixpkgs", "--packages", "200", "--out"]).arg(&flake));
    assert!(
        flake.join("pkgs/pkg199.nix").is_file() && flake.join("lib.nix").is_file(),
        "a file per package, and a lib"
    );
    let source = store_path(n, &flake);
    let all = drv_paths(n, &source);
    assert_eq!(all.len(), 201);
    let got = lab_eval(n, &flake, 2, &tmp.path().join("cache"), None);
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), all.values().cloned().collect::<BTreeSet<_>>());
    // The overlay's override took: pkg0's derivation says so.
    let drv = std::fs::read_to_string(&all["pkg0"]).unwrap();
    assert!(drv.contains("from the overlay"), "the overlay fixpoint applied");
}
