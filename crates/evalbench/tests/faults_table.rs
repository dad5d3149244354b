//! Every fault of docs/faults.md against every command that meets it, run
//! from that table: a row is one (fault, command, expected outcome). Each
//! plants its fault in a copy of a real bundle (the lab's `tests/data/lab-a`,
//! five runs a pass) or sets up its scene, runs the command, and asserts the
//! exit code, that the message names the file, that no figure comes from
//! the bad data (cold-clean's evaluated median equals the one of its good
//! runs alone), and that every file not evalbench's is byte-identical after.
//! Root ignores file modes, so the unreadable rows run as `nobody`.
//!
//! `FAULTS_TABLE_PRINT=1` prints each bundle row as observed, for writing
//! the table; the test asserts the table as written.

mod common;
mod table;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use table::{digests, Named, Row};

/// The run every bundle fault is planted in: the one nearest the median,
/// which inspect and whatif show in full.
const RUN: &str = "cold-clean.3";

fn lab_a() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab-a")
}

/// The file of `RUN` a bundle fault names, relative to the bundle.
fn file_of(what: &str) -> Option<String> {
    let rel = match what {
        "run.json" => "run.json",
        "evaluation_metric.json" => "evaluation_metric.json",
        "trace" => "trace/worker-26047.jsonl",
        "pg_stat_statements" => "pg/pg_stat_statements.json",
        "wait_samples" => "pg/wait_samples.json",
        "job_phases" => "pg/job_phases.json",
        "nix-stats" => "eval/nix-stats.0.json",
        _ => return None,
    };
    Some(format!("{RUN}/{rel}"))
}

/// A bundle fault: `FILE:HOW`, in `RUN` (or `@all`: in every run of cold-clean).
struct Planted {
    rel: String,
    how: String,
    all: bool,
}

fn parse(fault: &str) -> Option<Planted> {
    let (spec, all) = match fault.strip_suffix("@all") {
        Some(s) => (s, true),
        None => (fault, false),
    };
    let (what, how) = spec.split_once(':')?;
    Some(Planted { rel: file_of(what)?, how: how.to_string(), all })
}

fn plant_one(path: &Path, how: &str) {
    use std::os::unix::fs::PermissionsExt;
    let bytes = std::fs::read(path).unwrap();
    match how {
        "missing" => std::fs::remove_file(path).unwrap(),
        "empty" => std::fs::write(path, b"").unwrap(),
        "truncated" => std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap(),
        "corrupt" => std::fs::write(path, [b"\x00{not json".as_slice(), &bytes[10..]].concat()).unwrap(),
        "unreadable" => std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap(),
        "nan" | "negative" => {
            let mut v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            v["evaluated_s"] = if how == "nan" { "NaN".into() } else { (-0.5).into() };
            std::fs::write(path, v.to_string()).unwrap();
        }
        other => panic!("no way to plant {other:?}"),
    }
}

/// Plants `p`; returns the first file planted, as the bundle names it (what a message must name).
fn plant(bundle: &Path, p: &Planted) -> String {
    let mut first = None;
    let runs: Vec<String> = if p.all {
        (1..=5).map(|k| if k == 1 { "cold-clean".into() } else { format!("cold-clean.{k}") }).collect()
    } else {
        vec![RUN.into()]
    };
    for r in runs {
        let rel = p.rel.replacen(RUN, &r, 1);
        let path = bundle.join(&rel);
        // Each run's span files have their own pids: the worker's, by its prefix.
        let path = if rel.contains("/trace/") {
            std::fs::read_dir(bundle.join(&r).join("trace"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|f| f.file_name().unwrap().to_string_lossy().starts_with("worker"))
                .unwrap()
        } else {
            path
        };
        plant_one(&path, &p.how);
        first.get_or_insert_with(|| path.strip_prefix(bundle).unwrap().display().to_string());
    }
    first.unwrap()
}

/// cold-clean's evaluated seconds over the runs whose run.json is good.
fn good_median(p: &Planted) -> Option<f64> {
    let mut v: Vec<f64> = (1..=5)
        .map(|k| if k == 1 { "cold-clean".to_string() } else { format!("cold-clean.{k}") })
        .filter(|r| !(p.rel.ends_with("/run.json") && (p.all || r == RUN)))
        .map(|r| read_json(&lab_a().join(r).join("run.json"))["evaluated_s"].as_f64().unwrap())
        .collect();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| if v.len() % 2 == 1 { v[v.len() / 2] } else { (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0 })
}

/// The binary, where `nobody` can run it: a checkout may be its owner's
/// alone (CI clones into a 0700 directory). Linked (or copied) into the
/// row's own work directory, so it goes with it: a copy kept for the
/// process's life would outlive it (a static is never dropped).
fn nobodys_evalbench(work: &Path) -> PathBuf {
    let bin = work.join("evalbench");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_evalbench"), &bin).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_evalbench"), &bin).unwrap();
    }
    bin
}

