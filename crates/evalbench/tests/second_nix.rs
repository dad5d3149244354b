//! A second Nix through the whole pipeline: `run --nix PATH` with Debian
//! 13's nix 2.26 (unpacked by scripts/test into target/nix-2.26): the lab's
//! worker and evaluators run it, the bundle's provenance names it, and its
//! counters (new ones included) are read and placed.

mod common;

use common::*;

#[test]
fn a_run_with_another_nix_records_the_nix_it_ran() {
    let Some(Some(second)) = nixes().into_iter().nth(1) else {
        // Under scripts/test, nixes() has failed already when it is missing.
        eprintln!("no second nix in target/nix-2.26 and no EVALBENCH_TEST_NIXES (scripts/test fetches it): nothing to run");
        return;
    };
    let tmp = reachable_tmp("evalbench-second-nix-test.");
    let out = tmp.path().join("out");
    let r = evalbench()
        .args(["run", "--passes", "cold-clean", "--repeat", "1", "--no-pcap", "--nix"])
        .arg(&second)
        .arg("--out")
        .arg(&out)
        .env_remove("EVALBENCH_NIX")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let run = read_json(&out.join("cold-clean/run.json"));
    assert_eq!(run["provenance"]["system"]["nix_version"], "nix (Nix) 2.26.3", "the nix that ran: {}", run["provenance"]);
    let stats = &run["nix_stats"];
    // Counters 2.8 does not have, each exact or judged like a time.
    for k in ["nrExprs", "gc.cycles", "time.cpu", "time.gc", "time.gcFraction"] {
        assert!(stats.get(k).is_some(), "{k}: {stats}");
    }
    for k in ["time.cpu", "time.gc", "time.gcFraction", "gc.cycles"] {
        assert!(evalbench_analyze::counters::NOISY.contains(&k), "{k} is judged like a time");
    }
    assert!(evalbench_analyze::counters::unit("time.gcFraction").is_some());
    // The same 101 attributes as with 2.8, as the worker saw them.
    assert_eq!(run["evaluation_metric"]["attrs"].as_u64(), Some(101), "{}", run["evaluation_metric"]);
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(flat(&summary).contains("nix_version nix (Nix) 2.26.3") && summary.contains("nrExprs"), "{summary}");
}
