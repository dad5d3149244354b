//! Other nixes through the whole pipeline: `run --nix PATH` with Debian
//! 13's nix 2.26 and Debian unstable's (2.34), which scripts/test unpacks
//! into target/: the lab's worker and evaluators run each, the bundle's
//! provenance names it, and its counters (new ones included) are read and
//! placed. The newest also runs a counted pass: Valgrind follows its
//! wrapper script into its own loader and counts nix as the process it ends as.

mod common;

use common::*;

#[test]
fn a_run_with_another_nix_records_the_nix_it_ran() {
    let others: Vec<std::path::PathBuf> = nixes().into_iter().flatten().collect();
    assert!(
        others.len() >= 2,
        "nix 2.26 and unstable's in target/ (scripts/test fetches them: scripts/lib.sh, need_second_nix and \
            need_unstable_nix); found {others:?}"
    );
    for nix in others {
        let said =
            String::from_utf8(nix_command(&Some(nix.clone())).arg("--version").output().unwrap().stdout).unwrap();
        let version = said.trim();
        let tmp = reachable_tmp("evalbench-second-nix-test.");
        let out = tmp.path().join("out");
        // A nix with its own profiler also runs an instrumented pass, which asks for it.
        let profiler = nix_version(&Some(nix.clone())) >= (2, 30);
        let passes = if profiler { "cold-clean,cold-instrumented,cold-counted" } else { "cold-clean" };
        let r = evalbench()
            .args(["run", "--passes", passes, "--repeat", "1", "--no-pcap", "--nix"])
            .arg(&nix)
            .arg("--out")
            .arg(&out)
            .env_remove("EVALBENCH_NIX")
            .output()
            .unwrap();
        assert!(r.status.success(), "{version}: {}", String::from_utf8_lossy(&r.stderr));
        let run = read_json(&out.join("cold-clean/run.json"));
        assert_eq!(run["provenance"]["system"]["nix_version"], version, "the nix that ran: {}", run["provenance"]);
        let stats = &run["nix_stats"];
        // Counters 2.8 does not have, each exact or judged like a time.
        for k in ["nrExprs", "gc.cycles", "time.cpu", "time.gc", "time.gcFraction"] {
            assert!(stats.get(k).is_some(), "{version}: {k}: {stats}");
        }
        for k in ["time.cpu", "time.gc", "time.gcFraction", "gc.cycles"] {
            assert!(evalbench_analyze::counters::NOISY.contains(&k), "{k} is judged like a time");
        }
        assert!(evalbench_analyze::counters::unit("time.gcFraction").is_some());
        // The same 101 attributes as with 2.8, as the worker saw them.
        assert_eq!(run["evaluation_metric"]["attrs"].as_u64(), Some(101), "{version}: {}", run["evaluation_metric"]);
        let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
        assert!(flat(&summary).contains(&format!("nix_version {version}")) && summary.contains("nrExprs"), "{summary}");
        eprintln!("{version}: evaluated {} s", run["evaluated_s"]);
        let sampled = out.join("cold-instrumented/eval/nix-eval-profiler.folded");
        assert_eq!(sampled.is_file(), profiler, "{version}: nix's own profile where nix has one");
        if profiler {
            // Counted through its loader: nix's own count, the wrapper's helpers kept apart.
            let eval = out.join("cold-counted/eval");
            let own = std::fs::read_to_string(eval.join("cachegrind.0.out")).unwrap();
            let cmd = own.lines().find(|l| l.starts_with("cmd:")).unwrap();
            assert!(cmd.contains("ld-linux") && cmd.contains("/usr/bin/nix eval"), "{cmd}");
            let children = std::fs::read_dir(&eval)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(".child-"))
                .count();
            assert!(children > 0, "the wrapper script's dirname and readlink, counted apart");
            let counted = &read_json(&out.join("summary.json"))["instructions"][0];
            let evaluate = counted["phases"]["evaluate"].as_f64().unwrap();
            assert!(evaluate > 1e8, "{version}: nix's evaluation is hundreds of millions of instructions: {counted}");
            eprintln!("{version}: {} instructions in cold-counted", counted["median"]);
            // The page sets nix's sampled view beside evalbench's exact one, and says why they differ.
            let page = std::fs::read_to_string(out.join("report/index.html")).unwrap();
            let at = page
                .find("nix's own sampled profile beside evalbench's exact one")
                .expect("the two views side by side");
            let section = &page[at..];
            assert!(
                section.contains("self:")
                    && section.contains("Where they disagree")
                    && section.contains("samples the stack when a function is entered"),
                "{}",
                &section[..section.len().min(3000)]
            );
        }
    }
}