/// What a command printed and the figure it gave: (exit, all it said, cold-clean's evaluated median).
fn run_command(command: &str, bundle: &Path, work: &Path, as_nobody: bool) -> (i32, String, Option<Option<f64>>) {
    let out = work.join("out");
    let exe = env!("CARGO_BIN_EXE_evalbench");
    let mut c = if as_nobody {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(nobodys_evalbench(work));
        c
    } else {
        Command::new(exe)
    };
    let db = work.join("history.sqlite");
    match command {
        "summarize" => c.args(["summarize", "-q", "-o"]).arg(&out).arg(bundle),
        "inspect" => c.args(["inspect", "-o"]).arg(&out).arg(bundle),
        "compare" => c.args(["compare", "--json"]).arg(bundle).arg(work.join("intact")),
        "gate" => c.args(["compare", "--json", "--fail-on-regression", "5"]).arg(bundle).arg(work.join("intact")),
        "whatif" => c.args(["whatif", "--json"]).arg(bundle),
        "history-add" => c.args(["history", "add", "--commit", "c1", "--db"]).arg(&db).arg(bundle),
        other => panic!("no command {other:?}"),
    };
    let o = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut said = format!("{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let median = |v: &serde_json::Value| Some(v["median"].as_f64().filter(|_| v["n"].as_u64() != Some(0)));
    let figure = match command {
        "summarize" => std::fs::read_to_string(out.join("summary.txt")).ok().map(|t| {
            said.push_str(&t);
            let s = read_json(&out.join("summary.json"));
            let a = s["answers"].as_array().unwrap().iter().find(|a| a["pass"] == "cold-clean").cloned();
            a.and_then(|a| median(&a["evaluated_s"])).flatten()
        }),
        "inspect" => {
            said.push_str(&std::fs::read_to_string(out.join("index.html")).unwrap_or_default());
            None
        }
        "compare" | "gate" => serde_json::from_str::<serde_json::Value>(&stdout).ok().map(|v| {
            let p = v["passes"].as_array().unwrap().iter().find(|p| p["pass_a"] == "cold-clean").cloned();
            p.and_then(|p| median(&p["wall"]["a"])).flatten()
        }),
        "whatif" => serde_json::from_str::<serde_json::Value>(&stdout)
            .ok()
            .map(|v| median(&v["answer"]["evaluated_s"]).flatten()),
        "history-add" => {
            let show = evalbench().args(["history", "show", "--json", "--db"]).arg(&db).output().unwrap();
            serde_json::from_slice::<serde_json::Value>(&show.stdout)
                .ok()
                .map(|v| median(&v["series"]["cold-clean"][0]["evaluated_s"]).flatten())
        }
        _ => None,
    };
    (o.status.code().unwrap_or(-1), said, figure)
}

/// One bundle row: planted, run, judged. Err: what is wrong with it.
fn bundle_row(row: &Row, p: &Planted) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = reachable_tmp("evalbench-faults-table.");
    let bundle = tmp.path().join("bundle");
    assert!(Command::new("cp").arg("-r").arg(lab_a()).arg(&bundle).status().unwrap().success());
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // nobody writes its outputs here and reads the bundle: the copies are theirs to read.
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    // compare's B: the bundle intact, where nobody can read it too (a checkout may be its owner's alone).
    assert!(Command::new("cp").arg("-r").arg(lab_a()).arg(work.join("intact")).status().unwrap().success());
    assert!(Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&bundle)
        .arg(work.join("intact"))
        .status()
        .unwrap()
        .success());
    let named = plant(&bundle, p);
    let before = digests(&bundle);
    let (exit, said, figure) = run_command(&row.command, &bundle, &work, p.how == "unreadable");
    let observed = format!(
        "| `{}` | `{}` | {exit} | {} |",
        row.fault,
        row.command,
        if said.contains(&named) { "yes" } else { "not read" }
    );
    let mut wrong = Vec::new();
    if exit != row.exit {
        wrong.push(format!("exit {exit}, the table says {}", row.exit));
    }
    if row.named == Named::Yes && !said.contains(&named) {
        wrong.push(format!("{named} is not named"));
    }
    if !said.is_empty() && said.contains("panicked") {
        wrong.push("a panic".into());
    }
    if let Some(fig) = figure {
        let want = good_median(p);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
        if !(fig.is_none() && want.is_none() || fig.zip(want).is_some_and(|(a, b)| near(a, b))) {
            wrong.push(format!("cold-clean's evaluated median is {fig:?}; its good runs' is {want:?}"));
        }
    }
    if digests(&bundle) != before {
        wrong.push("the bundle's files changed".into());
    }
    row.verdict(&wrong, Some(&observed), &said, 1500)?;
    Ok(observed)
}

