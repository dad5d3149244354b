//! The embedded store: one SQLite file, written in WAL mode with a busy
//! timeout, so several `history add` on one machine queue rather than fail.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use evalbench_host::now_us;

use super::judged::{self, sqlite as q};
use super::judging::{self, At, Rows};
use super::{duplicate, newer, tables, JudgedHistory, Meta, Store, Stored, BENCHMARK_COLUMN, SCHEMA_VERSION};
use crate::judge::Judged;
use crate::record::BundleRecord;
use crate::series::SeriesKey;
use crate::HistoryError;

pub struct SqliteStore {
    path: String,
    c: Connection,
}

impl SqliteStore {
    /// With `create`, a file that is not there becomes an empty history;
    /// without, it and a SQLite file that holds no history are errors.
    pub fn open(path: &str, create: bool) -> Result<SqliteStore, HistoryError> {
        let e = |source| HistoryError::Sqlite { db: path.to_string(), source };
        if !create && !std::path::Path::new(path).is_file() {
            return Err(super::no_history(path, "no such history database"));
        }
        let c = Connection::open(path).map_err(e)?;
        if !create {
            let made: i64 = c
                .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'evalbench_schema'", [], |r| r.get(0))
                .map_err(e)?;
            if made == 0 {
                return Err(super::no_history(path, "a SQLite database without an evalbench history in it"));
            }
        }
        c.busy_timeout(std::time::Duration::from_secs(60)).map_err(e)?;
        c.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        c.pragma_update(None, "foreign_keys", "ON").map_err(e)?;
        let mut s = SqliteStore { path: path.to_string(), c };
        s.migrate()?;
        Ok(s)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        move |source| HistoryError::Sqlite { db: self.path.clone(), source }
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        let path = self.path.clone();
        let e = |source| HistoryError::Sqlite { db: path.clone(), source };
        let tx = self.c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        tx.execute_batch(&tables("INTEGER PRIMARY KEY AUTOINCREMENT", "DOUBLE PRECISION")).map_err(e)?;
        let has: i64 = tx
            .query_row("SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'benchmark'", [], |r| r.get(0))
            .map_err(e)?;
        if has == 0 {
            tx.execute_batch(BENCHMARK_COLUMN).map_err(e)?;
        }
        let found: Option<i64> =
            tx.query_row("SELECT max(version) FROM evalbench_schema", [], |r| r.get(0)).map_err(e)?;
        match found {
            Some(v) if v > SCHEMA_VERSION => return Err(newer(&self.path, v)),
            Some(v) if v == SCHEMA_VERSION => {}
            older => {
                if older.is_some() {
                    judging::judge_stored_again(&mut Tables { c: &tx, db: &path }, &path)?;
                }
                tx.execute("INSERT INTO evalbench_schema (version) VALUES (?1)", [SCHEMA_VERSION]).map_err(e)?;
            }
        }
        tx.commit().map_err(e)
    }
}

