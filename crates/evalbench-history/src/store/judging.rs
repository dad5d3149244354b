//! Judging what `add` stored, written once for both stores. A store gives
//! [`Tables`]: the few reads and writes of the judged tables, inside the
//! add's transaction; what is read back, how rows are matched and what is
//! judged again is decided here, so the two stores cannot drift apart.
//!
//! Rows of `judged` and `judged_inputs` are matched by commit, never by
//! position: a database where the two disagree (a row deleted by hand, a
//! restore of one table) is a clear error that says how to recover, not a
//! panic or a judgement made from another commit's runs.

use std::collections::HashMap;

use crate::judge::Judged;
use crate::record::BundleRecord;
use crate::series::SeriesKey;
use crate::store::judged::{self, READ_BACK};
use crate::store::{Meta, Stored};
use crate::HistoryError;

/// A commit's place in its series: (commit time, first added, commit).
pub(crate) type At<'a> = (i64, i64, &'a str);

/// Which of judged's row sets a query reads (see the SQL in [`judged`]).
#[derive(Clone, Copy)]
pub(crate) enum Rows {
    /// `judged` before the place, newest first, at most the limit.
    Before,
    /// `judged_inputs` likewise.
    BeforeInputs,
    /// `judged` from the place on, oldest first.
    After,
    /// `judged_inputs` from the place on.
    AfterInputs,
}

impl Rows {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Rows::Before => judged::BEFORE,
            Rows::BeforeInputs => judged::BEFORE_INPUTS,
            Rows::After => judged::AFTER,
            Rows::AfterInputs => judged::AFTER_INPUTS,
        }
    }
    /// Whether the query takes a limit ($7).
    pub(crate) fn limited(self) -> bool {
        matches!(self, Rows::Before | Rows::BeforeInputs)
    }
}