/// The bundle rows, on two threads (the commands are short; the table is long).
#[test]
fn every_bundle_fault_loses_only_itself() {
    let rows: Vec<(Row, Planted)> = table::rows().into_iter().filter_map(|r| parse(&r.fault).map(|p| (r, p))).collect();
    assert!(rows.len() >= 150, "{} bundle rows", rows.len());
    let print = std::env::var_os("FAULTS_TABLE_PRINT").is_some();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<(usize, Result<String, String>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    while let Some((row, p)) = rows.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        out.push((row.line, bundle_row(row, p)));
                    }
                    out
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    let mut results = results;
    results.sort_by_key(|r| r.0);
    if print {
        for (_, r) in &results {
            match r {
                Ok(o) => println!("{o}"),
                Err(e) => println!("{}", e.lines().nth(1).unwrap_or("")),
            }
        }
    }
    let failed: Vec<&String> = results.iter().filter_map(|(_, r)| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} of {} rows:\n{}",
        failed.len(),
        results.len(),
        failed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n\n")
    );
    eprintln!("faults table: {} bundle rows passed", results.len());
}

/// The rows of a fault and command, from the table.
fn rows_of(ids: &[(&str, &str)]) -> Vec<Row> {
    table::rows().into_iter().filter(|r| ids.iter().any(|(f, c)| r.fault == *f && r.command == *c)).collect()
}

/// Every row of the table is one some test below runs, and every row a test runs is in the table.
#[test]
fn every_row_is_run_and_every_run_row_is_in_the_table() {
    let rows = table::rows();
    let lab: Vec<(&str, &str)> = LAB_ROWS.to_vec();
    let unknown: Vec<String> = rows
        .iter()
        .filter(|r| {
            parse(&r.fault).is_none()
                && !table::scenes::IDS.iter().chain(&lab).any(|(f, c)| r.fault == *f && r.command == *c)
        })
        .map(table::Row::at)
        .collect();
    assert!(unknown.is_empty(), "rows no test runs: {unknown:?}");
    let missing: Vec<String> = table::scenes::IDS
        .iter()
        .chain(&lab)
        .filter(|(f, c)| !rows.iter().any(|r| r.fault == *f && r.command == *c))
        .map(|(f, c)| format!("`{f}` `{c}`"))
        .collect();
    assert!(missing.is_empty(), "faults the test knows that docs/faults.md lacks: {missing:?}");
    assert!(rows.len() >= 150, "{} rows", rows.len());
    eprintln!("faults table: {} rows in docs/faults.md", rows.len());
}

