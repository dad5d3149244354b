//! nix's instructions, counted under Valgrind in the counted passes, end to
//! end on real evaluations: a change inside one builtin call (a longer
//! string through the same `builtins.hashString`, every call count of
//! nix's unchanged) is called with one counted run a side, the gate exits 1
//! naming instructions, summary, page and history carry the count, history
//! finds the step with one run a commit, and `bisect --instructions` finds
//! its commit (the run's two bundles reused as two of its probes, as a
//! rerun with the same OUT reuses them; the third evaluated).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The bundled hello flake, with one `builtins.hashString` per package of a
/// constant string `pad` characters long: two pads, the same calls, and
/// only the work inside each call differs.
fn flake_with_pad(dir: &Path, pad: usize) -> PathBuf {
    let hello = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello-flake/flake.nix");
    let text = std::fs::read_to_string(hello).unwrap();
    let with_pad = text
        .replacen("      name = i: ", &format!("      pad = \"{}\";\n      name = i: ", "x".repeat(pad)), 1)
        .replacen(
            "        deps = deps i;\n",
            "        deps = deps i;\n        salt = builtins.hashString \"sha256\" pad;\n",
            1,
        );
    assert!(with_pad.contains("salt =") && with_pad.contains("pad = \""), "the hello flake changed shape: {with_pad}");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("flake.nix"), with_pad).unwrap();
    dir.to_path_buf()
}

#[test]
fn a_change_inside_a_builtin_is_counted_gated_and_bisected() {
    let tmp = reachable_tmp("evalbench-instructions-test.");
    let (a, b) = (flake_with_pad(&tmp.path().join("a"), 16), flake_with_pad(&tmp.path().join("b"), 1800));
    let out = tmp.path().join("out");
    let r = evalbench()
        .args([
            "run",
            "--passes",
            "cold-clean,cold-counted",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--no-pcap",
            "--fail-on-regression",
            "0.5",
            "--flake",
        ])
        .arg(&b)
        .arg("--baseline")
        .arg(&a)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "the gate fires on instructions: {stderr}");
    assert!(flat(&stderr).contains("regression past 0.5%: cold-counted instructions: nix executed"), "{stderr}");

    compare_json_has_one_verdict(&out);
    the_count_everywhere_on_b(&out, tmp.path());
    history_finds_the_step(&out, tmp.path());
    bisect_finds_it_by_instructions(&out, tmp.path(), &a, &b);
}

/// compare.json: one verdict on instructions, more, by about 1%; no time
/// of the counted pass compared; every call count nix keeps the same.
fn compare_json_has_one_verdict(out: &Path) {
    let cmp = read_json(&out.join("compare.json"));
    let i = &cmp["instructions"][0];
    assert_eq!(i["pass"], "cold-counted");
    assert_eq!(i["kind"], "more", "{i}");
    let change = i["change_pct"].as_f64().unwrap();
    assert!((0.5..2.0).contains(&change), "about 1% more: {change}");
    let phases: Vec<&str> = i["phases"].as_array().unwrap().iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["lock", "discover", "evaluate"]);
    assert!(!i["moved"].as_array().unwrap().is_empty(), "the functions that moved: {i}");
    // No time of the counted pass was compared (its seconds are Valgrind's); the clean pass's were.
    let passes: Vec<&str> = cmp["passes"].as_array().unwrap().iter().map(|p| p["pass_a"].as_str().unwrap()).collect();
    assert_eq!(passes, ["cold-clean"]);
    // Every call count nix keeps is the same on both sides: only the work inside the calls grew.
    let counters = cmp["passes"][0]["counters"].as_array().unwrap();
    for k in ["nrFunctionCalls", "nrPrimOpCalls", "nrThunks", "nrLookups"] {
        let c = counters.iter().find(|c| c["name"] == k).unwrap_or_else(|| panic!("{k}: {counters:?}"));
        assert_eq!(c["kind"], "same", "{c}");
    }
}

/// The count in B's summary, report and files, and compare's Markdown and page.
fn the_count_everywhere_on_b(out: &Path, tmp: &Path) {
    let summary = flat(&std::fs::read_to_string(out.join("b/summary.txt")).unwrap());
    assert!(summary.contains("cold-counted nix executed") && summary.contains("evaluate "), "{summary}");
    assert!(summary.contains("Not timed: cold-counted (Valgrind"), "{summary}");
    let json = read_json(&out.join("b/summary.json"));
    let counted = &json["instructions"][0];
    assert_eq!(counted["pass"], "cold-counted");
    assert_eq!(
        counted["runs"][0]["instructions"].as_f64(),
        counted["median"].as_f64(),
        "one run: its count is the median"
    );
    assert!(
        counted["top"].as_array().unwrap().iter().any(|f| f["from"] == "nix"),
        "nix's own functions named: {counted}"
    );
    let who: Vec<&str> =
        counted["runs"][0]["processes"].as_array().unwrap().iter().map(|p| p["who"].as_str().unwrap()).collect();
    assert_eq!(who, ["lock", "discover", "0"], "each nix process's count: {counted}");
    // compare's Markdown and page carry the same verdict and the functions that moved.
    let md = String::from_utf8(
        run_ok(evalbench().args(["compare", "--format", "markdown"]).arg(out.join("a")).arg(out.join("b"))).stdout,
    )
    .unwrap();
    assert!(
        md.contains("### cold-counted: nix's instructions")
            && md.contains("| function (moved most) | from | A | B | B - A |"),
        "{md}"
    );
    let html = tmp.join("cmp-html");
    run_ok(evalbench().arg("compare").arg(out.join("a")).arg(out.join("b")).arg("--html").arg(&html));
    let cmp_page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(
        cmp_page.contains("cold-counted: nix&#39;s instructions") && cmp_page.contains("nix executed"),
        "the comparison page"
    );
    let page = std::fs::read_to_string(out.join("b/report/index.html")).unwrap();
    assert!(
        page.contains("nix&#39;s instructions (counted passes)")
            && page.contains("Counted pass: nix ran under Valgrind")
    );
    let metrics = std::fs::read_to_string(out.join("b/nix-support/hydra-metrics")).unwrap();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("evalbench.cold-counted.nix.instructions "))
        .expect("Hydra charts the count");
    assert_eq!(
        line,
        format!("evalbench.cold-counted.nix.instructions {} instructions", counted["median"].as_f64().unwrap()),
        "the summary's figure"
    );
    let eval = out.join("b/cold-counted/eval");
    for who in ["lock", "discover", "0"] {
        assert!(eval.join(format!("cachegrind.{who}.out")).is_file(), "{who}");
    }
}