/// What judging needs of a store, in the add's transaction. Each error is
/// the store's own, naming the database.
pub(crate) trait Tables {
    /// Serializes judging against other writers (PostgreSQL: an advisory
    /// lock; SQLite's immediate transaction does it already).
    fn lock(&mut self) -> Result<(), HistoryError>;
    /// Rows in `judged`, and runs other than `run_id`.
    fn counts(&mut self, run_id: i64) -> Result<(i64, i64), HistoryError>;
    /// When `run_id` was added (Unix µs).
    fn added_us(&mut self, run_id: i64) -> Result<i64, HistoryError>;
    /// Every stored pass run, to judge a history from its start.
    fn stored(&mut self) -> Result<Vec<Stored>, HistoryError>;
    /// Deletes every row of `judged_inputs`.
    fn clear_inputs(&mut self) -> Result<(), HistoryError>;
    /// Every series with judged rows.
    fn series(&mut self) -> Result<Vec<SeriesKey>, HistoryError>;
    /// The place of `commit`'s row in the series, if it has one.
    fn existing(&mut self, key: &SeriesKey, commit: &str) -> Result<Option<(i64, i64)>, HistoryError>;
    /// (commit, JSON text) of the rows `which` selects.
    fn read(
        &mut self,
        which: Rows,
        key: &SeriesKey,
        at: At<'_>,
        limit: i64,
    ) -> Result<Vec<(String, String)>, HistoryError>;
    /// Deletes the series' rows of both tables from `at` on.
    fn delete_from(&mut self, key: &SeriesKey, at: At<'_>) -> Result<(), HistoryError>;
    /// Writes one judged row into both tables.
    fn write(&mut self, key: &SeriesKey, j: &Judged) -> Result<(), HistoryError>;
}

/// Judges what `add` just stored: from the added commit on, in each series
/// it touches; or, in a history whose runs were stored before judgements
/// were kept, every series from its start, once.
pub(crate) fn judge_added(
    t: &mut impl Tables,
    db: &str,
    meta: &Meta,
    record: &BundleRecord,
    run_id: i64,
) -> Result<(), HistoryError> {
    t.lock()?;
    let (judged_rows, older) = t.counts(run_id)?;
    if judged_rows == 0 && older > 0 {
        // Whatever is left of an earlier judgement goes with it.
        t.clear_inputs()?;
        for (key, rows) in crate::series::judge_all(&t.stored()?) {
            for j in &rows {
                t.write(&key, j)?;
            }
        }
        return Ok(());
    }
    let (window, baseline) = READ_BACK;
    let added_us = t.added_us(run_id)?;
    for (key, runs) in judged::series_runs(meta, record) {
        let (ct, au) = t.existing(&key, &meta.commit)?.unwrap_or((meta.commit_time, added_us));
        let at = (ct, au, meta.commit.as_str());
        let mut before = points(t, db, &key, Rows::Before, at, window)?;
        before.reverse();
        let inputs = t.read(Rows::BeforeInputs, &key, at, baseline)?;
        // The baseline reads the newest rows' inputs: each must be there.
        attach(db, &key, &mut before, inputs, baseline as usize)?;
        let mut after = points(t, db, &key, Rows::After, at, 0)?;
        let inputs = t.read(Rows::AfterInputs, &key, at, 0)?;
        let n = after.len();
        attach(db, &key, &mut after, inputs, n)?;
        let rows = judged::rejudge(&key.pass, before, after, (&meta.commit, ct, au), runs);
        t.delete_from(&key, at)?;
        for j in &rows {
            t.write(&key, j)?;
        }
    }
    Ok(())
}

/// A history of an older schema (`SCHEMA_VERSION`), judged again from its
/// own rows: each series from its first commit, each row with its inputs
/// (the runs' totals, counters and critical paths, which the runs table
/// does not keep), its changes found again in today's form. The series'
/// points stay as they were; only what the changes hold is new.
pub(crate) fn judge_stored_again(t: &mut impl Tables, db: &str) -> Result<(), HistoryError> {
    let from: At<'_> = (i64::MIN, i64::MIN, "");
    for key in t.series()? {
        let mut rows = t
            .read(Rows::After, &key, from, 0)?
            .iter()
            .map(|(_, point)| judged::parse_older(db, point))
            .collect::<Result<Vec<Judged>, _>>()?;
        let inputs = t.read(Rows::AfterInputs, &key, from, 0)?;
        let n = rows.len();
        attach(db, &key, &mut rows, inputs, n)?;
        let Some(first) = rows.first() else { continue };
        let (commit, ct, au) = (first.commit.clone(), first.commit_time, first.added_us);
        let rows = judged::rejudge(&key.pass, Vec::new(), rows, (&commit, ct, au), Vec::new());
        t.delete_from(&key, from)?;
        for j in &rows {
            t.write(&key, j)?;
        }
    }
    Ok(())
}

fn points(
    t: &mut impl Tables,
    db: &str,
    key: &SeriesKey,
    which: Rows,
    at: At<'_>,
    limit: i64,
) -> Result<Vec<Judged>, HistoryError> {
    t.read(which, key, at, limit)?.iter().map(|(_, point)| judged::parse(db, "point", point)).collect()
}

/// Gives each row its inputs, matched by commit. An inputs row without its
/// judged row, or one of the newest `needed` judged rows without inputs,
/// means the two tables disagree.
fn attach(
    db: &str,
    key: &SeriesKey,
    rows: &mut [Judged],
    inputs: Vec<(String, String)>,
    needed: usize,
) -> Result<(), HistoryError> {
    let at: HashMap<&str, usize> = rows.iter().enumerate().map(|(i, j)| (j.commit.as_str(), i)).collect();
    let mut found = vec![false; rows.len()];
    let mut parsed = Vec::with_capacity(inputs.len());
    for (commit, text) in &inputs {
        let Some(&i) = at.get(commit.as_str()) else {
            return Err(disagree(db, key, commit, "judged_inputs", "judged"));
        };
        parsed.push((i, judged::parse(db, "inputs", text)?));
        found[i] = true;
    }
    for (i, v) in parsed {
        rows[i].inputs = v;
    }
    let from = rows.len() - needed.min(rows.len());
    if let Some(i) = (from..rows.len()).find(|&i| !found[i]) {
        return Err(disagree(db, key, &rows[i].commit, "judged", "judged_inputs"));
    }
    Ok(())
}

fn disagree(db: &str, key: &SeriesKey, commit: &str, has: &str, lacks: &str) -> HistoryError {
    HistoryError::Invalid(format!(
        "{db}: tables judged and judged_inputs disagree: commit {commit} of series {} / {} / {} has a row in {has} and \
            none in {lacks}; `DELETE FROM judged; DELETE FROM judged_inputs;` and the next `history add` judges every \
            series again from the runs",
        key.benchmark, key.machine, key.pass
    ))
}
