//! The lab as Gradient's twin for production evaluations: it serves each
//! evaluation's diagnostic report (schema 19, from its own rows) and the
//! task's metrics, and `history import` against it, as against a Gradient
//! deployment, keeps three evaluations of three commits (the third doing 5%
//! more work), flags the step at the third with the bisect that would
//! narrow it, and adds nothing when run again.

mod common;

use std::path::Path;

use common::*;

struct Lab(std::path::PathBuf);

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = evalbench().args(["lab", "down", "--lab-dir"]).arg(&self.0).output();
    }
}

/// `lab up` with the flake as it is now (a new commit of the lab's repository
/// where it changed), one evaluation; its id and `lab up`'s state.
fn evaluate(lab: &Path, flake: &Path) -> (String, serde_json::Value) {
    let st: serde_json::Value = serde_json::from_slice(
        &run_ok(evalbench().args(["lab", "up", "--lab-dir"]).arg(lab).arg("--flake").arg(flake)).stdout,
    )
    .unwrap();
    let r: serde_json::Value =
        serde_json::from_slice(&run_ok(evalbench().args(["lab", "evaluate", "--lab-dir"]).arg(lab)).stdout).unwrap();
    (r["evaluation_id"].as_str().unwrap().to_string(), st)
}

fn import(cfg: &Path, db: &Path) -> String {
    let o = run_ok(
        evalbench()
            .args(["history", "import", "--target", "gradient", "--task", "lab/hello", "--target-config"])
            .arg(cfg)
            .arg("--db")
            .arg(db),
    );
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn history_import_keeps_the_labs_evaluations_and_flags_the_step() {
    let tmp = reachable_tmp("evalbench-report-lab.");
    let (dir, flake) = (tmp.path().join("lab"), tmp.path().join("flake"));
    let _lab = Lab(dir.clone());
    run_ok(evalbench().args(["lab", "gen-flake", "--packages", "10", "--work", "300", "--out"]).arg(&flake));
    let nix = flake.join("flake.nix");
    let (first, st) = evaluate(&dir, &flake);
    std::fs::write(&nix, std::fs::read_to_string(&nix).unwrap() + "# a comment: the same work\n").unwrap();
    let (second, _) = evaluate(&dir, &flake);
    let more = std::fs::read_to_string(&nix).unwrap().replace("(i: i) 300)", "(i: i) 315)");
    std::fs::write(&nix, more).unwrap();
    let (third, _) = evaluate(&dir, &flake);
    let cfg = tmp.path().join("gradient.json");
    let url = format!("http://{}:{}", st["net"]["server_addr"].as_str().unwrap(), st["server_port"]);
    let config = serde_json::json!({"url": url, "login": {"loginname": "admin", "password": st["api_key"]}});
    std::fs::write(&cfg, config.to_string()).unwrap();
    let db = tmp.path().join("h.sqlite");
    let said = import(&cfg, &db);
    assert!(said.contains("3 evaluations listed, 3 reports downloaded"), "{said}");
    assert!(said.contains(&format!("nrFunctionCalls stepped at evaluation {third}")), "{said}");
    for quiet in [&first, &second] {
        assert!(!said.contains(&format!("stepped at evaluation {quiet}")), "{said}");
    }
    assert!(said.contains("narrow the step at") && said.contains("--counter nrFunctionCalls"), "{said}");
    let again = import(&cfg, &db);
    assert!(again.contains("0 reports downloaded") && again.contains("0 added, 3 already"), "{again}");
    let show = String::from_utf8(run_ok(evalbench().args(["history", "show", "--db"]).arg(&db)).stdout).unwrap();
    // The series' rows: one a commit, the step flagged (" *") at the third only.
    let hex = |c: &str| c.chars().all(|c| c.is_ascii_hexdigit());
    let rows: Vec<&str> =
        show.lines().filter(|l| l.get(2..16).is_some_and(hex) && l.as_bytes().get(16) == Some(&b' ')).collect();
    assert_eq!(rows.len(), 3, "{show}");
    let flagged: Vec<bool> = rows.iter().map(|l| l.ends_with(" *")).collect();
    assert_eq!(flagged, [false, false, true], "{show}");
    // show names the step's evaluation by its report, and the bisect that narrows it.
    let unwrapped = show.replace("\n      ", " ");
    assert!(unwrapped.contains(&format!("(from gradient-report-{third}.db)")), "{show}");
    assert!(unwrapped.contains("--counter nrFunctionCalls"), "{show}");
    the_labs_report_reads_as_gradients(&db, &third);
}

/// The lab's own report: its evaluation, counts, job and phases; the tables
/// it does not keep there and empty, the manifest saying so.
fn the_labs_report_reads_as_gradients(db: &Path, evaluation: &str) {
    let report = Path::new(&format!("{}.reports", db.display())).join(format!("gradient-report-{evaluation}.db"));
    let o = run_ok(evalbench().arg("summarize").arg(&report).arg("-q").arg("-o").arg(db.with_extension("summary")));
    let text = String::from_utf8(o.stdout).unwrap();
    for want in ["Completed", "evaluating the flake", "fn_calls ", "eval job on worker-", "eval_flake ", "derivations,"]
    {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    let c = rusqlite::Connection::open(&report).unwrap();
    let (n, filter): (i64, String) = c
        .query_row(
            "SELECT (SELECT count(*) FROM worker_sample), filter FROM report_manifest WHERE \"table\" = \
             'worker_sample'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, filter.as_str()), (0, "the lab keeps no such rows"));
    let phases: i64 = c.query_row("SELECT count(*) FROM dispatched_job_phase", [], |r| r.get(0)).unwrap();
    assert!(phases >= 3, "{phases} phases");
}
