//! Evaluators recycled past `--eval-max-rss` are killed, and statistics one
//! wrote before the kill landed are set aside: a real run says how many
//! evaluators' work its counters lack, in summary.txt, summary.json and the
//! page.

mod common;

use common::*;

#[test]
fn the_counters_say_how_many_recycled_evaluators_they_lack() {
    let tmp = reachable_tmp("evalbench-recycled-test.");
    let out = tmp.path().join("out");
    // A cap below any evaluator's RSS: every attribute but the last ends one.
    let r = evalbench()
        .args(["run", "--passes", "cold-clean", "--no-pcap", "--repeat", "1", "--eval-max-rss", "1M", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let summary = read_json(&out.join("summary.json"));
    let pass = summary["nix_stats"].as_array().unwrap().iter().find(|p| p["pass"] == "cold-clean").unwrap().clone();
    let recycled = pass["recycled_evaluators"].as_u64().unwrap();
    // The hello flake has 101 attributes: 100 evaluators were recycled.
    assert_eq!(recycled, 100, "{pass}");
    let files = std::fs::read_dir(out.join("cold-clean/eval"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("nix-stats.0"))
        .count();
    assert_eq!(files, 1, "only the last evaluator's statistics are counted");
    // nix runs ahead of its reader: one may finish before its kill lands.
    // Its file is kept, under a name the counters do not read.
    for e in std::fs::read_dir(out.join("cold-clean/eval")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with("recycled.") || name.starts_with("recycled.nix-stats.0."), "{name}");
    }
    let text = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(text.contains("not counted in cold-clean: the work of 100 evaluators recycled past --eval-max-rss"), "{text}");
    let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
    assert!(page.contains("Not counted in cold-clean: the work of 100 evaluators recycled"), "the page says it too");
}