impl Store for SqliteStore {
    fn add(&mut self, meta: &Meta, record: &BundleRecord) -> Result<i64, HistoryError> {
        let path = self.path.clone();
        let e = |source| HistoryError::Sqlite { db: path.clone(), source };
        let tx = self.c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(e)?;
        let before: Option<(i64, String)> = tx
            .query_row("SELECT added_us, commit_rev FROM runs WHERE digest = ?1", [&record.digest], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(e)?;
        if let Some((added, commit)) = before {
            return Err(duplicate(meta, added, commit));
        }
        tx.execute(
            "INSERT INTO runs (digest, commit_rev, commit_time, added_us, branch, machine, bundle, benchmark) VALUES \
                (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                record.digest,
                meta.commit,
                meta.commit_time,
                now_us(),
                meta.branch,
                meta.machine,
                meta.bundle,
                meta.benchmark
            ],
        )
        .map_err(e)?;
        let run_id = tx.last_insert_rowid();
        {
            let mut pass = tx
                .prepare(
                    "INSERT INTO passes (run_id, pass, repeat, evaluated_s, metric, offset_us, bound_us) VALUES (?1, \
                        ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .map_err(e)?;
            let mut span =
                tx.prepare("INSERT INTO span_totals (pass_id, what, total_ms) VALUES (?1, ?2, ?3)").map_err(e)?;
            let mut stmt = tx
                .prepare("INSERT INTO statement_totals (pass_id, statement, total_ms) VALUES (?1, ?2, ?3)")
                .map_err(e)?;
            let mut counter =
                tx.prepare("INSERT INTO counter_totals (pass_id, name, value) VALUES (?1, ?2, ?3)").map_err(e)?;
            for r in &record.runs {
                let metric = r.metric.as_ref().map(|m| m.to_string());
                pass.execute(params![run_id, r.pass, r.repeat, r.evaluated_s, metric, r.offset_us, r.bound_us])
                    .map_err(e)?;
                let pass_id = tx.last_insert_rowid();
                for (what, ms) in &r.spans {
                    span.execute(params![pass_id, what, ms]).map_err(e)?;
                }
                for (what, ms) in &r.statements {
                    stmt.execute(params![pass_id, what, ms]).map_err(e)?;
                }
                for (name, v) in &r.counters {
                    counter.execute(params![pass_id, name, v]).map_err(e)?;
                }
            }
        }
        judging::judge_added(&mut Tables { c: &tx, db: &self.path }, &self.path, meta, record, run_id)?;
        tx.commit().map_err(e)?;
        Ok(run_id)
    }

    fn load_judged(&mut self, medians: bool) -> Result<Option<JudgedHistory>, HistoryError> {
        let e = self.err();
        let judged: i64 = self.c.query_row("SELECT count(*) FROM judged", [], |r| r.get(0)).map_err(&e)?;
        let runs: Vec<Stored> = run_rows(&self.c).map_err(&e)?;
        if judged == 0 && !runs.is_empty() {
            return Ok(None);
        }
        let mut raw: Vec<judged::RawRow> = Vec::new();
        let mut stmt =
            self.c.prepare(if medians { judged::POINTS_WITH_MEDIANS } else { judged::POINTS }).map_err(&e)?;
        let mut rows = stmt.query([]).map_err(&e)?;
        while let Some(r) = rows.next().map_err(&e)? {
            let key = SeriesKey {
                benchmark: r.get(0).map_err(&e)?,
                machine: r.get(1).map_err(&e)?,
                pass: r.get(2).map_err(&e)?,
            };
            raw.push((key, r.get(3).map_err(&e)?, if medians { Some(r.get(4).map_err(&e)?) } else { None }));
        }
        let series = judged::parse_rows(&self.path, raw)?;
        Ok(Some(JudgedHistory { commits: crate::series::commits_of(&runs), series }))
    }

    fn load(&mut self) -> Result<Vec<Stored>, HistoryError> {
        load_rows(&self.c).map_err(self.err())
    }
}

/// One row a bundle (no passes): enough to list the commits.
fn run_rows(c: &Connection) -> rusqlite::Result<Vec<Stored>> {
    let mut q =
        c.prepare("SELECT id, commit_rev, commit_time, added_us, branch, machine, benchmark, bundle FROM runs")?;
    let rows = q.query_map([], |r| {
        Ok(Stored {
            run_id: r.get(0)?,
            commit: r.get(1)?,
            commit_time: r.get(2)?,
            added_us: r.get(3)?,
            branch: r.get(4)?,
            machine: r.get(5)?,
            benchmark: r.get(6)?,
            source: r.get(7)?,
            pass: String::new(),
            repeat: 0,
            evaluated_s: None,
            spans: Default::default(),
            counters: Default::default(),
        })
    })?;
    rows.collect()
}

/// The judged tables in `add`'s transaction.
struct Tables<'a> {
    c: &'a Connection,
    db: &'a str,
}

impl Tables<'_> {
    fn e(&self) -> impl Fn(rusqlite::Error) -> HistoryError + '_ {
        |source| HistoryError::Sqlite { db: self.db.to_string(), source }
    }
}

