//! Nix's own evaluation profiler (Nix >= 2.30; Debian unstable's, which
//! scripts/test fetches) read by `decode nix-profile`, set beside
//! evalbench's exact profile of the same flake: both find the planted hot
//! function first.

mod common;

use common::*;

/// `fib` is the hot spot (line 3), `cheap` a little work (line 4).
const PLANTED: &str = r#"{
  outputs = { self }: let
    fib = n: if n < 2 then n else fib (n - 1) + fib (n - 2);
    cheap = builtins.genList (i: i * 2) 500;
  in {
    value = fib 24 + builtins.length cheap;
  };
}
"#;

fn nix_eval(
    nix: &std::path::Path,
    flake: &std::path::Path,
    extra: &[&str],
    stderr: std::process::Stdio,
) -> std::process::Output {
    let out = std::process::Command::new(nix)
        .arg("eval")
        .args(extra)
        .arg(format!("path:{}#value", flake.display()))
        .env("NIX_CONFIG", "experimental-features = nix-command flakes\nsubstituters =")
        .stderr(stderr)
        .output()
        .unwrap();
    assert!(out.status.success(), "nix eval {extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn nix_s_sampled_profile_and_the_exact_one_both_find_the_planted_function() {
    let nix = profiling_nix();
    let tmp = tempfile::tempdir().unwrap();
    // The profiles are written outside the flake: inside, they would be part of its source.
    let (flake, at) = (tmp.path().join("flake"), tmp.path().join("profiles"));
    std::fs::create_dir_all(&flake).unwrap();
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(flake.join("flake.nix"), PLANTED).unwrap();
    let folded = at.join("nix.profile");
    let f = folded.display().to_string();
    let opts = [
        "--option",
        "eval-profiler",
        "flamegraph",
        "--option",
        "eval-profile-file",
        &f,
        "--option",
        "eval-profiler-frequency",
        "999",
    ];
    nix_eval(&nix, &flake, &opts, std::process::Stdio::piped());
    let trace = at.join("nix.trace");
    nix_eval(&nix, &flake, &["--trace-function-calls"], std::fs::File::create(&trace).unwrap().into());

    // nix's sampled view, positions named by the flake's inputs.
    let decoded = run_ok(
        evalbench()
            .args(["decode", "nix-profile", "--json", "--flake"])
            .arg(&flake)
            .arg(&folded)
            .env("EVALBENCH_NIX", &nix),
    );
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&decoded.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (stacks, summary) = (&lines[..lines.len() - 1], &lines[lines.len() - 1]["summary"]);
    let samples = summary["samples"].as_u64().unwrap();
    assert!(samples >= 10, "a sampled profile of a second or so at 999 Hz: {summary}");
    let summed: u64 = stacks.iter().map(|s| s["samples"].as_u64().unwrap()).sum();
    assert_eq!(summed, samples, "every stack's samples, summed once");
    // The file as nix wrote it: the same samples, counted here apart from the tool.
    let raw: u64 = std::fs::read_to_string(&folded)
        .unwrap()
        .lines()
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert_eq!(raw, samples);
    // The planted function leads by its samples with what it calls: its own
    // share and that of `<`, which it calls, split near evenly (17 and 19
    // of 49 samples in one CI run, the other way round in others).
    let by_fn = summary["by_function"].as_array().unwrap();
    let total = |f: &serde_json::Value| f["total_samples"].as_u64().unwrap();
    let top_fn = by_fn.iter().max_by_key(|f| total(f)).unwrap();
    assert_eq!(top_fn["name"], "fib", "the planted function leads: {summary}");
    assert!(total(top_fn) * 10 >= samples * 8, "fib holds most of the samples: {summary}");
    assert!(
        by_fn.iter().take(2).any(|f| f["name"] == "fib"),
        "and is among the two with most samples of their own: {summary}"
    );
    let top_pos = summary["by_position"][0]["name"].as_str().unwrap();
    assert!(top_pos.starts_with("self:flake.nix:3:"), "a call site in fib's body, in the flake itself: {summary}");

    // evalbench's exact view of the same evaluation, from nix's function trace.
    let exact = run_ok(
        evalbench()
            .args(["decode", "nix-trace", "--json", "--flake"])
            .arg(&flake)
            .arg(&trace)
            .env("EVALBENCH_NIX", &nix),
    );
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&exact.stdout).lines().last().unwrap()).unwrap();
    let first = last["summary"]["by_position"][0]["position"].as_str().unwrap();
    assert!(first.starts_with("self:flake.nix:3:"), "the exact profile's first call site is in fib too: {last}");

    the_text_view_and_a_trace_refused(&folded, &trace, samples);
}

