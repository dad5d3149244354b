//! The slow attribute, named: summary.txt's first lines name the
//! attributes with the largest share of nix's own time in an instrumented
//! pass (with the call site where most of it went) and those with the most
//! function calls; compare names the attributes whose calls or share moved.
//! On real runs: the main job's, and a flake of three independent packages
//! whose second doubles its work.

mod common;

use std::path::Path;

use common::*;

#[test]
fn summary_names_the_slowest_attribute_and_where_its_time_went() {
    let shared = shared::main_run();
    let text = std::fs::read_to_string(shared.out.join("summary.txt")).unwrap();
    let head: Vec<&str> = text.lines().take(20).collect();
    let line = |start: &str| head.iter().find(|l| l.starts_with(start)).map(|l| l.to_string());
    // The hello flake's `default` is evaluated first and forces every package: all the work is under it,
    // and the work is `work` on flake.nix's line 10.
    let slowest = line("Slowest attributes in cold-instrumented").unwrap_or_else(|| panic!("{text}"));
    assert!(
        slowest.contains("packages.x86_64-linux.default ") && slowest.contains("at self:flake.nix:10:"),
        "{slowest}"
    );
    let prof = read_json(&shared.out.join("cold-instrumented/eval/nix-profile.json"));
    let default =
        prof["by_attribute"].as_array().unwrap().iter().find(|a| a["attr"] == "packages.x86_64-linux.default");
    let calls = default.unwrap()["calls"].as_u64().unwrap();
    let calls_line = line("Most function calls in cold-instrumented (exact): ").unwrap();
    let digits = calls.to_string();
    let grouped: Vec<&str> = digits.as_bytes().rchunks(3).rev().map(|c| std::str::from_utf8(c).unwrap()).collect();
    assert!(calls_line.contains(&format!("packages.x86_64-linux.default {}", grouped.join(","))), "{calls_line}");
    assert!(line("Slowest attributes in warm-instrumented").is_none(), "a warm pass evaluates nothing: {text}");
    shared.unchanged();
}

const FLAKE: &str = r#"{
  outputs = { self }:
    let
      system = "x86_64-linux";
      work = n: builtins.foldl' (acc: i: acc + (builtins.bitAnd (i * 7 + acc) 1023)) 0 (builtins.genList (i: i) n);
      mk = name: n: builtins.derivation {
        inherit name system;
        builder = "/bin/sh";
        args = [ "-c" "echo ${toString (work n)} > $out" ];
      };
    in
    {
      packages.${system} = { alpha = mk "alpha" 20000; beta = mk "beta" BETA; gamma = mk "gamma" 20000; };
    };
}
"#;

fn flake(dir: &Path, beta: u32) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("flake.nix"), FLAKE.replace("BETA", &beta.to_string())).unwrap();
}

#[test]
fn compare_names_the_attribute_whose_calls_moved() {
    let tmp = reachable_tmp("evalbench-attributes.");
    let (a, b, out) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("out"));
    flake(&a, 20_000);
    flake(&b, 40_000);
    run_ok(
        evalbench()
            // nix's profile is what is compared: perf and strace, which it
            // does not need, are off (the test took 47-54 s in CI with them).
            .args(["run", "--passes", "cold-instrumented", "--repeat", "1", "--no-perf", "--no-strace", "--flake"])
            .arg(&b)
            .arg("--baseline")
            .arg(&a)
            .arg("--out")
            .arg(&out)
            .arg("--lab-dir")
            .arg(tmp.path().join("lab")),
    );
    let total = |side: &str| {
        read_json(&out.join(side).join("cold-instrumented/eval/nix-profile.json"))["calls"].as_u64().unwrap()
    };
    let c = read_json(&out.join("compare.json"));
    let moved = c["passes"][0]["attributes"].as_array().unwrap_or_else(|| panic!("{}", c["passes"][0]));
    let calls = |m: &serde_json::Value| (m["a_calls"].as_u64().unwrap(), m["b_calls"].as_u64().unwrap());
    // Every call the profile gained is beta's; alpha and gamma, where named (their share moved), called as often.
    assert_eq!(moved[0]["attr"], "packages.x86_64-linux.beta", "{moved:?}");
    let (x, y) = calls(&moved[0]);
    assert_eq!(y - x, total("b") - total("a"), "{moved:?}");
    for m in &moved[1..] {
        let (x, y) = calls(m);
        assert_eq!(x, y, "only beta's work changed: {m}");
    }
    let text = std::fs::read_to_string(out.join("compare.txt")).unwrap();
    assert!(text.contains("attributes that moved") && text.contains("packages.x86_64-linux.beta"), "{text}");
    let b_summary = std::fs::read_to_string(out.join("b/summary.txt")).unwrap();
    let slowest = b_summary.lines().find(|l| l.starts_with("Slowest attributes in cold-instrumented (of 3;")).unwrap();
    assert!(slowest.contains(": packages.x86_64-linux.beta "), "twice the others' work comes first: {slowest}");
}