impl judging::Tables for Tables<'_> {
    fn lock(&mut self) -> Result<(), HistoryError> {
        Ok(())
    }

    fn counts(&mut self, run_id: i64) -> Result<(i64, i64), HistoryError> {
        let judged = self.c.query_row("SELECT count(*) FROM judged", [], |r| r.get(0)).map_err(self.e())?;
        let older =
            self.c.query_row("SELECT count(*) FROM runs WHERE id <> ?1", [run_id], |r| r.get(0)).map_err(self.e())?;
        Ok((judged, older))
    }

    fn added_us(&mut self, run_id: i64) -> Result<i64, HistoryError> {
        self.c.query_row("SELECT added_us FROM runs WHERE id = ?1", [run_id], |r| r.get(0)).map_err(self.e())
    }

    fn stored(&mut self) -> Result<Vec<Stored>, HistoryError> {
        load_rows(self.c).map_err(self.e())
    }

    fn clear_inputs(&mut self) -> Result<(), HistoryError> {
        self.c.execute("DELETE FROM judged_inputs", []).map(|_| ()).map_err(self.e())
    }

    fn series(&mut self) -> Result<Vec<SeriesKey>, HistoryError> {
        let mut s = self.c.prepare(judged::SERIES).map_err(self.e())?;
        let rows = s
            .query_map([], |r| Ok(SeriesKey { benchmark: r.get(0)?, machine: r.get(1)?, pass: r.get(2)? }))
            .map_err(self.e())?;
        rows.collect::<Result<_, _>>().map_err(self.e())
    }

    fn existing(&mut self, key: &SeriesKey, commit: &str) -> Result<Option<(i64, i64)>, HistoryError> {
        self.c
            .query_row(&q(judged::EXISTING), params![key.benchmark, key.machine, key.pass, commit], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(self.e())
    }

    fn read(
        &mut self,
        which: Rows,
        key: &SeriesKey,
        at: At<'_>,
        limit: i64,
    ) -> Result<Vec<(String, String)>, HistoryError> {
        let mut s = self.c.prepare_cached(&q(which.sql())).map_err(self.e())?;
        let (ct, au, commit) = at;
        let row = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get(1)?));
        let rows = if which.limited() {
            s.query_map(params![key.benchmark, key.machine, key.pass, ct, au, commit, limit], row)
        } else {
            s.query_map(params![key.benchmark, key.machine, key.pass, ct, au, commit], row)
        };
        rows.and_then(|r| r.collect()).map_err(self.e())
    }

    fn delete_from(&mut self, key: &SeriesKey, at: At<'_>) -> Result<(), HistoryError> {
        let (ct, au, commit) = at;
        for sql in judged::DELETE_FROM {
            self.c.execute(&q(sql), params![key.benchmark, key.machine, key.pass, ct, au, commit]).map_err(self.e())?;
        }
        Ok(())
    }

    fn write(&mut self, key: &SeriesKey, j: &Judged) -> Result<(), HistoryError> {
        let (point, medians, inputs) = judged::columns(j);
        let (b, m, p) = (&key.benchmark, &key.machine, &key.pass);
        let mut s = self.c.prepare_cached(&q(judged::INSERT[0])).map_err(self.e())?;
        s.execute(params![b, m, p, j.commit, j.commit_time, j.added_us, point, medians]).map_err(self.e())?;
        let mut s = self.c.prepare_cached(&q(judged::INSERT[1])).map_err(self.e())?;
        s.execute(params![b, m, p, j.commit, j.commit_time, j.added_us, inputs]).map(|_| ()).map_err(self.e())
    }
}

/// Every stored pass run with its span totals and counters.
fn load_rows(c: &Connection) -> rusqlite::Result<Vec<Stored>> {
    let mut q = c.prepare(
        "SELECT p.id, r.id, r.commit_rev, r.commit_time, r.added_us, r.branch, r.machine, p.pass, p.repeat, \
            p.evaluated_s, r.benchmark, r.bundle
                 FROM passes p JOIN runs r ON r.id = p.run_id ORDER BY r.commit_time, r.added_us, p.pass, p.repeat",
    )?;
    let rows = q.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Stored {
                run_id: r.get(1)?,
                commit: r.get(2)?,
                commit_time: r.get(3)?,
                added_us: r.get(4)?,
                branch: r.get(5)?,
                machine: r.get(6)?,
                pass: r.get(7)?,
                repeat: r.get(8)?,
                evaluated_s: r.get(9)?,
                benchmark: r.get(10)?,
                source: r.get(11)?,
                spans: Default::default(),
                counters: Default::default(),
            },
        ))
    })?;
    let mut out = Vec::new();
    let mut at: HashMap<i64, usize> = HashMap::new();
    for row in rows {
        let (pass_id, s) = row?;
        at.insert(pass_id, out.len());
        out.push(s);
    }
    let mut q = c.prepare("SELECT pass_id, what, total_ms FROM span_totals")?;
    let mut rows = q.query([])?;
    while let Some(r) = rows.next()? {
        let pass_id: i64 = r.get(0)?;
        if let Some(&i) = at.get(&pass_id) {
            out[i].spans.insert(r.get(1)?, r.get(2)?);
        }
    }
    let mut q = c.prepare("SELECT pass_id, name, value FROM counter_totals")?;
    let mut rows = q.query([])?;
    while let Some(r) = rows.next()? {
        let pass_id: i64 = r.get(0)?;
        if let Some(&i) = at.get(&pass_id) {
            out[i].counters.insert(r.get(1)?, r.get(2)?);
        }
    }
    Ok(out)
}
