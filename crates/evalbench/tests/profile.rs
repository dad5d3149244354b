//! Inside the evaluator, with the real nix: a hot spot planted in one
//! attribute is found by nix's own profile, an attribute that builds a large
//! list tops the memory list, and evaluators recycled past a memory cap give
//! the same derivations.

mod common;

use std::path::Path;

use common::*;

/// A flake of plain attributes, one of which (`hot`) spins in `spin` (line 4)
/// and one of which (`big`) builds a list. Here `big`'s list is short: `hot`
/// must be the slowest attribute in a clean pass too, and a list of 300,000
/// took a third of `hot`'s time idle and more than all of it under CI's load
/// (63 ms against `hot`'s 50 ms idle, in one clean run). At 30,000 it is
/// about a thirtieth of `hot`. Its memory is measured in a flake of its own,
/// with a list of a million (`big_adds_the_most_memory`).
const FLAKE: &str = concat!(
    r#"{ outputs = { self }: let
    system = "x86_64-linux";
    drv = name: v: builtins.derivation { inherit name system; builder = "/bin/sh"; args = [ "-c" "echo "#,
    r#"${toString v} > $out" ]; };
    spin = n: builtins.foldl' (a: i: a + i * i) 0 (builtins.genList (i: i) n);
    cheap = k: k + 1;
  in { packages.${system} = {
    a = drv "a" (cheap 1);
    b = drv "b" (cheap 2);
    hot = drv "hot" (spin 200000);
    big = drv "big" (builtins.length (builtins.genList (i: "item-${toString i}") 30000));
    c = drv "c" (cheap 3);
  }; }; }
"#
);

type Nix = Option<std::path::PathBuf>;

struct Run {
    drvs: Vec<String>,
    spans: Vec<serde_json::Value>,
    stats: std::path::PathBuf,
}

fn lab_eval(n: &Nix, flake: &Path, dir: &Path, extra: &[&str]) -> Run {
    lab_eval_env(n, flake, dir, extra, &[])
}

fn lab_eval_env(n: &Nix, flake: &Path, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let (trace, stats) = (dir.join("trace"), dir.join("eval"));
    let out = run_ok(
        with_nix(&mut evalbench(), n)
            .envs(env.iter().copied())
            .args(["lab", "eval", "--job", "t", "--flake"])
            .arg(flake)
            .arg("--nix-stats-dir")
            .arg(&stats)
            .args(extra)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .env("EVALBENCH_TRACE_DIR", &trace)
            .env("EVALBENCH_PROCESS", "eval"),
    );
    let drvs = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()?["drv"].as_str().map(String::from))
        .collect();
    Run { drvs, spans: span_lines(dir), stats }
}

fn flake(dir: &Path) -> std::path::PathBuf {
    let f = dir.join("flake");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(f.join("flake.nix"), FLAKE).unwrap();
    f
}

#[test]
fn a_planted_hot_spot_and_a_large_list_are_found() {
    for n in nixes() {
        a_planted_hot_spot_and_a_large_list_are_found_with(&n);
    }
}

fn a_planted_hot_spot_and_a_large_list_are_found_with(n: &Nix) {
    let tmp = tempfile::tempdir().unwrap();
    let f = flake(tmp.path());
    let r = lab_eval(n, &f, &tmp.path().join("run"), &["--count-calls", "--nix-trace"]);
    let prof = read_json(&r.stats.join("nix-profile.json"));
    // The top call site by self time is in `spin`, on line 4 of flake.nix.
    // Nix 2.26 gives the calls a primop makes (foldl' calling the lambda) no
    // call site, `«none»:0`: there the heaviest stack goes through line 4.
    let top = prof["by_position"][0]["position"].as_str().unwrap();
    let folded = std::fs::read_to_string(r.stats.join("nix-profile.folded")).unwrap();
    let heaviest = folded.lines().max_by_key(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).unwrap();
    if n.is_none() {
        assert!(top.starts_with("self:flake.nix:4:"), "top call site {top}: {:#}", prof["by_position"][0]);
    } else {
        assert_eq!(top, "«none»:0", "{:#}", prof["by_position"][0]);
    }
    assert!(heaviest.contains(";self:flake.nix:4:"), "{n:?}: heaviest stack {heaviest}");
    assert_eq!(prof["by_attribute"][0]["attr"], "packages.x86_64-linux.hot", "{:#}", prof["by_attribute"]);
    // The folded self times add up to the traced time.
    let sum: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    let traced = prof["traced_us"].as_u64().unwrap();
    assert!((sum as f64 - traced as f64).abs() <= 0.05 * traced as f64, "self {sum} µs against traced {traced} µs");
    assert!(
        folded.lines().any(|l| l.starts_with("packages.x86_64-linux.hot;") && l.contains(";self:flake.nix:4:")),
        "stacks are rooted at the attribute"
    );
    // The attribute that took longest is the same traced and untraced: the
    // traced pass's boundaries are nix's own times, not the reader's.
    let slowest = |spans: &[serde_json::Value]| {
        let r = spans.iter().filter(|s| s["name"] == "resolve").max_by_key(|s| s["dur_us"].as_i64().unwrap()).unwrap();
        (r["fields"]["attr"].as_str().unwrap().to_string(), r["dur_us"].as_i64().unwrap())
    };
    let clean = lab_eval(n, &f, &tmp.path().join("clean"), &[]);
    let (traced_top, clean_top) = (slowest(&r.spans), slowest(&clean.spans));
    assert_eq!(traced_top.0, "packages.x86_64-linux.hot", "traced: {traced_top:?}");
    assert_eq!(clean_top.0, traced_top.0, "clean {clean_top:?}, traced {traced_top:?}");
    big_adds_the_most_memory(n, tmp.path());
}

