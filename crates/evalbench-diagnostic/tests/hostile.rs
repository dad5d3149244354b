//! A report is another machine's file: each way it can be wrong is refused
//! with its file and what was expected (never a panic, never a guess), the
//! file is never written, and a read is bounded. Reports are made from the
//! hand-written schema-19 fixture (written from Gradient's DDL), then broken.

use std::path::{Path, PathBuf};

use evalbench_diagnostic::{read, ErrorKind, Limits};

fn fixture_sql() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../evalbench/tests/data/gradient-report/anonymised.sql");
    std::fs::read_to_string(p).unwrap()
}

/// The fixture as a .db in `dir`, with `then` run on it (SQL that breaks it).
fn report(dir: &Path, name: &str, then: &str) -> PathBuf {
    let path = dir.join(name);
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(&fixture_sql()).unwrap();
    c.execute_batch(then).unwrap();
    drop(c);
    path
}

fn kind(path: &Path, limits: Limits) -> ErrorKind {
    let e = read(path, limits).unwrap_err();
    assert_eq!(e.file, path, "the error names the file: {e}");
    e.kind
}

#[test]
fn the_fixture_reads_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(dir.path(), "r.db", "");
    let before = std::fs::read(&path).unwrap();
    let d = read(&path, Limits::default()).unwrap();
    assert_eq!(d.meta.schema_version, 19);
    assert_eq!(d.evaluation.status, Some(5));
    assert_eq!(d.jobs.len(), 2);
    let names: Vec<&str> = d.jobs[1].phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["prefetch", "build", "substitute_fetch", "nar_push", "unknown_23"]);
    assert_eq!(d.jobs[1].phases[2].parent_seq, Some(1));
    assert_eq!(d.samples.len(), 26);
    assert_eq!((d.counts.derivations, d.counts.dependencies, d.counts.cached_paths), (5, 4, 4));
    assert_eq!(d.metric.as_ref().unwrap()["fn_calls"], 12_048_817);
    assert_eq!(d.commit.unwrap().hash.as_deref(), Some("9f2c4b7e1a0d3c5b8e6f4a2d1c0b9e8f7a6d5c4b"));
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(std::fs::read(&path).unwrap(), before, "reading wrote to the file");
}

#[test]
fn what_is_not_a_report_is_refused_by_its_header_or_its_meta() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "PRAGMA nothing;\n").unwrap();
    assert!(matches!(kind(&text, Limits::default()), ErrorKind::NotSqlite));
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    assert!(matches!(kind(&other, Limits::default()), ErrorKind::NoMeta));
    let two = report(dir.path(), "two.db", "INSERT INTO report_meta SELECT * FROM report_meta");
    assert!(matches!(kind(&two, Limits::default()), ErrorKind::NoMeta));
    // A report cut short: SQLite's own error, said, not a panic.
    let whole = std::fs::read(report(dir.path(), "whole.db", "")).unwrap();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
    let k = kind(&cut, Limits::default());
    assert!(matches!(k, ErrorKind::Sqlite(_)), "{k}");
}

#[test]
fn a_schema_version_it_does_not_know_is_refused_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(dir.path(), "r.db", "UPDATE report_meta SET schema_version = 20");
    let e = read(&path, Limits::default()).unwrap_err();
    assert!(e.is_unknown_schema());
    let said = e.to_string();
    assert!(said.contains("schema version 20") && said.contains("version 19"), "{said}");
}

#[test]
fn a_missing_table_or_column_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(dir.path(), "r.db", "DROP TABLE worker_sample");
    let k = kind(&path, Limits::default());
    assert!(matches!(&k, ErrorKind::MissingTable { table, .. } if table == "worker_sample"), "{k}");
    assert!(k.to_string().contains("include_instance"), "{k}");
    // Without include_instance, the instance's tables are not expected.
    let path = report(dir.path(), "noinst.db", "DROP TABLE worker_sample; UPDATE report_meta SET include_instance = 0");
    assert!(read(&path, Limits::default()).is_ok());
    let path = report(dir.path(), "col.db", "ALTER TABLE dispatched_job DROP COLUMN worker_id");
    let k = kind(&path, Limits::default());
    assert!(
        matches!(&k, ErrorKind::MissingColumn { table, column, .. } if table == "dispatched_job" &&
        column == "worker_id"),
        "{k}"
    );
}

#[test]
fn a_value_of_the_wrong_kind_names_table_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(dir.path(), "r.db", "UPDATE evaluation_metric SET fn_calls = 'lots'");
    let k = kind(&path, Limits::default());
    let said = k.to_string();
    assert!(said.contains("evaluation_metric, row 1, column fn_calls: expected an integer"), "{said}");
    let path = report(dir.path(), "t.db", "UPDATE evaluation SET created_at = 'yesterday'");
    let said = kind(&path, Limits::default()).to_string();
    assert!(said.contains("column created_at: expected a timestamp"), "{said}");
    let path = report(dir.path(), "b.db", "UPDATE dispatched_job_phase SET start_ms = x'00ff' WHERE seq = 3");
    assert!(matches!(kind(&path, Limits::default()), ErrorKind::BadValue { .. }));
}

#[test]
fn size_rows_and_steps_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(dir.path(), "r.db", "");
    let size = std::fs::metadata(&path).unwrap().len();
    let k = kind(&path, Limits { max_bytes: size - 1, ..Limits::default() });
    assert!(matches!(k, ErrorKind::TooLarge { .. }), "{k}");
    let k = kind(&path, Limits { max_rows: 11, ..Limits::default() });
    assert!(matches!(&k, ErrorKind::TooManyRows { table, .. } if table == "worker_sample"), "{k}");
    // A view in the evaluation's place that would count to a billion: stopped by the step budget.
    let slow = report(
        dir.path(),
        "slow.db",
        "ALTER TABLE evaluation RENAME TO evaluation_rows; CREATE VIEW evaluation AS WITH RECURSIVE n(i) AS (SELECT 1 \
         UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000) SELECT e.* FROM evaluation_rows e, (SELECT max(i) FROM \
         n)",
    );
    let t = std::time::Instant::now();
    let k = kind(&slow, Limits { max_steps: 50_000_000, ..Limits::default() });
    assert!(matches!(&k, ErrorKind::Bounded { table, .. } if table == "evaluation"), "{k}");
    assert!(t.elapsed().as_secs() < 60, "the bound did not stop it");
}

#[test]
fn orphan_phases_and_a_second_metric_row_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = report(
        dir.path(),
        "r.db",
        "INSERT INTO dispatched_job_phase VALUES ('px', 'job-gone', 0, NULL, 10, 0, 5, 0, 0, NULL); INSERT INTO \
         evaluation_metric SELECT 'em2', evaluation, total_thunks, fn_calls + 1, primop_calls, lookups, alloc_bytes, \
         peak_heap_mb, peak_rss_mb, fetch_ms, eval_flake_ms, eval_drv_ms, total_eval_ms, worker_id, \
         '2026-11-24 09:02:00' FROM evaluation_metric",
    );
    let d = read(&path, Limits::default()).unwrap();
    assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
    assert!(d.warnings.iter().any(|w| w.contains("1 dispatched_job_phase rows name a job")));
    assert_eq!(d.metric.unwrap()["fn_calls"], 12_048_818, "the last made is read");
}
