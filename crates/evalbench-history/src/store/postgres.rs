//! The shared store: a PostgreSQL server that every CI machine writes to.
//! First use makes the tables under an advisory lock (four machines may
//! start at once); each `add` is one transaction, its span and statement
//! rows sent as arrays, one statement per table.

use std::collections::HashMap;

use tokio_postgres::{Client, GenericClient, NoTls, Transaction};

use evalbench_host::now_us;

use super::judged;
use super::judging::{self, At, Rows};
use super::{duplicate, newer, tables, JudgedHistory, Meta, Store, Stored, BENCHMARK_COLUMN, SCHEMA_VERSION};
use crate::error::pg;
use crate::judge::Judged;
use crate::record::BundleRecord;
use crate::series::SeriesKey;
use crate::HistoryError;

/// The advisory lock key that serializes migrations ("evalbench" in ASCII, folded).
const MIGRATION_LOCK: i64 = 0x6576_616c_6265_6e63;
/// The one that serializes judging: two machines adding to one series at
/// once must not both judge their commit against a series without the other's.
const JUDGE_LOCK: i64 = 0x6a75_6467_6564_0001;

pub struct PgStore {
    url: String,
    rt: tokio::runtime::Runtime,
    client: Client,
}

/// The URL without its password, for messages.
fn shown(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let user = &url[s + 3..at];
            let user = user.split(':').next().unwrap_or(user);
            format!("{}{user}{}", &url[..s + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

impl PgStore {
    /// With `create`, an empty database gets the tables; without, a
    /// database without them is an error.
    pub fn open(url: &str, create: bool) -> Result<PgStore, HistoryError> {
        let db = shown(url);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| HistoryError::Postgres { db: db.clone(), message: format!("tokio runtime: {e}") })?;
        let client = rt.block_on(async {
            let (client, conn) =
                tokio::time::timeout(std::time::Duration::from_secs(10), tokio_postgres::connect(url, NoTls))
                    .await
                    .map_err(|_| HistoryError::Postgres { db: db.clone(), message: "no answer within 10 s".into() })?
                    .map_err(|e| pg(&db, e))?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok::<_, HistoryError>(client)
        })?;
        let mut s = PgStore { url: db, rt, client };
        if !create {
            let made: Option<String> =
                s.rt.block_on(s.client.query_one("SELECT to_regclass('evalbench_schema')::text", &[]))
                    .map_err(|e| pg(&s.url, e))?
                    .get(0);
            if made.is_none() {
                return Err(super::no_history(&s.url, "no evalbench history in this database"));
            }
        }
        s.migrate()?;
        Ok(s)
    }

    fn migrate(&mut self) -> Result<(), HistoryError> {
        let db = self.url.clone();
        let ddl = tables("BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION");
        let PgStore { rt, client, .. } = self;
        let tx = rt.block_on(client.transaction()).map_err(|e| pg(&db, e))?;
        let found = rt.block_on(async {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(|e| pg(&db, e))?;
            // DDL only on an empty database: even CREATE INDEX IF NOT EXISTS
            // takes a SHARE lock, which deadlocks against another machine's
            // add (seen with four writers starting at once).
            let made: Option<String> =
                tx.query_one("SELECT to_regclass('evalbench_schema')::text", &[]).await.map_err(|e| pg(&db, e))?.get(0);
            if made.is_none() {
                tx.batch_execute(&ddl).await.map_err(|e| pg(&db, e))?;
            }
            // A database made before the benchmark was kept gets its column, once, under the lock.
            let has: i64 = tx
                .query_one(
                    "SELECT count(*) FROM information_schema.columns WHERE table_name = 'runs' AND column_name = \
                        'benchmark' AND table_schema = current_schema()",
                    &[],
                )
                .await
                .map_err(|e| pg(&db, e))?
                .get(0);
            if has == 0 {
                tx.batch_execute(BENCHMARK_COLUMN).await.map_err(|e| pg(&db, e))?;
            }
            // A database made before judgements were kept gets their table, once, under the lock.
            let judged: Option<String> =
                tx.query_one("SELECT to_regclass('judged')::text", &[]).await.map_err(|e| pg(&db, e))?.get(0);
            if judged.is_none() {
                tx.batch_execute(judged::TABLE).await.map_err(|e| pg(&db, e))?;
            }
            let found: Option<i64> =
                tx.query_one("SELECT max(version) FROM evalbench_schema", &[]).await.map_err(|e| pg(&db, e))?.get(0);
            Ok::<_, HistoryError>(found)
        })?;
        match found {
            Some(v) if v > SCHEMA_VERSION => return Err(newer(&db, v)),
            Some(v) if v == SCHEMA_VERSION => {}
            older => {
                if older.is_some() {
                    // Under the migration lock, in its transaction: one writer judges again.
                    judging::judge_stored_again(&mut Tables { rt, c: &tx, db: &db }, &db)?;
                }
                rt.block_on(tx.execute("INSERT INTO evalbench_schema (version) VALUES ($1)", &[&SCHEMA_VERSION]))
                    .map_err(|e| pg(&db, e))?;
            }
        }
        rt.block_on(tx.commit()).map_err(|e| pg(&db, e))
    }
}

impl Store for PgStore {
    fn add(&mut self, meta: &Meta, record: &BundleRecord) -> Result<i64, HistoryError> {
        let db = self.url.clone();
        let e = |x| pg(&db, x);
        let PgStore { rt, client, .. } = self;
        let tx = rt.block_on(client.transaction()).map_err(e)?;
        let run_id = rt.block_on(async {
            // Two machines adding the same bundle at once: the UNIQUE digest
            // makes the second fail; checking first gives it a clear word.
            if let Some(r) = tx
                .query_opt("SELECT added_us, commit_rev FROM runs WHERE digest = $1", &[&record.digest])
                .await
                .map_err(e)?
            {
                return Err(duplicate(meta, r.get(0), r.get(1)));
            }
            let run_id: i64 = tx
                .query_one(
                    "INSERT INTO runs (digest, commit_rev, commit_time, added_us, branch, machine, bundle, benchmark)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                    &[
                        &record.digest,
                        &meta.commit,
                        &meta.commit_time,
                        &now_us(),
                        &meta.branch,
                        &meta.machine,
                        &meta.bundle,
                        &meta.benchmark,
                    ],
                )
                .await
                .map_err(e)?
                .get(0);
            for r in &record.runs {
                let metric = r.metric.as_ref().map(|m| m.to_string());
                let pass_id: i64 = tx
                    .query_one(
                        "INSERT INTO passes (run_id, pass, repeat, evaluated_s, metric, offset_us, bound_us)
                         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                        &[&run_id, &r.pass, &r.repeat, &r.evaluated_s, &metric, &r.offset_us, &r.bound_us],
                    )
                    .await
                    .map_err(e)?
                    .get(0);
                let (what, ms): (Vec<&str>, Vec<f64>) = r.spans.iter().map(|(k, v)| (k.as_str(), *v)).unzip();
                tx.execute(
                    "INSERT INTO span_totals (pass_id, what, total_ms) SELECT $1, * FROM unnest($2::text[], \
                        $3::float8[])",
                    &[&pass_id, &what, &ms],
                )
                .await
                .map_err(e)?;
                let (what, ms): (Vec<&str>, Vec<f64>) = r.statements.iter().map(|(k, v)| (k.as_str(), *v)).unzip();
                tx.execute(
                    "INSERT INTO statement_totals (pass_id, statement, total_ms) SELECT $1, * FROM unnest($2::text[], \
                        $3::float8[])",
                    &[&pass_id, &what, &ms],
                )
                .await
                .map_err(e)?;
                let (name, v): (Vec<&str>, Vec<f64>) = r.counters.iter().map(|(k, v)| (k.as_str(), *v)).unzip();
                tx.execute(
                    "INSERT INTO counter_totals (pass_id, name, value) SELECT $1, * FROM unnest($2::text[], \
                        $3::float8[])",
                    &[&pass_id, &name, &v],
                )
                .await
                .map_err(e)?;
            }
            Ok::<_, HistoryError>(run_id)
        })?;
        judging::judge_added(&mut Tables { rt, c: &tx, db: &db }, &db, meta, record, run_id)?;
        rt.block_on(tx.commit()).map_err(e)?;
        Ok(run_id)
    }

    fn load_judged(&mut self, medians: bool) -> Result<Option<JudgedHistory>, HistoryError> {
        let db = self.url.clone();
        let e = |x| pg(&db, x);
        self.rt.block_on(async {
            let judged: i64 = self.client.query_one("SELECT count(*) FROM judged", &[]).await.map_err(e)?.get(0);
            let runs = run_rows(&self.client).await.map_err(e)?;
            if judged == 0 && !runs.is_empty() {
                return Ok(None);
            }
            let rows = self
                .client
                .query(if medians { judged::POINTS_WITH_MEDIANS } else { judged::POINTS }, &[])
                .await
                .map_err(e)?;
            let raw: Vec<judged::RawRow> = rows
                .iter()
                .map(|r| {
                    (
                        SeriesKey { benchmark: r.get(0), machine: r.get(1), pass: r.get(2) },
                        r.get(3),
                        if medians { Some(r.get(4)) } else { None },
                    )
                })
                .collect();
            let series = judged::parse_rows(&db, raw)?;
            Ok(Some(JudgedHistory { commits: crate::series::commits_of(&runs), series }))
        })
    }

    fn load(&mut self) -> Result<Vec<Stored>, HistoryError> {
        let db = self.url.clone();
        self.rt.block_on(load_rows(&self.client)).map_err(|x| pg(&db, x))
    }
}

/// One row a bundle (no passes): enough to list the commits.
async fn run_rows(c: &impl GenericClient) -> Result<Vec<Stored>, tokio_postgres::Error> {
    let rows = c
        .query("SELECT id, commit_rev, commit_time, added_us, branch, machine, benchmark, bundle FROM runs", &[])
        .await?;
    Ok(rows
        .iter()
        .map(|r| Stored {
            run_id: r.get(0),
            commit: r.get(1),
            commit_time: r.get(2),
            added_us: r.get(3),
            branch: r.get(4),
            machine: r.get(5),
            benchmark: r.get(6),
            source: r.get(7),
            pass: String::new(),
            repeat: 0,
            evaluated_s: None,
            spans: Default::default(),
            counters: Default::default(),
        })
        .collect())
}

/// The judged tables in `add`'s transaction, each call run to its end.
struct Tables<'a> {
    rt: &'a tokio::runtime::Runtime,
    c: &'a Transaction<'a>,
    db: &'a str,
}