/// History: A at one commit, B at the next, one run each: the step is found where it is.
fn history_finds_the_step(out: &Path, tmp: &Path) {
    let db = tmp.join("h.sqlite");
    for (side, commit, time) in [("a", "c1", "1000"), ("b", "c2", "2000")] {
        run_ok(
            evalbench()
                .args(["history", "add", "--commit", commit, "--commit-time", time, "--benchmark", "hello", "--db"])
                .arg(&db)
                .arg(out.join(side)),
        );
    }
    let shown = run_ok(evalbench().args(["history", "show", "--json", "--db"]).arg(&db));
    let h: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let changes = h["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(
        (changes[0]["commit"].as_str(), changes[0]["what"].as_str(), changes[0]["kind"].as_str()),
        (Some("c2"), Some("nix instructions"), Some("more"))
    );
    let text = flat(&String::from_utf8(run_ok(evalbench().args(["history", "show", "--db"]).arg(&db)).stdout).unwrap());
    assert!(text.contains("runs instructions spread") && text.contains("nix executed"), "{text}");
}

/// bisect --instructions over A, B and a comment after B: A's and B's
/// bundles are its probes of their commits; the comment's is evaluated.
fn bisect_finds_it_by_instructions(out: &Path, tmp: &Path, a: &Path, b: &Path) {
    use common::repo::git;
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "t@example.org"]);
    git(&repo, &["config", "user.name", "t"]);
    let put = |from: &Path, extra: &str| {
        let text = std::fs::read_to_string(from.join("flake.nix")).unwrap();
        std::fs::write(repo.join("flake.nix"), format!("{text}{extra}")).unwrap();
        git(&repo, &["add", "-A"]);
    };
    put(a, "");
    git(&repo, &["commit", "-qm", "c0: a short pad"]);
    put(b, "");
    git(&repo, &["commit", "-qm", "c1: a long pad"]);
    put(b, "# a comment\n");
    git(&repo, &["commit", "-qm", "c2: a comment"]);
    let commits: Vec<String> = git(&repo, &["rev-list", "--reverse", "HEAD"]).lines().map(String::from).collect();
    let bisect_out = tmp.join("bisect");
    std::fs::create_dir_all(&bisect_out).unwrap();
    for (side, commit) in [("a", &commits[0]), ("b", &commits[1])] {
        let copied = std::process::Command::new("cp")
            .arg("-r")
            .arg(out.join(side))
            .arg(bisect_out.join(commit))
            .status()
            .unwrap();
        assert!(copied.success());
    }
    let o = run_ok(
        evalbench()
            .args(["bisect", "--instructions", "--json", "-q", "--flake"])
            .arg(&repo)
            .args([&commits[0], &commits[2], "--out"])
            .arg(&bisect_out),
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<&str> =
        v["found"].as_array().unwrap().iter().map(|f| f["commit"]["commit"].as_str().unwrap()).collect();
    assert_eq!(found, [commits[1].as_str()], "{v}");
    let moved = &v["found"][0]["moved"];
    assert_eq!(moved.as_array().unwrap().len(), 1, "only instructions are judged: {moved}");
    assert_eq!(moved[0]["counter"], "instructions");
    assert_eq!(v["threshold_pct"].as_f64(), Some(evalbench_analyze::instructions::SPREAD_PCT));
    let evaluated: Vec<&str> = v["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["seconds"].as_f64() > Some(0.0))
        .map(|p| p["commit"]["commit"].as_str().unwrap())
        .collect();
    assert_eq!(
        evaluated,
        [commits[2].as_str()],
        "the comment's commit was evaluated, cold-clean and cold-counted: {v}"
    );
}

/// What a counted pass cannot do is refused before anything starts: a
/// recycled nix is killed (Valgrind writes a count only at exit), and a
/// Gradient deployment's nix is not the lab's; a mistyped pass is named.
#[test]
fn counted_passes_refuse_what_they_cannot_count() {
    let tmp = reachable_tmp("evalbench-instructions-flags.");
    let out = tmp.path().join("out");
    for (args, said) in [
        (vec!["--counted", "--eval-max-rss", "100M"], "counted passes cannot recycle evaluators (--eval-max-rss)"),
        (
            vec!["--counted", "--target", "gradient", "--target-config", "/nonexistent"],
            "not available with --target gradient",
        ),
        (
            vec!["--passes", "cold-clean,cold-countd"],
            "--passes: unknown pass \"cold-countd\"; passes are cold-clean, warm-clean, cold-instrumented, \
                warm-instrumented, cold-counted, warm-counted",
        ),
    ] {
        let r = evalbench().arg("run").args(&args).arg("--out").arg(&out).output().unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(flat(&stderr).contains(said), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?}: nothing written before the refusal");
    }
}
