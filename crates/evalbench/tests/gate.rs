//! The gate with the real nix: red names every failure, green measures
//! every step, K steps at once only within the memory budget, and the run
//! is a bundle that summarize, inspect and compare read.

mod common;

use std::path::Path;

use common::*;

fn machines_flake(dir: &Path) -> String {
    run_ok(
        evalbench()
            .args(["lab", "gen-flake", "--machines", "4", "--packages", "12", "--work", "2000", "--out"])
            .arg(dir),
    );
    dir.display().to_string()
}

fn step_spans(bundle_pass: &Path) -> Vec<(i64, i64, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(bundle_pass.join("trace")).unwrap() {
        for l in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            let s: serde_json::Value = serde_json::from_str(l).unwrap();
            let ts = s["ts_us"].as_i64().unwrap();
            v.push((ts, ts + s["dur_us"].as_i64().unwrap(), s["fields"]["step"].as_str().unwrap().to_string()));
        }
    }
    v.sort();
    v
}

#[test]
fn the_self_test_is_red_and_names_both_failures() {
    let out = run_ok(evalbench().args(["gate", "--self-test", "--quiet"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAILED machine broken: error: machine broken on purpose"), "{text}");
    assert!(text.contains("FAILED check fails:") && text.contains("this check fails on purpose"), "{text}");
    assert!(text.contains("self-test passed"));
}

#[test]
fn a_green_gate_measures_every_step_and_keeps_to_its_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let flake = machines_flake(&tmp.path().join("flake"));
    let out1 = tmp.path().join("k2");
    let r = run_ok(
        evalbench().args(["gate", "--quiet", "--machines", "machines", "--jobs", "2", "--out"]).arg(&out1).arg(&flake),
    );
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("gate GREEN: 4 steps passed"), "{text}");
    let run = read_json(&out1.join("gate/run.json"));
    let steps = run["gate"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    for s in steps {
        assert!(s["run"]["wall_s"].as_f64().unwrap() > 0.0);
        assert!(s["run"]["peak_bytes"].as_u64().unwrap() > 1 << 20, "{s}");
        assert_eq!(s["run"]["exit"], 0);
    }
    assert_eq!(step_spans(&out1.join("gate")).len(), 4);
    // nix counts each step's work: its statistics in the bundle, summed in run.json.
    let calls: u64 = steps
        .iter()
        .map(|s| {
            let f = out1
                .join("gate/eval")
                .join(format!("nix-stats.{}.json", s["step"]["name"].as_str().unwrap().replace(' ', "_")));
            read_json(&f)["nrFunctionCalls"].as_u64().unwrap()
        })
        .sum();
    assert!(calls > 0);
    assert_eq!(run["nix_stats"]["nrFunctionCalls"].as_u64(), Some(calls));
    // Later runs find the machines in nix's eval cache, and say so. (Two
    // writers at once can lose a cache write: sqlite has one writer. A serial
    // run fills what is missing.)
    let again = run_ok(evalbench().args(["gate", "--quiet", "--machines", "machines", "--out"]).arg(&out1).arg(&flake));
    assert!(String::from_utf8_lossy(&again.stdout).matches("eval cache hit").count() >= 2);
    let third = run_ok(evalbench().args(["gate", "--quiet", "--machines", "machines", "--out"]).arg(&out1).arg(&flake));
    let text = String::from_utf8_lossy(&third.stdout);
    assert_eq!(text.matches("eval cache hit").count(), 4, "{text}");
    let run3 = read_json(&out1.join("gate.3/run.json"));
    assert!(run3["gate"]["steps"].as_array().unwrap().iter().all(|s| s["eval_cache"] == "hit"));
    // The state file remembers each step's peak for the next run's budget.
    let state = read_json(&out1.join("gate-state.json"));
    assert_eq!(state["peaks"].as_object().unwrap().len(), 4);
    // A budget that holds one step at a time: no two steps overlap, whatever --jobs says.
    let out2 = tmp.path().join("tight");
    std::fs::create_dir_all(&out2).unwrap();
    std::fs::copy(out1.join("gate-state.json"), out2.join("gate-state.json")).unwrap();
    run_ok(
        evalbench()
            .args([
                "gate",
                "--quiet",
                "--machines",
                "machines",
                "--jobs",
                "4",
                "--mem-budget",
                "1M",
                "--eval-cache",
                "off",
                "--out",
            ])
            .arg(&out2)
            .arg(&flake),
    );
    let spans = step_spans(&out2.join("gate"));
    for w in spans.windows(2) {
        assert!(w[1].0 >= w[0].1, "{} started before {} ended", w[1].2, w[0].2);
    }
    assert_eq!(read_json(&out2.join("gate/run.json"))["gate"]["eval_cache"], false);
    a_gate_is_a_bundle(&out1, &out2, tmp.path());
}

/// The gate is a bundle: summarized, inspected, compared.
fn a_gate_is_a_bundle(out1: &Path, out2: &Path, tmp: &Path) {
    // The gate is a bundle: summarized, inspected, compared.
    assert!(read_json(&out1.join("summary.json"))["passes"].as_array().is_some());
    run_ok(evalbench().arg("inspect").arg(out1).arg("-o").arg(tmp.join("report")));
    let html = std::fs::read_to_string(tmp.join("report/index.html")).unwrap();
    assert!(html.contains("machine_m0") || html.contains("machine m0"));
    let cmp = run_ok(evalbench().args(["compare", "--json"]).arg(out1).arg(out2));
    let v: serde_json::Value = serde_json::from_slice(&cmp.stdout).unwrap();
    assert_eq!(v["passes"][0]["pass_a"], "gate");
    let counters = v["passes"][0]["counters"].as_array().unwrap();
    // gate, gate.2 and gate.3 of out1 are its runs, and the later ones were
    // answered from nix's eval cache: fewer calls, so not one exact count.
    let calls = counters.iter().find(|c| c["name"] == "nrFunctionCalls").unwrap();
    assert_eq!(calls["exact"], false, "{calls}");
    assert!(calls["text"].as_str().unwrap().contains("differs between repeats"), "{calls}");
    assert_eq!(v["passes"][0]["wall"]["kind"], "no noise estimate");
}

#[test]
fn a_state_file_that_cannot_be_written_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let flake = machines_flake(&tmp.path().join("flake"));
    let out = tmp.path().join("out");
    // A directory where the state file goes: the write must fail, and say so.
    std::fs::create_dir_all(out.join("gate-state.json/keep")).unwrap();
    let r = evalbench()
        .args(["gate", "--quiet", "--machines", "machines", "--out"])
        .arg(&out)
        .arg(&flake)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("gate-state.json"), "{err}");
    assert!(out.join("gate-state.json/keep").is_dir(), "nothing in the way was touched");
}