impl Tables<'_> {
    fn run<T>(
        &self,
        f: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, HistoryError> {
        self.rt.block_on(f).map_err(|x| pg(self.db, x))
    }
}

impl judging::Tables for Tables<'_> {
    /// Two machines adding to one series at once must not both judge their
    /// commit against a series without the other's.
    fn lock(&mut self) -> Result<(), HistoryError> {
        self.run(self.c.execute("SELECT pg_advisory_xact_lock($1)", &[&JUDGE_LOCK])).map(|_| ())
    }

    fn counts(&mut self, run_id: i64) -> Result<(i64, i64), HistoryError> {
        let judged = self.run(self.c.query_one("SELECT count(*) FROM judged", &[]))?.get(0);
        let older = self.run(self.c.query_one("SELECT count(*) FROM runs WHERE id <> $1", &[&run_id]))?.get(0);
        Ok((judged, older))
    }

    fn added_us(&mut self, run_id: i64) -> Result<i64, HistoryError> {
        Ok(self.run(self.c.query_one("SELECT added_us FROM runs WHERE id = $1", &[&run_id]))?.get(0))
    }

    fn stored(&mut self) -> Result<Vec<Stored>, HistoryError> {
        self.run(load_rows(self.c))
    }

    fn clear_inputs(&mut self) -> Result<(), HistoryError> {
        self.run(self.c.execute("DELETE FROM judged_inputs", &[])).map(|_| ())
    }

    fn series(&mut self) -> Result<Vec<SeriesKey>, HistoryError> {
        let rows = self.run(self.c.query(judged::SERIES, &[]))?;
        Ok(rows.iter().map(|r| SeriesKey { benchmark: r.get(0), machine: r.get(1), pass: r.get(2) }).collect())
    }

    fn existing(&mut self, key: &SeriesKey, commit: &str) -> Result<Option<(i64, i64)>, HistoryError> {
        let r = self.run(self.c.query_opt(judged::EXISTING, &[&key.benchmark, &key.machine, &key.pass, &commit]))?;
        Ok(r.map(|r| (r.get(0), r.get(1))))
    }

    fn read(
        &mut self,
        which: Rows,
        key: &SeriesKey,
        at: At<'_>,
        limit: i64,
    ) -> Result<Vec<(String, String)>, HistoryError> {
        let (ct, au, commit) = at;
        let rows = if which.limited() {
            self.run(self.c.query(which.sql(), &[&key.benchmark, &key.machine, &key.pass, &ct, &au, &commit, &limit]))?
        } else {
            self.run(self.c.query(which.sql(), &[&key.benchmark, &key.machine, &key.pass, &ct, &au, &commit]))?
        };
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn delete_from(&mut self, key: &SeriesKey, at: At<'_>) -> Result<(), HistoryError> {
        let (ct, au, commit) = at;
        for sql in judged::DELETE_FROM {
            self.run(self.c.execute(sql, &[&key.benchmark, &key.machine, &key.pass, &ct, &au, &commit]))?;
        }
        Ok(())
    }

    fn write(&mut self, key: &SeriesKey, j: &Judged) -> Result<(), HistoryError> {
        let (point, medians, inputs) = judged::columns(j);
        let (b, m, p) = (&key.benchmark, &key.machine, &key.pass);
        self.run(
            self.c.execute(judged::INSERT[0], &[b, m, p, &j.commit, &j.commit_time, &j.added_us, &point, &medians]),
        )?;
        self.run(self.c.execute(judged::INSERT[1], &[b, m, p, &j.commit, &j.commit_time, &j.added_us, &inputs]))
            .map(|_| ())
    }
}