#[test]
fn outputs_flags_and_words_hold_their_rows() {
    let rows = rows_of(table::scenes::IDS);
    let failed: Vec<String> = rows.iter().filter_map(|r| table::scenes::check(r).err()).collect();
    assert!(failed.is_empty(), "{} of {} rows:\n{}", failed.len(), rows.len(), failed.join("\n\n"));
    eprintln!("faults table: {} rows of outputs, flags and words passed", rows.len());
}

/// The rows that need a lab of their own, each run by the test named after it.
const LAB_ROWS: &[(&str, &str)] = &[
    ("flake:throws", "run"),
    ("flake:throws-no-warmup", "run"),
    ("run:timeout", "run"),
    ("interrupt:setup", "run"),
    ("interrupt:warm-up", "run"),
    ("interrupt:run", "run"),
    ("interrupt:captures", "run"),
    ("interrupt:summarizing", "run"),
    ("run:two-at-once", "run"),
    ("progress:one-line-a-run", "run"),
    ("out:earlier-bundle", "run"),
    ("killed:postgres", "run"),
    ("killed:server", "run"),
    ("killed:worker", "run"),
    ("killed:eval", "run"),
    ("nobody:pg-tcp", "psql"),
    ("nobody:pg-socket", "psql"),
    ("nobody:lab.json", "cat"),
    ("nobody:api", "curl"),
    ("nobody:proto", "curl"),
    ("nobody:cmdline", "ps"),
];

fn lab_rows(fault_prefix: &str, each: impl Fn(&Row) -> Result<(), String>) {
    let rows: Vec<Row> = rows_of(LAB_ROWS).into_iter().filter(|r| r.fault.starts_with(fault_prefix)).collect();
    assert!(!rows.is_empty(), "no row `{fault_prefix}…` in docs/faults.md");
    let failed: Vec<String> = rows.iter().filter_map(|r| each(r).err()).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn a_failing_flake_is_failed_on_its_first_line() {
    lab_rows("flake:", table::labs::failing_flake);
}

#[test]
fn a_run_past_its_timeout_is_timed_out() {
    lab_rows("run:timeout", table::labs::timeout);
}

#[test]
fn ctrl_c_at_each_stage_keeps_what_completed() {
    lab_rows("interrupt:", table::labs::interrupt);
}

#[test]
fn two_runs_on_one_out_and_one_line_a_run() {
    let rows: Vec<Row> = rows_of(LAB_ROWS)
        .into_iter()
        .filter(|r| ["run:two-at-once", "progress:one-line-a-run", "out:earlier-bundle"].contains(&r.fault.as_str()))
        .collect();
    assert_eq!(rows.len(), 3);
    if let Err(e) = table::labs::two_runs(&rows.iter().collect::<Vec<_>>()) {
        panic!("{e}");
    }
}

#[test]
fn another_local_user_gets_nowhere() {
    let rows: Vec<Row> = rows_of(LAB_ROWS).into_iter().filter(|r| r.fault.starts_with("nobody:")).collect();
    assert_eq!(rows.len(), 6);
    if let Err(e) = table::labs::nobody(&rows.iter().collect::<Vec<_>>()) {
        panic!("{e}");
    }
}

#[test]
fn a_killed_postgresql_is_named() {
    lab_rows("killed:postgres", table::labs::killed);
}

#[test]
fn a_killed_server_is_named() {
    lab_rows("killed:server", table::labs::killed);
}

#[test]
fn a_killed_worker_is_named() {
    lab_rows("killed:worker", table::labs::killed);
}

#[test]
fn a_killed_eval_subprocess_is_named() {
    lab_rows("killed:eval", table::labs::killed);
}
