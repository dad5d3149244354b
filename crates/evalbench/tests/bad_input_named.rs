//! Bad input is never used silently: an unreadable run.json named where
//! compare falls back, a run asked for that a bundle lacks refused, a
//! decoder handed another kind of file (or an empty one) exiting 2 with what
//! it looks like, thresholds and commits that mean nothing refused. Each on
//! a real bundle of the sample pipeline or a file a real tool wrote.

mod common;

use std::path::Path;

use common::*;

fn small_bundle(dir: &Path) -> std::path::PathBuf {
    sample(dir, &["--passes", "cold-clean", "--ci-jobs", "2", "--drvs", "10"])
}

fn output(cmd: &mut std::process::Command) -> (Option<i32>, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn compare_names_an_unreadable_run_json_first() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_bundle(&tmp.path().join("a"));
    let b = tmp.path().join("b");
    assert!(std::process::Command::new("cp").arg("-r").arg(&a).arg(&b).status().unwrap().success());
    std::fs::write(b.join("cold-clean/run.json"), "{not json").unwrap();
    let (code, _, err) = output(evalbench().arg("compare").arg(&a).arg(&b));
    assert_eq!(code, Some(0), "{err}");
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with("evalbench compare: warning: ") && first.contains("cold-clean/run.json: unreadable"),
        "{err}"
    );
    // The run without an evaluated time is left out of the figure, and that is said where it is printed;
    // the spans' extent never stands in.
    let (_, text, _) = output(evalbench().arg("compare").arg(&a).arg(&b));
    let evaluated = text.lines().position(|l| l.trim_start().starts_with("evaluated ")).expect("an evaluated line");
    assert!(text.lines().nth(evaluated).unwrap_or("").contains("→ unknown (no figure on one side)"), "{text}");
    let next = text.lines().nth(evaluated + 1).unwrap_or("");
    assert!(
        next.contains("B: 1 run (cold-clean) had no evaluated time in run.json")
            && next.contains("left out of the evaluated seconds"),
        "{text}"
    );
    // The gate cannot judge a time one side lacks: it fails closed, and says so first.
    assert!(text.lines().nth(2).unwrap_or("").starts_with("cannot judge: cold-clean evaluated missing in B"), "{text}");
    let (code, _, err) = output(evalbench().args(["compare", "--fail-on-regression", "5"]).arg(&a).arg(&b));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot judge: cold-clean evaluated missing in B"), "{err}");
    let (code, _, err) =
        output(evalbench().args(["compare", "--fail-on-regression", "5", "--allow-missing"]).arg(&a).arg(&b));
    assert_eq!(code, Some(0), "{err}");
    // And so does summary.txt's answer.
    let out = tmp.path().join("summary");
    let (code, _, err) = output(evalbench().args(["summarize", "-q", "--no-trace", "-o"]).arg(&out).arg(&b));
    assert_eq!(code, Some(0), "{err}");
    let head: Vec<String> =
        std::fs::read_to_string(out.join("summary.txt")).unwrap().lines().take(4).map(String::from).collect();
    assert!(head.iter().any(|l| l.contains("1 run of 1 had no evaluated time in run.json")), "{head:?}");
    let (_, json, _) = output(evalbench().args(["compare", "--json"]).arg(&a).arg(&b));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(
        v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("run.json: unreadable")),
        "{v}"
    );
}

#[test]
fn a_run_a_bundle_lacks_is_refused_and_one_it_has_is_that_run_alone() {
    let tmp = tempfile::tempdir().unwrap();
    // A pass of three runs: the sample's run and two copies of it as runs 2 and 3.
    let a = small_bundle(&tmp.path().join("a"));
    for k in [2, 3] {
        assert!(std::process::Command::new("cp")
            .arg("-r")
            .arg(a.join("cold-clean"))
            .arg(a.join(format!("cold-clean.{k}")))
            .status()
            .unwrap()
            .success());
    }
    let (code, _, err) = output(evalbench().arg("compare").arg(&a).arg(&a).args([
        "--pass-a",
        "cold-clean.99",
        "--pass-b",
        "cold-clean.77",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("no run cold-clean.99: cold-clean has 3 runs") && err.contains("no run cold-clean.77"),
        "{err}"
    );
    // A run that is there is compared alone: one run a side, not the pass's three.
    let (code, json, err) = output(evalbench().args(["compare", "--json"]).arg(&a).arg(&a).args([
        "--pass-a",
        "cold-clean.2",
        "--pass-b",
        "cold-clean.3",
    ]));
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let p = &v["passes"][0];
    assert_eq!((p["runs_a"].as_u64(), p["runs_b"].as_u64()), (Some(1), Some(1)), "{p}");
}

#[test]
fn one_bundle_and_one_session_are_said_as_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_bundle(&tmp.path().join("a"));
    let (_, json, _) = output(evalbench().args(["compare", "--json"]).arg(&a).arg(&a));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["one_bundle"].as_bool(), v["same_session"].as_bool(), v["interleaved"].as_bool()),
        (Some(true), Some(true), Some(false)),
        "{v}"
    );
    let (_, text, _) = output(evalbench().arg("compare").arg(&a).arg(&a));
    assert!(
        text.contains("A and B are one bundle")
            && !text.contains("two sessions")
            && !text.contains("interleaved pass by pass"),
        "{text}"
    );
}