/// Every stored pass run with its span totals and counters.
async fn load_rows(c: &impl GenericClient) -> Result<Vec<Stored>, tokio_postgres::Error> {
    let rows = c
        .query(
            "SELECT p.id, r.id, r.commit_rev, r.commit_time, r.added_us, r.branch, r.machine, p.pass, p.repeat, \
                p.evaluated_s, r.benchmark, r.bundle
             FROM passes p JOIN runs r ON r.id = p.run_id ORDER BY r.commit_time, r.added_us, p.pass, p.repeat",
            &[],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    let mut at: HashMap<i64, usize> = HashMap::new();
    for r in rows {
        at.insert(r.get(0), out.len());
        out.push(Stored {
            run_id: r.get(1),
            commit: r.get(2),
            commit_time: r.get(3),
            added_us: r.get(4),
            branch: r.get(5),
            machine: r.get(6),
            pass: r.get(7),
            repeat: r.get(8),
            evaluated_s: r.get(9),
            benchmark: r.get(10),
            source: r.get(11),
            spans: Default::default(),
            counters: Default::default(),
        });
    }
    for r in c.query("SELECT pass_id, what, total_ms FROM span_totals", &[]).await? {
        if let Some(&i) = at.get(&r.get::<_, i64>(0)) {
            out[i].spans.insert(r.get(1), r.get(2));
        }
    }
    for r in c.query("SELECT pass_id, name, value FROM counter_totals", &[]).await? {
        if let Some(&i) = at.get(&r.get::<_, i64>(0)) {
            out[i].counters.insert(r.get(1), r.get(2));
        }
    }
    Ok(out)
}