/// Memory: in a flake without the hot spot, `big` added the most resident memory.
fn big_adds_the_most_memory(n: &Nix, tmp: &Path) {
    // Memory: in a flake without the hot spot, `big` added the most resident memory.
    let m = tmp.join("mem");
    std::fs::create_dir_all(&m).unwrap();
    // A list of a million: nix 2.34 added 6.8 MiB for 300,000 on a busy
    // machine (12.2 idle; 2.8 and 2.26 about 22), too near the floor below.
    let mem_flake = FLAKE.replace("hot = drv \"hot\" (spin 200000);", "").replace(") 30000));", ") 1000000));");
    assert!(mem_flake.contains(") 1000000));") && !mem_flake.contains("spin 200000"), "{mem_flake}");
    std::fs::write(m.join("flake.nix"), mem_flake).unwrap();
    // nix's garbage collector off, so that nothing an attribute allocated
    // is handed back inside it. The reader charges each attribute what its
    // evaluator's anonymous memory grew by: the whole resident set shrank
    // by 27 MiB inside `big` in two CI runs, as the kernel took back file
    // pages under the machine's memory pressure; anonymous pages stay.
    // The memory is read from /proc when a marker is read: where the reader
    // fell behind until nix had gone past `big` (nix 2.34 on a loaded CI
    // machine, all four; nix 2.8 once, `big` alone), `big` has no reading,
    // which is no measurement of it; evaluated again then.
    let mut spans = Vec::new();
    for attempt in 0..4 {
        let r = lab_eval_env(n, &m, &tmp.join(format!("mem-run{attempt}")), &[], &[("GC_DONT_GC", "1")]);
        // Clean: no profile.
        assert!(!r.stats.join("nix-profile.folded").exists(), "a clean run is not profiled");
        spans = r.spans;
        if spans.iter().any(|s| {
            s["name"] == "resolve"
                && s["fields"]["attr"] == "packages.x86_64-linux.big"
                && s["fields"]["rss_delta_kb"].is_i64()
        }) {
            break;
        }
        eprintln!("{n:?}: evaluation {attempt}: big's memory was not read while nix ran");
    }
    let mut resolves: Vec<(String, i64)> = spans
        .iter()
        .filter(|s| s["name"] == "resolve")
        .map(|s| {
            (s["fields"]["attr"].as_str().unwrap_or("").to_string(), s["fields"]["rss_delta_kb"].as_i64().unwrap_or(0))
        })
        .collect();
    assert_eq!(resolves.len(), 4, "{resolves:?}");
    resolves.sort_by_key(|(_, kb)| std::cmp::Reverse(*kb));
    assert_eq!(resolves[0].0, "packages.x86_64-linux.big", "{n:?}: `big` added the most memory: {resolves:?}");
    // By hand it adds about 22 MiB; the others next to nothing.
    eprintln!("{n:?}: {resolves:?}");
    assert!(resolves[0].1 > 10_000 && resolves[1].1 < resolves[0].1 / 2, "{n:?}: {resolves:?}");
}

