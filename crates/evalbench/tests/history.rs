//! `history`: series built by construction (seeded bundles, 12 commits,
//! 5 runs each) stored in SQLite and in a real PostgreSQL started here;
//! writers at once and a writer killed mid-transaction; bad input.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::browser::browse;
use common::synthetic::*;
use common::*;

const COMMITS: usize = 12;
/// The 8th commit (index 7) makes cold-clean's evaluation 25% slower.
const STEP_AT: usize = 7;

/// `COMMITS` bundles of 5 runs a pass; with `step`, cold-clean is 25% slower from the 8th on.
fn series(dir: &Path, step: bool, seed: u64) -> Vec<PathBuf> {
    (0..COMMITS)
        .map(|i| {
            let mut truth = Truth::baseline();
            if step && i >= STEP_AT {
                truth.evaluated_s[0] *= 1.25;
            }
            let b = dir.join(format!("b{i:02}"));
            write_bundle(&b, &truth, 5, seed + i as u64);
            b
        })
        .collect()
}

fn add(db: &str, bundle: &Path, i: usize) -> Command {
    let mut c = evalbench();
    c.args([
        "history",
        "add",
        "--db",
        db,
        "--commit",
        &format!("c{i:02}"),
        "--commit-time",
        &(1_700_000_000 + 3600 * i as i64).to_string(),
    ])
    .arg(bundle);
    c
}

fn show(db: &str) -> serde_json::Value {
    let out = run_ok(evalbench().args(["history", "show", "--json", "--db", db]));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (commit, pass, what, kind) of every change.
fn changes(v: &serde_json::Value) -> Vec<(String, String, String, String)> {
    v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("commit"), s("pass"), s("what"), s("kind"))
        })
        .collect()
}

fn check_series(db: &str, bundles: &[PathBuf], expect_step: bool) {
    for (i, b) in bundles.iter().enumerate() {
        run_ok(&mut add(db, b, i));
    }
    let v = show(db);
    let commits: Vec<&str> = v["commits"].as_array().unwrap().iter().map(|c| c["commit"].as_str().unwrap()).collect();
    assert_eq!(commits, (0..COMMITS).map(|i| format!("c{i:02}")).collect::<Vec<_>>(), "ordered by commit time");
    for pass in PASSES {
        let points = v["series"][pass].as_array().unwrap();
        assert_eq!(points.len(), COMMITS);
        assert!(points.iter().all(|p| p["evaluated_s"]["n"] == 5), "five runs a commit");
        assert_eq!(points[0]["top_spans"].as_array().unwrap().len(), 5);
    }
    let got = changes(&v);
    if expect_step {
        assert_eq!(
            got,
            vec![(format!("c{STEP_AT:02}"), "cold-clean".into(), "evaluated".into(), "slower".into())],
            "{:#}",
            v["changes"]
        );
        let c = &v["changes"][0];
        assert!((15.0..35.0).contains(&c["change_pct"].as_f64().unwrap()), "{c}");
        assert!(c["p_adjusted"].as_f64().unwrap() < 0.05 / 11.0, "{c}");
    } else {
        assert!(got.is_empty(), "an A/A series flagged {got:?}");
    }
}

#[test]
fn a_step_is_flagged_once_at_its_commit_and_an_aa_series_flags_nothing_in_sqlite() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite").display().to_string();
    let bundles = series(&tmp.path().join("step"), true, 100);
    check_series(&db, &bundles, true);
    // Added twice: refused, exit 2, nothing changed.
    let out = add(&db, &bundles[3], 3).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already in the history"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(show(&db)["commits"].as_array().unwrap().len(), COMMITS);
    let aa = tmp.path().join("aa.sqlite").display().to_string();
    check_series(&aa, &series(&tmp.path().join("aa"), false, 300), false);

    // The page: no script, every point titled, the change marked.
    let page = tmp.path().join("page");
    run_ok(evalbench().args(["history", "report", "--db", &db, "-o"]).arg(&page));
    let html = std::fs::read_to_string(page.join("index.html")).unwrap();
    assert!(!html.contains("<script"));
    assert!(html.contains("Content-Security-Policy"));
    assert_eq!(html.matches("<circle class=\"change\"").count(), 1, "one change point drawn");
    assert!(html.contains("commit c07 (2023-11-15 05:13 UTC), 5 runs"), "hover titles name commit, date and runs");
    // A chart: the medians joined, every commit labelled along the axis.
    assert_eq!(html.matches("<polyline class=\"series\"").count(), PASSES.len(), "a line per pass");
    let line =
        html.split("<polyline class=\"series\" fill=\"none\" points=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(line.split_whitespace().count(), COMMITS, "a vertex per commit");
    for i in 0..COMMITS {
        assert!(html.contains(&format!(">c{i:02}</text>")), "commit c{i:02} on the axis");
    }
    let dom = browse(&page.join("index.html"), tmp.path(), None).dom;
    assert_eq!(dom.matches("<circle").count(), html.matches("<circle").count(), "the browser drew every point");
    assert!(dom.contains("cold-clean") && dom.contains("slower by"), "the change's verdict is on the page");
}

