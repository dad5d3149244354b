//! Comparing only like with like, or saying so: real lab runs of the hello
//! flake (`--work 1500`) and of a generated flake with more work per
//! package (`--work 1800`), one run a side.
//!
//! - `compare` names what differs between A and B (the workload) in every
//!   format; a bundle from before provenance reads as "unknown".
//! - The gate fires on nix's exact counters without repeats, names the
//!   counter, and says which times it could not judge and what it would take.
//! - What one side lacks (a pass, a span) is listed with its total, in text,
//!   Markdown, JSON and the page.
//! - Two clones of one commit are one workload, under every nix.

mod common;

use std::path::Path;

use common::*;

fn lab_run(out: &Path, lab: &Path, flake: Option<&Path>) {
    let mut c = evalbench();
    c.args(["run", "--passes", "cold-clean", "--repeat", "1", "--no-report", "--out"])
        .arg(out)
        .arg("--lab-dir")
        .arg(lab);
    if let Some(f) = flake {
        c.arg("--flake").arg(f);
    }
    run_ok(&mut c);
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    evalbench().arg("compare").arg(a).arg(b).args(extra).output().unwrap()
}

#[test]
fn compare_names_what_differs_and_gates_on_exact_counts() {
    let tmp = reachable_tmp("evalbench-provenance-test.");
    let (a, b, lab) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("lab"));
    let flake = tmp.path().join("flake-1800");
    run_ok(evalbench().args(["lab", "gen-flake", "--work", "1800", "--out"]).arg(&flake));
    lab_run(&a, &lab, None);
    lab_run(&b, &lab, Some(&flake));

    // What differs, first, in JSON: the workload (the flake and its content).
    // `--min-change 0`: a one-run change under the 1% floor is rightly "negligible" (it
    // happened in one CI run of four), and the undecided time below needs one above it.
    let out = compare(&a, &b, &["--json", "--fail-on-regression", "5", "--min-change", "0"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let differs = v["differs"].as_array().unwrap();
    let field = |f: &str| differs.iter().find(|d| d["group"] == "workload" && d["field"] == f).cloned();
    assert_eq!(field("flake").unwrap()["a"], "hello-flake (embedded)", "{differs:?}");
    assert_eq!(field("flake").unwrap()["b"], flake.display().to_string());
    assert!(field("nar_hash").is_some(), "another content, another narHash: {differs:?}");
    assert!(
        differs.iter().all(|d| d["group"] != "machine" && d["group"] != "system"),
        "one machine, one nix: {differs:?}"
    );
    // The gate: nix did more work, exactly; no repeats needed.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("regression past 5%: cold-clean nrFunctionCalls"), "{stderr}");
    assert!(v["gate"]["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r.as_str().unwrap().contains("nrFunctionCalls")));
    // One run a side: the time is not judged, and it says what would judge it.
    let und = v["undecided"].as_array().unwrap();
    assert_eq!(und.len(), 1, "{und:?}");
    assert_eq!(und[0]["pass"], "cold-clean");
    assert!(und[0]["runs_needed"].as_u64().unwrap() >= 4, "{und:?}");
    assert!(
        stderr.contains("cold-clean evaluated: not judged (one run on a side gives no noise estimate; 1 and 1 runs)"),
        "{stderr}"
    );
    // Text and Markdown say it too, and name A and B.
    let text = String::from_utf8_lossy(&compare(&a, &b, &[]).stdout).into_owned();
    assert!(text.starts_with(&format!("A: {}\nB: {}\nAnswer (", a.display(), b.display())), "the answer first: {text}");
    assert!(text.contains("\nA and B differ in workload:\n"), "{text}");
    assert!(
        text.contains("cold-clean (A: 1 run) → cold-clean (B: 1 run)") && !text.contains(" 1 runs"),
        "one run is a run: {text}"
    );
    let md = String::from_utf8_lossy(&compare(&a, &b, &["--format", "markdown"]).stdout).into_owned();
    assert!(md.starts_with("## evalbench compare: A → B"), "{md}");
    let (tables, _) = markdown_tables(&md);
    assert!(tables
        .iter()
        .any(|t| t.0 == ["group", "field", "A", "B"] && t.1.iter().any(|r| r[0] == "workload" && r[1] == "flake")));

    // The same flake on both sides: nothing differs, nothing gates.
    let out = compare(&a, &a, &["--fail-on-regression", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("A and B measured the same workload"));
    // A bundle against itself: its time moved by nothing, under the floor,
    // negligible even with one run a side; A against B was not judged, and
    // fails when asked to.
    assert_eq!(compare(&a, &a, &["--fail-on-undecided"]).status.code(), Some(0));
    // (--min-change 0 as above: two single runs within 1% are rightly negligible.)
    assert_eq!(compare(&a, &b, &["--fail-on-undecided", "--min-change", "0"]).status.code(), Some(1));

    an_old_bundle_has_provenance_unknown(&a, tmp.path());

    what_one_side_lacks_is_said(&a, tmp.path());
}

/// A bundle from before provenance was kept: read, with provenance unknown.
fn an_old_bundle_has_provenance_unknown(a: &Path, tmp: &Path) {
    let old = tmp.join("old");
    std::fs::create_dir_all(old.join("cold-clean")).unwrap();
    for e in std::fs::read_dir(a.join("cold-clean")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), old.join("cold-clean").join(e.file_name())).unwrap();
        }
    }
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(a.join("cold-clean/trace"))
        .arg(old.join("cold-clean"))
        .status()
        .unwrap();
    assert!(status.success());
    let mut run = read_json(&old.join("cold-clean/run.json"));
    run.as_object_mut().unwrap().remove("provenance");
    std::fs::write(old.join("cold-clean/run.json"), serde_json::to_vec(&run).unwrap()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&compare(&old, a, &["--json"]).stdout).unwrap();
    let d = v["differs"].as_array().unwrap();
    assert!(
        d.iter().any(|d| d["field"] == "flake" && d["a"] == "unknown" && d["b"] == "hello-flake (embedded)"),
        "{d:?}"
    );
    let s = run_ok(evalbench().args(["summarize", "-o"]).arg(tmp.join("old-summary")).arg(&old));
    assert!(s.status.success());
    assert!(std::fs::read_to_string(tmp.join("old-summary/summary.txt")).unwrap().contains("Provenance unknown"));
}

/// What one side lacks: the sample pipeline (A: four passes, a subset of
/// the lab's spans) against the lab's cold-clean (B: its evaluator's own spans).
fn what_one_side_lacks_is_said(a: &Path, tmp: &Path) {
    let smp = sample(&tmp.join("sample"), &[]);
    let v: serde_json::Value = serde_json::from_slice(&compare(&smp, a, &["--json"]).stdout).unwrap();
    let only_a: Vec<String> =
        v["only_a"].as_array().unwrap().iter().map(|p| p["pass"].as_str().unwrap().to_string()).collect();
    assert!(only_a.contains(&"warm-clean".to_string()), "{only_a:?}");
    let cc = &v["passes"][0];
    let span_b = &cc["spans_only_b"][0];
    assert!(span_b["total_ms"].as_f64().unwrap() > 0.0, "{cc}");
    let name_b = span_b["what"].as_str().unwrap();
    let text = String::from_utf8_lossy(&compare(&smp, a, &[]).stdout).into_owned();
    assert!(text.contains("spans only in B (") && text.contains(name_b), "{text}");
    assert!(text.contains("passes only in A: "), "{text}");
    let md = String::from_utf8_lossy(&compare(&smp, a, &["--format", "markdown", "--top", "100"]).stdout).into_owned();
    let (tables, _) = markdown_tables(&md);
    let row =
        tables.iter().flat_map(|t| t.1.iter()).find(|r| r[0] == name_b).unwrap_or_else(|| panic!("{name_b} in {md}"));
    assert_eq!(row[1], "–");
    assert_eq!(row[2], format!("{:.3}", span_b["total_ms"].as_f64().unwrap()));
    assert_eq!(row[4], "only in B");
    let html = tmp.join("page");
    run_ok(evalbench().arg("compare").arg(&smp).arg(a).arg("--html").arg(&html));
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(
        page.contains("only in B") && page.contains(&format!("<code>{name_b}</code>")),
        "the page lists B's own spans"
    );
    assert!(page.contains("What differs"));
}

/// Two clones of one commit are one workload: the provenance's narHash is
/// nix's own for the checkout (`git+file:`), the same in both, and not the
/// `path:` hash, which covers each clone's own `.git`. Under each nix
/// scripts/test fetches: what `nix flake metadata` says is that nix's.
#[test]
fn two_clones_of_one_commit_get_nix_s_own_nar_hash() {
    let tmp = tempfile::tempdir().unwrap();
    let git = |dir: &Path, args: &[&str]| {
        let o = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
        assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    let repo = evalbench_lab::flake::hello_flake(&tmp.path().join("repo")).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "flake.nix"]);
    git(&repo, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]);
    let clones: Vec<std::path::PathBuf> = (1..=2).map(|i| tmp.path().join(format!("clone{i}"))).collect();
    for c in &clones {
        git(tmp.path(), &["clone", "-q", &repo.to_string_lossy(), &c.to_string_lossy()]);
    }
    let plain = evalbench_lab::flake::hello_flake(&tmp.path().join("plain")).unwrap();
    assert_eq!(
        evalbench_lab::eval::flake_ref(&plain),
        format!("path:{}", plain.display()),
        "a flake in no checkout stays a path: flake"
    );
    for n in nixes() {
        let version = nix_version(&n);
        let metadata = |r: &str| {
            let o = nix_command(&n)
                .args(["flake", "metadata", "--json", "--no-write-lock-file", r])
                .env("NIX_CONFIG", NIX_CONFIG)
                .output()
                .unwrap();
            assert!(o.status.success(), "{version:?} flake metadata {r}: {}", String::from_utf8_lossy(&o.stderr));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            v["locked"]["narHash"].as_str().unwrap().to_string()
        };
        let described = |c: &Path| {
            let (hash, said) = evalbench_lab::eval::describe(c, n.as_deref());
            assert!(
                said.is_some_and(|s| s.contains(&format!("{}.{}", version.0, version.1))),
                "{version:?}: the nix asked"
            );
            hash.unwrap_or_else(|| panic!("{version:?}: no narHash for {}", c.display()))
        };
        let (one, two) = (described(&clones[0]), described(&clones[1]));
        assert_eq!(one, two, "{version:?}: one commit, one narHash");
        assert_eq!(
            one,
            metadata(&format!("git+file://{}", clones[0].display())),
            "{version:?}: as nix flake metadata gives it"
        );
        assert_ne!(one, metadata(&format!("path:{}", clones[0].display())), "{version:?}: the path: hash covers .git");
    }
}