#[test]
fn decoders_refuse_what_is_not_theirs_and_empty_files() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_bundle(&tmp.path().join("a"));
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    for kind in ["strace", "perf", "nix-trace", "auto-explain", "pg", "proto", "nix-profile"] {
        let (code, out, err) = output(evalbench().args(["decode", kind]).arg(&empty));
        assert_eq!(code, Some(2), "decode {kind} of an empty file: {out}{err}");
        assert!(err.contains("an empty file"), "decode {kind}: {err}");
    }
    // auto_explain handed JSON (a run.json) and random bytes: named, not "0 plans".
    let (code, out, err) = output(evalbench().args(["decode", "auto-explain"]).arg(a.join("cold-clean/run.json")));
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("looks like JSON"), "{err}");
    let random = tmp.path().join("random");
    std::fs::write(&random, (0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<u8>>())
        .unwrap();
    let (code, _, err) = output(evalbench().args(["decode", "auto-explain"]).arg(&random));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("binary data"), "{err}");
    // evalbench's own fold of nix's function trace, given as nix's sampled profile.
    let fold = tmp.path().join("nix-profile.folded");
    std::fs::write(
        &fold,
        "(evaluator 0: opening the flake);self:flake.nix:20:18 1144\n(evaluator 0: opening the \
            flake);self:flake.nix:20:18;self:flake.nix:20:40 85\n",
    )
    .unwrap();
    let (code, _, err) = output(evalbench().args(["decode", "nix-profile"]).arg(&fold));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("weighted in µs, not samples"), "{err}");
}

#[test]
fn thresholds_and_commits_that_mean_nothing_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_bundle(&tmp.path().join("a"));
    for bad in ["-1", "nan", "inf"] {
        let (code, _, err) = output(evalbench().arg("compare").arg(&a).arg(&a).arg(format!("--min-abs-us={bad}")));
        assert_eq!(code, Some(2), "--min-abs-us={bad}: {err}");
        assert!(err.contains("--min-abs-us"), "{err}");
    }
    let db = tmp.path().join("h.sqlite");
    for (flag, value, says) in [("--commit", "", "not an empty string"), ("--commit-time", "-5", "at or after 1970")] {
        let mut cmd = evalbench();
        cmd.args(["history", "add"]).arg(&a).arg("--db").arg(&db).arg(format!("{flag}={value}"));
        if flag != "--commit" {
            cmd.args(["--commit", "abc"]);
        }
        let (code, _, err) = output(&mut cmd);
        assert_eq!(code, Some(2), "{flag}={value}: {err}");
        assert!(err.contains(says), "{flag}={value}: {err}");
    }
    assert!(!db.exists(), "a refused add writes no history");
}

#[test]
fn whatif_and_history_name_what_they_read_past() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_bundle(&tmp.path().join("a"));
    // A malformed line in the server's span file: named by whatif and by history add.
    let trace = a.join("cold-clean/trace");
    let server = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("server-"))
        .unwrap();
    let lines = std::fs::read_to_string(&server).unwrap().lines().count();
    let mut text = std::fs::read_to_string(&server).unwrap();
    text.push_str("{not json\n");
    std::fs::write(&server, text).unwrap();
    let at = format!("{}:{}", server.file_name().unwrap().to_str().unwrap(), lines + 1);
    let (code, _, err) = output(evalbench().args(["whatif", "--pass", "cold-clean"]).arg(&a));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.lines().next().is_some_and(|l| l.starts_with("evalbench whatif: warning: ") && l.contains(&at)),
        "{err}"
    );
    let db = tmp.path().join("h.sqlite");
    let (code, _, err) = output(evalbench().args(["history", "add", "--commit", "abc", "--db"]).arg(&db).arg(&a));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("evalbench history: warning: ") && err.contains(&at), "{err}");
    // An unreadable run.json: whatif names it first, then says why there is no path.
    std::fs::write(a.join("cold-clean/run.json"), "{not json").unwrap();
    let (code, _, err) = output(evalbench().args(["whatif", "--pass", "cold-clean"]).arg(&a));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.lines().next().is_some_and(|l| l.contains("cold-clean/run.json: unreadable")), "{err}");
    assert!(err.contains("no readable run.json"), "{err}");
}

#[test]
fn whatif_says_an_instrumented_pass_is_distorted() {
    let tmp = tempfile::tempdir().unwrap();
    let a =
        sample(&tmp.path().join("a"), &["--passes", "cold-clean,cold-instrumented", "--ci-jobs", "2", "--drvs", "10"]);
    let (code, out, err) = output(evalbench().args(["whatif", "--pass", "cold-instrumented"]).arg(&a));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines().next().is_some_and(|l| l.contains("an instrumented pass") && l.contains("shapes, not durations")),
        "{out}"
    );
    assert!(err.contains("warning: cold-instrumented: an instrumented pass"), "{err}");
    let (_, out, err) = output(evalbench().args(["whatif", "--pass", "cold-clean"]).arg(&a));
    assert!(!out.contains("an instrumented pass") && !err.contains("an instrumented pass"), "{out}{err}");
}