#[test]
fn postgres_keeps_every_concurrent_add_and_nothing_of_a_killed_one() {
    let tmp = tempfile::tempdir().unwrap();
    evalbench_lab::pg::check_reachable(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    let pg = TestPg::start(tmp.path());
    pg.0.psql("postgres", "CREATE DATABASE history").unwrap();
    let url = format!("postgresql://postgres:{}@127.0.0.1:{}/history", pg.0.password, pg.0.port);

    // A database without a history is named, and left without one.
    pg.0.psql("postgres", "CREATE DATABASE empty").unwrap();
    let empty = format!("postgresql://postgres:{}@127.0.0.1:{}/empty", pg.0.password, pg.0.port);
    let out = evalbench().args(["history", "show", "--db", &empty]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no evalbench history in this database"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(pg.0.psql("empty", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").unwrap().trim(), "0");

    // The same step series as in SQLite: one change, at the 8th commit.
    check_series(&url, &series(&tmp.path().join("step"), true, 100), true);

    // Four writers at once, three bundles each, into a second database.
    pg.0.psql("postgres", "CREATE DATABASE together").unwrap();
    let url2 = format!("postgresql://postgres:{}@127.0.0.1:{}/together", pg.0.password, pg.0.port);
    let bundles = series(&tmp.path().join("aa"), false, 500);
    let writers: Vec<std::thread::JoinHandle<()>> = (0..4)
        .map(|w| {
            let (url2, bundles) = (url2.clone(), bundles.clone());
            std::thread::spawn(move || {
                for k in 0..3 {
                    let i = w * 3 + k;
                    let out = add(&url2, &bundles[i], i).output().unwrap();
                    assert!(out.status.success(), "writer {w}: {}", String::from_utf8_lossy(&out.stderr));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let v = show(&url2);
    assert_eq!(v["commits"].as_array().unwrap().len(), COMMITS, "twelve commits stored");
    assert!(v["series"]["cold-clean"].as_array().unwrap().iter().all(|p| p["evaluated_s"]["n"] == 5), "nothing lost");

    a_killed_add_leaves_nothing(&pg, tmp.path(), &url2);

    // A database of schema 1 (each change its sentence, no grounds) is
    // judged again from its rows on first use, and reads as before.
    let before = show(&url2);
    pg.0.psql(
        "together",
        "UPDATE judged SET point = jsonb_set(point::jsonb, '{changes}', (SELECT coalesce(jsonb_agg((c - 'why') || \
            '{\"text\": \"as schema 1 said it\"}'), '[]') FROM jsonb_array_elements(point::jsonb -> 'changes') \
            c))::text; DELETE FROM evalbench_schema; INSERT INTO evalbench_schema (version) VALUES (1);",
    )
    .unwrap();
    assert_eq!(show(&url2), before, "schema 1, judged again on opening");
    assert_eq!(pg.0.psql("together", "SELECT max(version) FROM evalbench_schema").unwrap().trim(), "2");
    assert_eq!(
        pg.0.psql("together", "SELECT count(*) FROM judged WHERE point LIKE '%as schema 1 said it%'").unwrap().trim(),
        "0"
    );

    // A database of a newer schema is refused with a clear error.
    pg.0.psql("together", "INSERT INTO evalbench_schema (version) VALUES (99)").unwrap();
    let out = evalbench().args(["history", "show", "--db", &url2]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("schema version 99 is newer"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A writer killed inside its transaction: it has written its run and
/// pass rows and waits on the span table another session holds. Nothing of
/// it stays, and the same bundle adds whole afterwards.
fn a_killed_add_leaves_nothing(pg: &TestPg, tmp: &Path, url2: &str) {
    let extra = tmp.join("extra");
    write_bundle(&extra, &Truth::baseline(), 5, 999);
    let pg2 = pg.0.clone();
    let holder = std::thread::spawn(move || {
        pg2.psql("together", "BEGIN; LOCK TABLE span_totals IN SHARE MODE; SELECT pg_sleep(6); COMMIT;")
    });
    std::thread::sleep(std::time::Duration::from_millis(800));
    let mut victim = add(url2, &extra, 12).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting =
            pg.0.psql(
                "together",
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO \
                    span_totals%'",
            )
            .unwrap();
        if waiting.trim() == "1" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the writer never reached the locked table");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
    holder.join().unwrap().unwrap();
    let v = show(url2);
    assert_eq!(v["commits"].as_array().unwrap().len(), COMMITS, "nothing of the killed add");
    let orphans =
        pg.0.psql("together", "SELECT count(*) FROM passes p LEFT JOIN runs r ON r.id = p.run_id WHERE r.id IS NULL")
            .unwrap();
    assert_eq!(orphans.trim(), "0");
    run_ok(&mut add(url2, &extra, 12));
    assert_eq!(show(url2)["commits"].as_array().unwrap().len(), COMMITS + 1, "the same bundle adds whole afterwards");
}

#[test]
fn bad_input_is_a_clear_error_with_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite").display().to_string();
    std::fs::write(tmp.path().join("x.txt"), "x").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "add".into(),
                "--db".into(),
                db.clone(),
                "--commit".into(),
                "c".into(),
                tmp.path().join("x.txt").display().to_string(),
            ],
            ".tar.gz",
        ),
        (
            vec![
                "add".into(),
                "--db".into(),
                db.clone(),
                "--commit".into(),
                "c".into(),
                tmp.path().display().to_string(),
            ],
            "not an evalbench bundle",
        ),
        (vec!["show".into(), "--db".into(), "postgresql://postgres@127.0.0.1:1/none".into()], "127.0.0.1:1"),
        (
            vec!["show".into(), "--db".into(), tmp.path().join("no/such/dir/h.sqlite").display().to_string()],
            "no/such/dir",
        ),
    ];
    for (args, expect) in cases {
        let out = evalbench().arg("history").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    // A SQLite file of a newer schema.
    let b = tmp.path().join("b");
    write_bundle(&b, &Truth::baseline(), 2, 1);
    run_ok(evalbench().args(["history", "add", "--db", &db, "--commit", "c1"]).arg(&b));
    let py = format!(
        "import sqlite3; c = sqlite3.connect({db:?}); c.execute('INSERT INTO evalbench_schema (version) VALUES (7)'); \
            c.commit()"
    );
    assert!(Command::new("python3").args(["-c", &py]).status().unwrap().success());
    let out = evalbench().args(["history", "show", "--db", &db]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("schema version 7 is newer"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn reading_never_creates_a_history_and_a_selection_must_be_there() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite").display().to_string();
    let b = tmp.path().join("b");
    write_bundle(&b, &Truth::baseline(), 2, 1);
    run_ok(evalbench().args(["history", "add", "--db", &db, "--commit", "c1"]).arg(&b));
    let typo = tmp.path().join("typo.sqlite");
    let other = tmp.path().join("other.sqlite");
    let py = format!(
        "import sqlite3; c = sqlite3.connect({:?}); c.execute('CREATE TABLE t (x)'); c.commit()",
        other.display().to_string()
    );
    assert!(Command::new("python3").args(["-c", &py]).status().unwrap().success());
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["show".into(), "--db".into(), typo.display().to_string()],
            format!("{}: no such history database", typo.display()),
        ),
        (
            vec![
                "report".into(),
                "--db".into(),
                typo.display().to_string(),
                "-o".into(),
                tmp.path().join("p").display().to_string(),
            ],
            "no such history database".into(),
        ),
        (
            vec!["show".into(), "--db".into(), other.display().to_string()],
            "a SQLite database without an evalbench history".into(),
        ),
        (
            vec!["show".into(), "--db".into(), db.clone(), "--pass".into(), "nonesuch".into()],
            "no pass \"nonesuch\" in the history; passes there: cold-clean".into(),
        ),
        (
            vec!["show".into(), "--db".into(), db.clone(), "--benchmark".into(), "nonesuch".into()],
            "no benchmark \"nonesuch\"".into(),
        ),
        (
            vec!["show".into(), "--db".into(), db.clone(), "--machine".into(), "nonesuch".into()],
            "no machine \"nonesuch\"".into(),
        ),
        (
            vec!["show".into(), "--db".into(), db.clone(), "--json".into(), "--format".into(), "markdown".into()],
            "cannot be used with".into(),
        ),
    ];
    for (args, expect) in cases {
        let out = evalbench().arg("history").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&expect), "{args:?}: {err}");
    }
    assert!(!typo.exists() && !tmp.path().join("p").exists(), "nothing made by a reader");
    // The selection that is there still reads; one commit is a commit.
    run_ok(evalbench().args(["history", "show", "--db", &db, "--pass", "cold-clean"]));
    run_ok(evalbench().args(["history", "report", "--db", &db, "-o"]).arg(tmp.path().join("page")));
    let html = std::fs::read_to_string(tmp.path().join("page/index.html")).unwrap();
    assert!(html.contains("1 commit, ordered by commit time") && !html.contains("1 commits"), "one commit");
    // A commit whose bundle has cold-clean only is not on warm-clean's axis.
    let b2 = tmp.path().join("b2");
    write_bundle(&b2, &Truth::baseline(), 2, 2);
    for e in std::fs::read_dir(&b2).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("warm-clean") {
            std::fs::remove_dir_all(e.path()).unwrap();
        }
    }
    run_ok(evalbench().args(["history", "add", "--db", &db, "--commit", "c2"]).arg(&b2));
    run_ok(evalbench().args(["history", "report", "--db", &db, "-o"]).arg(tmp.path().join("page2")));
    let html = std::fs::read_to_string(tmp.path().join("page2/index.html")).unwrap();
    let vertices = |pass: &str| {
        let chart = html.split(&format!("<title>{pass}: evaluated seconds per commit</title>")).nth(1).unwrap();
        chart.split("points=\"").nth(1).unwrap().split('"').next().unwrap().split_whitespace().count()
    };
    assert_eq!((vertices("cold-clean"), vertices("warm-clean")), (2, 1), "each pass's axis holds its own commits");
}

#[test]
fn a_step_in_nix_counters_is_a_change_at_its_commit_without_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("h.sqlite").display().to_string();
    for i in 0..6 {
        let b = tmp.path().join(format!("b{i}"));
        write_bundle(&b, &Truth::baseline(), 3, 500 + i as u64);
        with_counters(&b, if i >= 3 { 541_208 } else { 451_007 }, 153_036);
        if i == 2 {
            // A span seen at this one commit: nothing to draw a line through.
            for pass in PASSES {
                let mut f =
                    std::fs::OpenOptions::new().append(true).open(b.join(pass).join("trace/eval.7.jsonl")).unwrap();
                let line = serde_json::json!({"name": "lonely_span", "target": "gradient_eval", "ts_us":
                    1_900_000_000_000_000i64, "dur_us": 900_000, "pid": 7, "process": "eval", "id": 999});
                std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
            }
        }
        run_ok(&mut add(&db, &b, i));
    }
    let v = show(&db);
    let got = changes(&v);
    let expected: Vec<(String, String, String, String)> = PASSES
        .iter()
        .map(|p| ("c03".to_string(), p.to_string(), "nix nrFunctionCalls".to_string(), "more".to_string()))
        .collect();
    let mut sorted = got.clone();
    sorted.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(sorted, want, "{:#}", v["changes"]);
    let c = v["changes"].as_array().unwrap().iter().find(|c| c["what"] == "nix nrFunctionCalls").unwrap();
    assert_eq!(c["change_pct"].as_f64(), Some(20.0), "{c}");
    assert_eq!(c["text"], "nix did 20.0% more function calls (nrFunctionCalls, exact: 451,007 → 541,208)");
    let page = tmp.path().join("page");
    run_ok(evalbench().args(["history", "report", "--db", &db, "-o"]).arg(&page));
    let html = std::fs::read_to_string(page.join("index.html")).unwrap();
    assert!(html.contains("nix did 20.0% more function calls"), "the page names the counter's step");
    assert_eq!(
        html.matches("<polygon class=\"counter\"").count(),
        PASSES.len(),
        "the counter's step marked on each pass's chart"
    );
    assert!(html.contains("<title>commit c03: nix did 20.0% more function calls"), "marked at its commit");
    let sparklines = html.matches("</title><polyline").count();
    assert!(sparklines > PASSES.len(), "spans seen at every commit get a sparkline: {sparklines}");
    assert!(!html.contains("lonely_span</title>"), "a span seen at one commit gets no sparkline");
    // As Markdown: a table per pass (a row per commit), and the changes.
    let md =
        String::from_utf8(run_ok(evalbench().args(["history", "show", "--format", "markdown", "--db", &db])).stdout)
            .unwrap();
    let (tables, links) = markdown_tables(&md);
    assert!(!links);
    assert_eq!(tables.len(), PASSES.len() + 1, "{md}");
    for (head, rows) in &tables[..PASSES.len()] {
        assert_eq!(head[0], "commit");
        assert_eq!(rows.len(), 6, "a row per commit");
        assert!(rows[3][0].ends_with("(change)"), "{rows:?}");
    }
    let (head, changes) = tables.last().unwrap();
    assert_eq!(head, &["commit", "pass", "what", "kind", "change", "verdict"]);
    assert_eq!(changes.len(), PASSES.len());
    assert!(
        changes.iter().all(|r| r[0] == "c03" && r[2] == "nix nrFunctionCalls" && r[3] == "more" && r[4] == "+20.0%"),
        "{changes:?}"
    );
}

/// What `add` judged and stored is what show reads; commits added out of
/// order, or several bundles for one commit, are judged as if added in
/// order; a history whose judgements are missing (written before they were
/// kept) is judged on reading, and the next add stores the judgements.
#[test]
fn add_judges_and_show_reads_what_it_judged_whatever_the_order_of_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let bundles = series(&tmp.path().join("step"), true, 700);
    let in_order = tmp.path().join("in-order.sqlite").display().to_string();
    for (i, b) in bundles.iter().enumerate() {
        run_ok(&mut add(&in_order, b, i));
    }
    let expected = show(&in_order);
    assert_eq!(
        changes(&expected),
        vec![(format!("c{STEP_AT:02}"), "cold-clean".into(), "evaluated".into(), "slower".into())]
    );
    let c = rusqlite::Connection::open(&in_order).unwrap();
    let rows: i64 = c.query_row("SELECT count(*) FROM judged", [], |r| r.get(0)).unwrap();
    assert_eq!(rows as usize, COMMITS * PASSES.len(), "a judged row per commit and pass");

    // Shuffled: the last commits first, then the rest; the same history.
    let shuffled = tmp.path().join("shuffled.sqlite").display().to_string();
    let order: Vec<usize> = (0..COMMITS).rev().step_by(2).chain((0..COMMITS).rev().skip(1).step_by(2)).collect();
    for &i in &order {
        run_ok(&mut add(&shuffled, &bundles[i], i));
    }
    let got = show(&shuffled);
    assert_eq!(got["changes"], expected["changes"], "added out of order");
    assert_eq!(got["series"], expected["series"]);

    // Judgements dropped, as in a history written before they were kept:
    // show judges on reading and says so; the next add keeps them again.
    c.execute("DELETE FROM judged", []).unwrap();
    let out = run_ok(evalbench().args(["history", "show", "--json", "--db", &in_order]));
    assert!(String::from_utf8_lossy(&out.stderr).contains("judged now"), "{}", String::from_utf8_lossy(&out.stderr));
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["changes"], expected["changes"]);
    let extra = tmp.path().join("extra");
    write_bundle(&extra, &Truth::baseline(), 5, 999);
    run_ok(&mut add(&in_order, &extra, 3));
    let rows: i64 = c.query_row("SELECT count(*) FROM judged", [], |r| r.get(0)).unwrap();
    assert_eq!(rows as usize, COMMITS * PASSES.len(), "every commit judged again, c03 once with its two bundles");
    let after = show(&in_order);
    assert_eq!(after["series"]["warm-clean"][3]["evaluated_s"]["n"], 10, "c03 holds both bundles' runs");
}

