//! The lab's graph walks are exact: what the server's recursive walk
//! records as an evaluation's closure, and what the same walk finds from a
//! single derivation, equal closures computed here from the generator's own
//! graph (`shape::generate`), in both forms of the walk, at both generated
//! shapes and two sizes. The edges are the lab's: written by its server from
//! the `.drv` files a real nix wrote.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;
use evalbench_lab::setting::GraphWalk;

struct Lab(std::path::PathBuf);

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
    }
}

fn sql(dir: &Path, q: &str) -> Vec<String> {
    let out = run_ok(evalbench().args(["lab", "sql", "--lab-dir"]).arg(dir).arg(q));
    String::from_utf8(out.stdout).unwrap().lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

/// The package index a derivation's name carries, in either shape.
fn index_of(name: &str) -> u32 {
    let rest = name
        .strip_prefix("hello-")
        .or_else(|| name.strip_prefix("pkg"))
        .unwrap_or_else(|| panic!("not a generated package: {name}"));
    rest.split('-').next().unwrap().parse().unwrap_or_else(|_| panic!("no index in {name}"))
}

/// What `i` needs, itself included, from the generator's graph alone.
fn closure(g: &evalbench_lab::shape::Graph, i: u32) -> BTreeSet<u32> {
    let mut seen = BTreeSet::from([i]);
    let mut todo = vec![i];
    while let Some(k) = todo.pop() {
        for &d in &g.deps[k as usize] {
            if seen.insert(d) {
                todo.push(d);
            }
        }
    }
    seen
}

#[test]
fn the_closure_walks_equal_the_generator_s_own_closures_in_both_forms() {
    let tmp = reachable_tmp("evalbench-graph-walk.");
    let dir = tmp.path().join("lab");
    let _lab = Lab(dir.clone());
    // One lab, four flakes in turn, so that evaluations share its database
    // (as a CI server's do) and the server's form alternates.
    let cases = [
        ("flat", 30, GraphWalk::Join),
        ("flat", 300, GraphWalk::Lateral),
        ("nixpkgs", 30, GraphWalk::Lateral),
        ("nixpkgs", 300, GraphWalk::Join),
    ];
    for (shape, n, form) in cases {
        let what = format!("{shape} x{n}, the server's walk {}", form.as_str());
        let flake = tmp.path().join(format!("{shape}-{n}"));
        run_ok(
            evalbench()
                .args(["lab", "gen-flake", "--work", "1", "--shape", shape, "--packages", &n.to_string(), "--out"])
                .arg(&flake),
        );
        run_ok(
            evalbench()
                .args(["lab", "up", "--lab-dir"])
                .arg(&dir)
                .arg("--flake")
                .arg(&flake)
                .args(["--lab-setting", &format!("graph_walk={}", form.as_str())]),
        );
        let out = run_ok(evalbench().args(["lab", "evaluate", "--timeout-s", "300", "--lab-dir"]).arg(&dir));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let id = v["evaluation_id"].as_str().unwrap().to_string();
        let graph = evalbench_lab::shape::generate(n, evalbench_lab::shape::DEFAULT_SEED);

        // Every attribute is a package: the evaluation needs all n, and nothing else.
        let recorded: Vec<String> = sql(
            &dir,
            &format!(
                "SELECT d.name FROM evaluation_closure c JOIN derivation d ON d.id = c.derivation WHERE c.evaluation = \
                    '{id}'"
            ),
        );
        let got: BTreeSet<u32> = recorded.iter().map(|s| index_of(s)).collect();
        assert_eq!(recorded.len(), n as usize, "{what}: one row per derivation");
        assert_eq!(got, (0..n).collect(), "{what}: the recorded closure");
        assert_eq!(
            sql(&dir, "SELECT count(*) FROM derivation WHERE NOT walked"),
            ["0"],
            "{what}: every dependency named was recorded"
        );

        // From single derivations: the bootstrap's end (a hub), the last, and a spread between.
        let paths: BTreeMap<u32, String> = sql(
            &dir,
            &format!(
                "SELECT d.name || ' ' || d.drv_path FROM evaluation_closure c JOIN derivation d ON d.id = c.derivation \
                    WHERE c.evaluation = '{id}'"
            ),
        )
        .iter()
        .map(|l| {
            let (name, path) = l.split_once(' ').unwrap();
            (index_of(name), path.to_string())
        })
        .collect();
        let by_path: BTreeMap<&str, u32> = paths.iter().map(|(i, p)| (p.as_str(), *i)).collect();
        let picks: BTreeSet<u32> =
            [evalbench_lab::shape::BOOT - 1, n - 1].into_iter().chain((0..n).step_by((n / 7) as usize)).collect();
        for i in picks {
            let want = closure(&graph, i);
            for walk in [GraphWalk::Join, GraphWalk::Lateral] {
                // `lab walk`: the server's own statement (walks::closure_of_paths) in the form asked.
                let out = run_ok(
                    evalbench().args(["lab", "walk", "--form", walk.as_str(), "--lab-dir"]).arg(&dir).arg(&paths[&i]),
                );
                let found: BTreeSet<u32> = String::from_utf8(out.stdout).unwrap().lines().map(|p| by_path[p]).collect();
                assert_eq!(found, want, "{what}: the {} walk from package {i}", walk.as_str());
            }
        }
    }
}

/// The form of every `eval_closure` span in a pass directory's server trace.
fn forms(pass: &Path) -> Vec<String> {
    span_lines(pass)
        .iter()
        .filter(|v| v["process"] == "server" && v["name"] == "eval_closure")
        .map(|v| v["fields"]["form"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_baseline_lab_setting_measures_both_forms_interleaved_on_one_flake() {
    let tmp = reachable_tmp("evalbench-graph-walk-ab.");
    let (out, lab) = (tmp.path().join("out"), tmp.path().join("lab"));
    let res = evalbench()
        .args(["run", "--passes", "cold-clean", "--repeat", "3", "--warmup", "0", "--no-report", "--out"])
        .arg(&out)
        .arg("--lab-dir")
        .arg(&lab)
        .args(["--baseline-lab-setting", "graph_walk=join", "--lab-setting", "graph_walk=lateral"])
        .output()
        .unwrap();
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    let (a, b) = (out.join("a"), out.join("b"));
    // Each side's setting is in its provenance, and goes with it to the other
    // side's lab when the sides cross (round 2): every walk of a side is in its form.
    for (side, form) in [(&a, "join"), (&b, "lateral")] {
        for pass in ["cold-clean", "cold-clean.2", "cold-clean.3"] {
            let run = read_json(&side.join(pass).join("run.json"));
            assert_eq!(run["provenance"]["system"]["lab_settings"]["graph_walk"], form, "{}/{pass}", side.display());
            assert_eq!(forms(&side.join(pass)), [form], "{}/{pass}: one walk, in the side's form", side.display());
        }
        assert_eq!(
            read_json(&side.join("cold-clean.2/run.json"))["instance"],
            if form == "join" { 1 } else { 0 },
            "round 2 is crossed"
        );
    }
    // compare names the difference, and the walk is one statement on both sides.
    let text = std::fs::read_to_string(out.join("compare.txt")).unwrap();
    assert!(flat(&text).contains("lab_settings"), "{text}");
    let cmp = read_json(&out.join("compare.json"));
    let st = |k: &str| {
        cmp["passes"][0][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["what"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(st("statements").iter().any(|w| w == "/* eval_closure */"), "{:?}", st("statements"));
    assert!(
        !st("statements_only_a").iter().chain(st("statements_only_b").iter()).any(|w| w.contains("RECURSIVE")),
        "{cmp}"
    );
}