/// The text view names what it counts; a trace is not a sampled profile.
fn the_text_view_and_a_trace_refused(folded: &std::path::Path, trace: &std::path::Path, samples: u64) {
    // The text view names what it counts; a trace is not a sampled profile.
    let text = String::from_utf8(run_ok(evalbench().args(["decode", "nix-profile"]).arg(folded)).stdout).unwrap();
    assert!(text.contains(&format!("{samples} samples")) && text.contains("primop lessThan"), "{text}");
    let wrong = evalbench().args(["decode", "nix-profile"]).arg(trace).output().unwrap();
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(2), "{said}");
    assert!(
        said.contains("looks like nix's function trace (decode nix-trace)")
            && said.contains(&trace.display().to_string()),
        "{said}"
    );
}

/// The lab's evaluator asks a nix that has the profiler for its own
/// sampled profile in an instrumented evaluation, beside the trace's:
/// `eval/nix-eval-profiler.folded`, named by the inputs kept beside it.
#[test]
fn an_instrumented_evaluation_keeps_nix_s_own_profile_where_nix_has_one() {
    const PACKAGES: &str = concat!(
        r#"{ outputs = { self }: let
    fib = n: if n < 2 then n else fib (n - 1) + fib (n - 2);
    drv = name: v: derivation { inherit name; system = "x86_64-linux"; builder = "/bin/sh"; args = [ "#,
        r#""-c" "echo ${toString v} > $out" ]; };
  in { packages.x86_64-linux = { hot = drv "hot" (fib 24); cold = drv "cold" 1; }; };
}
"#
    );
    let tmp = tempfile::tempdir().unwrap();
    let flake = tmp.path().join("flake");
    std::fs::create_dir_all(&flake).unwrap();
    std::fs::write(flake.join("flake.nix"), PACKAGES).unwrap();
    for nix in [None, Some(profiling_nix())] {
        let dir = tmp.path().join(if nix.is_some() { "sampled" } else { "default" });
        let stats = dir.join("eval");
        run_ok(
            with_nix(&mut evalbench(), &nix)
                .args(["lab", "eval", "--job", "t", "--nix-trace", "--flake"])
                .arg(&flake)
                .arg("--nix-stats-dir")
                .arg(&stats)
                .env("XDG_CACHE_HOME", dir.join("cache"))
                .env("EVALBENCH_TRACE_DIR", dir.join("trace"))
                .env("EVALBENCH_PROCESS", "eval"),
        );
        let kept = stats.join("nix-eval-profiler.folded");
        assert!(stats.join("nix-profile.json").is_file(), "{nix:?}: the trace's profile, as before");
        let left: Vec<_> = std::fs::read_dir(&stats)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".part"))
            .collect();
        assert!(left.is_empty(), "{nix:?}: each process's file joined and removed: {left:?}");
        let Some(n) = &nix else {
            assert!(!kept.exists(), "nix {:?} has no eval profiler", nix_version(&None));
            continue;
        };
        let decoded = run_ok(evalbench().args(["decode", "nix-profile", "--json"]).arg(&kept).env("EVALBENCH_NIX", n));
        let last: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&decoded.stdout).lines().last().unwrap()).unwrap();
        let s = &last["summary"];
        assert!(s["samples"].as_u64().unwrap() >= 10, "{s}");
        assert_eq!(s["by_function"][0]["name"], "fib", "{s}");
        // Named by nix-inputs.json, kept beside it.
        assert!(s["by_position"][0]["name"].as_str().unwrap().starts_with("self:flake.nix:2:"), "{s}");
    }
}