/// A change is stored with its grounds and worded when shown; a history of
/// schema 1, whose changes held their sentence, is judged again from its own
/// rows on first use: it reads as before, critical paths and all, not misread.
#[test]
fn a_history_of_schema_1_is_judged_again_and_reads_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let bundles = series(&tmp.path().join("step"), true, 700);
    let db = tmp.path().join("h.sqlite").display().to_string();
    for (i, b) in bundles.iter().enumerate() {
        run_ok(&mut add(&db, b, i));
    }
    let expected = show(&db);
    let change = &expected["changes"][0];
    let text = change["text"].as_str().unwrap();
    assert!(
        text.starts_with("slower by ") && text.contains("Mann-Whitney p = ") && change.get("why").is_none(),
        "{change}"
    );
    // Stored: the grounds, no sentence.
    let c = rusqlite::Connection::open(&db).unwrap();
    let stored: String = c
        .query_row(
            "SELECT point FROM judged WHERE pass = 'cold-clean' AND commit_rev = ?1",
            [format!("c{STEP_AT:02}")],
            |r| r.get(0),
        )
        .unwrap();
    let point: serde_json::Value = serde_json::from_str(&stored).unwrap();
    assert!(
        point["changes"][0]["why"]["tested"]["rule"] == "worse" && point["changes"][0].get("text").is_none(),
        "{point}"
    );

    // As schema 1 wrote it: each change with its sentence, no grounds.
    let rows: Vec<(String, String, String)> = c
        .prepare("SELECT pass, commit_rev, point FROM judged")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (pass, commit, point) in rows {
        let mut p: serde_json::Value = serde_json::from_str(&point).unwrap();
        for ch in p["changes"].as_array_mut().unwrap() {
            let o = ch.as_object_mut().unwrap();
            o.remove("why");
            o.insert("text".into(), "slower by 25.0% (as schema 1 said it)".into());
        }
        c.execute("UPDATE judged SET point = ?1 WHERE pass = ?2 AND commit_rev = ?3", [p.to_string(), pass, commit])
            .unwrap();
    }
    c.execute_batch("DELETE FROM evalbench_schema; INSERT INTO evalbench_schema (version) VALUES (1);").unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    let rows = count("SELECT count(*) FROM judged");
    let out = run_ok(evalbench().args(["history", "show", "--json", "--db", &db]));
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read, expected, "read as before: changes in today's words, every point as it was");
    assert_eq!((count("SELECT count(*) FROM judged"), count("SELECT max(version) FROM evalbench_schema")), (rows, 2));
    let point: String = c
        .query_row(
            "SELECT point FROM judged WHERE pass = 'cold-clean' AND commit_rev = ?1",
            [format!("c{STEP_AT:02}")],
            |r| r.get(0),
        )
        .unwrap();
    assert!(point.contains(r#""why":{"tested""#) && !point.contains("as schema 1 said it"), "{point}");
}

/// The two judged tables out of step (a row deleted by hand, one table
/// restored from another day): `add` names the commit and the series and
/// says how to recover. Rows were matched by position before: the first
/// case judged c06 from c04's runs, the second panicked.
#[test]
fn judged_tables_out_of_step_are_a_clear_error_with_a_way_out() {
    let tmp = tempfile::tempdir().unwrap();
    let bundles = series(&tmp.path().join("aa"), false, 800);
    let db = tmp.path().join("h.sqlite").display().to_string();
    for (i, b) in bundles.iter().take(6).enumerate() {
        run_ok(&mut add(&db, b, i));
    }
    let c = rusqlite::Connection::open(&db).unwrap();
    let count =
        |table: &str| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).unwrap();
    let refused = |i: usize, says: &[&str]| {
        let out = add(&db, &bundles[i], i).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(says.iter().all(|s| err.contains(s)) && !err.contains("panicked"), "{err}");
    };
    c.execute("DELETE FROM judged_inputs WHERE commit_rev = 'c05' AND pass = 'cold-clean'", []).unwrap();
    refused(6, &["commit c05 of series", "/ cold-clean has a row in judged and none in judged_inputs"]);
    assert_eq!(count("runs"), 6, "nothing of a refused add is kept");
    // The way out the message gives: every series judged again.
    c.execute_batch("DELETE FROM judged; DELETE FROM judged_inputs;").unwrap();
    run_ok(&mut add(&db, &bundles[6], 6));
    assert_eq!(count("judged_inputs") as usize, 7 * PASSES.len());
    c.execute(
        "INSERT INTO judged_inputs SELECT benchmark, machine, pass, 'c99', commit_time + 1, added_us, inputs FROM \
            judged_inputs WHERE commit_rev = 'c04' AND pass = 'warm-clean'",
        [],
    )
    .unwrap();
    refused(7, &["commit c99 of series", "/ warm-clean has a row in judged_inputs and none in judged"]);
}