/// `hot` spins shallowly; `deep` recurses 80 calls deep (past the profile's
/// 32) and does more work at the bottom, in four functions (lines 5 to 8).
const DEEP: &str = concat!(
    r#"{ outputs = { self }: let
    system = "x86_64-linux";
    drv = name: v: builtins.derivation { inherit name system; builder = "/bin/sh"; args = [ "-c" "echo "#,
    r#"${toString v} > $out" ]; };
    spin = n: builtins.foldl' (a: i: a + i * i) 0 (builtins.genList (i: i) n);
    w1 = n: builtins.foldl' (a: i: a + i) 0 (builtins.genList (i: i) n);
    w2 = n: builtins.foldl' (a: i: a - i) 0 (builtins.genList (i: i) n);
    w3 = n: builtins.foldl' (a: i: a + 2 * i) 0 (builtins.genList (i: i) n);
    w4 = n: builtins.foldl' (a: i: a + 3 * i) 0 (builtins.genList (i: i) n);
    deep = d: if d == 0 then w1 60000 + w2 60000 + w3 60000 + w4 60000 else deep (d - 1);
  in { packages.${system} = {
    hot = drv "hot" (spin 150000);
    deep = drv "deep" (deep 80);
  }; }; }
"#
);

#[test]
fn calls_past_the_depth_cap_are_in_a_truncation_frame_not_charged_to_a_site() {
    for n in nixes() {
        calls_past_the_depth_cap_are_in_a_truncation_frame_not_charged_to_a_site_with(&n);
    }
}

fn calls_past_the_depth_cap_are_in_a_truncation_frame_not_charged_to_a_site_with(n: &Nix) {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("deep");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(f.join("flake.nix"), DEEP).unwrap();
    let r = lab_eval(n, &f, &tmp.path().join("run"), &["--nix-trace"]);
    let prof = read_json(&r.stats.join("nix-profile.json"));
    let depth = prof["max_depth"].as_u64().unwrap();
    let cut = format!("[deeper than {depth} call sites]");
    let mut leaves: std::collections::BTreeMap<String, u64> = Default::default();
    let mut total = 0;
    for l in std::fs::read_to_string(r.stats.join("nix-profile.folded")).unwrap().lines() {
        let (stack, us) = l.rsplit_once(' ').unwrap();
        let us: u64 = us.parse().unwrap();
        total += us;
        *leaves.entry(stack.rsplit(';').next().unwrap().to_string()).or_default() += us;
        assert!(stack.split(';').count() <= depth as usize + 2, "root, {depth} sites and the cut: {stack}");
    }
    // The flame graph's widest leaf of a call site is the call-site table's top.
    let widest = leaves.iter().filter(|(k, _)| **k != cut).max_by_key(|(_, us)| **us).unwrap();
    let top = &prof["by_position"][0];
    assert_eq!(widest.0, top["position"].as_str().unwrap(), "{leaves:?}\n{top}");
    // The cut frame carries what the deep calls spent: at least the four
    // functions at the bottom of the recursion.
    let bottom: u64 = prof["by_position"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            ["self:flake.nix:5:", "self:flake.nix:6:", "self:flake.nix:7:", "self:flake.nix:8:"]
                .iter()
                .any(|l| p["position"].as_str().unwrap().starts_with(l))
        })
        .map(|p| p["self_us"].as_u64().unwrap())
        .sum();
    let carried = leaves[&cut];
    assert!(bottom > 0 && carried >= bottom, "cut frame {carried} µs, the bottom's sites {bottom} µs");
    assert!(carried < total, "{carried} of {total} µs");
}

#[test]
fn positions_name_the_input_they_are_in() {
    for n in nixes() {
        positions_name_the_input_they_are_in_with(&n);
    }
}

/// A flake of two path inputs, each lib's function evaluated by one package
/// (a format string, so a macro: the inputs' paths go in).
macro_rules! top_with_inputs {
    () => {
        concat!(
            r#"{{ inputs.alpha.url = "path:{}"; inputs.beta.url = "path:{}";
  outputs = {{ self, alpha, beta }}: let system = "x86_64-linux";
    drv = name: v: builtins.derivation {{ inherit name system; builder = "/bin/sh"; args = [ "-c" "echo "#,
            r#"${{toString v}} > $out" ]; }};
  in {{ packages.${{system}} = {{ x = drv "x" (alpha.lib.sq 20000); y = drv "y" (beta.lib.cube 20000); }}; }}; }}
"#
        )
    };
}

fn positions_name_the_input_they_are_in_with(n: &Nix) {
    // Two inputs that both have a lib/default.nix, and the flake that uses both.
    let tmp = reachable_tmp("evalbench-inputs-test.");
    let lib = |name: &str, body: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("flake.nix"), "{ outputs = { self }: { lib = import ./lib; }; }\n").unwrap();
        std::fs::write(d.join("lib/default.nix"), body).unwrap();
        d
    };
    let (a, b) = (
        lib("a", "{ sq = n: builtins.foldl' (a: i: a + i * i) 0 (builtins.genList (i: i) n); }\n"),
        lib("b", "{ cube = n: builtins.foldl' (a: i: a + i * i * i) 0 (builtins.genList (i: i) n); }\n"),
    );
    let top = tmp.path().join("top");
    std::fs::create_dir_all(&top).unwrap();
    std::fs::write(top.join("flake.nix"), format!(top_with_inputs!(), a.display(), b.display())).unwrap();
    let r = lab_eval(n, &top, &tmp.path().join("run"), &["--nix-trace", "--count-calls"]);
    let prof = read_json(&r.stats.join("nix-profile.json"));
    let sites: Vec<&str> =
        prof["by_position"].as_array().unwrap().iter().map(|p| p["position"].as_str().unwrap()).collect();
    for input in ["alpha", "beta"] {
        assert!(sites.iter().any(|s| s.starts_with(&format!("{input}:lib/default.nix:1:"))), "{input}: {sites:?}");
    }
    assert!(sites.iter().any(|s| s.starts_with("self:flake.nix:")), "{sites:?}");
    assert!(!sites.iter().any(|s| s.starts_with("lib/default.nix")), "no position without its input: {sites:?}");
    // nix's call counts name them the same way.
    let stats = evalbench_bundle::nix_stats::read(&tmp.path().join("run")).unwrap().unwrap();
    let functions: Vec<&String> = stats.calls.functions.keys().collect();
    for input in ["alpha", "beta"] {
        assert!(
            functions.iter().any(|f| f.starts_with(&format!("{input}:lib/default.nix:1:"))),
            "{input}: {functions:?}"
        );
    }
    // decode nix-trace names them from the inputs kept beside the profile... and from the flake.
    let folded = r.stats.join("nix-profile.folded");
    assert!(std::fs::read_to_string(&folded).unwrap().contains(";alpha:lib/default.nix:1:"));
    let inputs = read_json(&r.stats.join("nix-inputs.json"));
    let (hashes, paths): (Vec<_>, Vec<_>) =
        inputs.as_object().unwrap().iter().partition(|(k, _)| k.starts_with("narHash:sha256-"));
    assert_eq!(
        paths.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["alpha", "beta", "self"],
        "a store path each: {inputs}"
    );
    // And each one's locked narHash, which names what Nix 2.34 shows by locked reference.
    let mut locked: Vec<&str> = hashes.iter().map(|(_, v)| v.as_str().unwrap()).collect();
    locked.sort();
    assert_eq!(locked, ["alpha", "beta", "self"], "a narHash each: {inputs}");
    // A trace nix wrote by itself, named from the flake.
    let raw = tmp.path().join("raw.trace");
    let out = nix_command(n)
        .args(["eval", "--trace-function-calls", "--raw"])
        .arg(format!("path:{}#packages.x86_64-linux.x.drvPath", top.display()))
        .env("NIX_CONFIG", "experimental-features = nix-command flakes\nsubstituters =")
        .stderr(std::fs::File::create(&raw).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    let decoded = run_ok(evalbench().args(["decode", "nix-trace", "--json", "--flake"]).arg(&top).arg(&raw));
    let last: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&decoded.stdout).lines().last().unwrap()).unwrap();
    let sites: Vec<&str> =
        last["summary"]["by_position"].as_array().unwrap().iter().map(|p| p["position"].as_str().unwrap()).collect();
    assert!(sites.iter().any(|s| s.starts_with("alpha:lib/default.nix:1:")), "{sites:?}");
}

#[test]
fn evaluators_past_a_memory_cap_are_recycled_with_the_same_derivations() {
    for n in nixes() {
        evaluators_past_a_memory_cap_are_recycled_with_the_same_derivations_with(&n);
    }
}

fn evaluators_past_a_memory_cap_are_recycled_with_the_same_derivations_with(n: &Nix) {
    let tmp = tempfile::tempdir().unwrap();
    let f = flake(tmp.path());
    let whole = lab_eval(n, &f, &tmp.path().join("whole"), &[]);
    // A cap below any evaluator's RSS: every attribute but the last ends one.
    let cap = lab_eval(n, &f, &tmp.path().join("capped"), &["--max-rss", "1000000"]);
    assert_eq!(cap.drvs, whole.drvs, "recycling changes nothing of what is evaluated");
    let ends: Vec<&str> =
        cap.spans.iter().filter(|s| s["name"] == "evaluator").map(|s| s["fields"]["end"].as_str().unwrap()).collect();
    assert_eq!(ends.iter().filter(|e| **e == "recycled").count(), 4, "{ends:?}");
    assert_eq!(ends.iter().filter(|e| **e == "done").count(), 1, "{ends:?}");
    let froms: std::collections::BTreeSet<u64> =
        cap.spans.iter().filter(|s| s["name"] == "evaluator").map(|s| s["fields"]["from"].as_u64().unwrap()).collect();
    assert_eq!(froms, (0..5).collect(), "each new evaluator continues with the next attribute");
    let whole_ends: Vec<&str> =
        whole.spans.iter().filter(|s| s["name"] == "evaluator").map(|s| s["fields"]["end"].as_str().unwrap()).collect();
    assert_eq!(whole_ends, ["done"]);
}
