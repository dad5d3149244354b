//! The judged series as both stores keep them: one row per commit of a
//! series (benchmark, machine, pass), ordered by commit time and then by
//! when the commit's first run was added. A row holds the judgement
//! (`point`, small: what `show` reads), the span medians (what the page
//! draws) and the runs' inputs (what a later commit's judgement reads).
//!
//! `add` judges only from the added commit on: the commits before it are
//! read (at most [`WINDOW_COMMITS`], with inputs for the last
//! [`BASELINE_COMMITS`]), the added commit and any commit after it (a
//! commit added out of order) are judged again, and their rows replaced.

use std::collections::BTreeMap;

use crate::judge::{judge, Judged, RunInput, BASELINE_COMMITS, WINDOW_COMMITS};
use crate::record::BundleRecord;
use crate::series::SeriesKey;
use crate::store::Meta;
use crate::HistoryError;

/// The table; `{float}` is not needed, JSON is TEXT in both.
pub(crate) const TABLE: &str = "
CREATE TABLE IF NOT EXISTS judged (
    benchmark TEXT NOT NULL,
    machine TEXT NOT NULL,
    pass TEXT NOT NULL,
    commit_rev TEXT NOT NULL,
    commit_time BIGINT NOT NULL,
    added_us BIGINT NOT NULL,
    point TEXT NOT NULL,
    span_medians TEXT NOT NULL,
    UNIQUE (benchmark, machine, pass, commit_rev)
);
CREATE INDEX IF NOT EXISTS judged_order ON judged (benchmark, machine, pass, commit_time, added_us, commit_rev);
-- The runs' totals, apart: only add reads them, and beside the judgements
-- they made every row overflow its page, so that reading the judgements
-- of 10,000 commits read half a gigabyte.
CREATE TABLE IF NOT EXISTS judged_inputs (
    benchmark TEXT NOT NULL,
    machine TEXT NOT NULL,
    pass TEXT NOT NULL,
    commit_rev TEXT NOT NULL,
    commit_time BIGINT NOT NULL,
    added_us BIGINT NOT NULL,
    inputs TEXT NOT NULL,
    UNIQUE (benchmark, machine, pass, commit_rev)
);
CREATE INDEX IF NOT EXISTS judged_inputs_order ON judged_inputs (benchmark, machine, pass, commit_time, added_us, \
    commit_rev);
";

/// The rows before an added commit, newest first, at most the window.
pub(crate) const BEFORE: &str = "SELECT commit_rev, point FROM judged
    WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, commit_rev) < ($4, $5, $6)
    ORDER BY commit_time DESC, added_us DESC, commit_rev DESC LIMIT $7";
/// The inputs of the newest of those, which a baseline reads.
pub(crate) const BEFORE_INPUTS: &str = "SELECT commit_rev, inputs FROM judged_inputs
    WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, commit_rev) < ($4, $5, $6)
    ORDER BY commit_time DESC, added_us DESC, commit_rev DESC LIMIT $7";
/// The added commit's row, if it has one, and every row after it.
pub(crate) const AFTER: &str = "SELECT commit_rev, point FROM judged
    WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, commit_rev) >= ($4, $5, $6)
    ORDER BY commit_time, added_us, commit_rev";
pub(crate) const AFTER_INPUTS: &str = "SELECT commit_rev, inputs FROM judged_inputs
    WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, commit_rev) >= ($4, $5, $6)";
pub(crate) const DELETE_FROM: [&str; 2] = [
    "DELETE FROM judged WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, commit_rev) >= \
        ($4, $5, $6)",
    "DELETE FROM judged_inputs WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND (commit_time, added_us, \
        commit_rev) >= ($4, $5, $6)",
];
/// Every series with judged rows.
pub(crate) const SERIES: &str =
    "SELECT DISTINCT benchmark, machine, pass FROM judged ORDER BY benchmark, machine, pass";
pub(crate) const EXISTING: &str =
    "SELECT commit_time, added_us FROM judged WHERE benchmark = $1 AND machine = $2 AND pass = $3 AND commit_rev = $4";
pub(crate) const INSERT: [&str; 2] = [
    "INSERT INTO judged (benchmark, machine, pass, commit_rev, commit_time, added_us, point, span_medians) VALUES ($1, \
        $2, $3, $4, $5, $6, $7, $8)",
    "INSERT INTO judged_inputs (benchmark, machine, pass, commit_rev, commit_time, added_us, inputs) VALUES ($1, $2, \
        $3, $4, $5, $6, $7)",
];
/// What `show` reads: no inputs; the page adds the span medians.
/// In the table's own order (a scan, not a walk of the index through the
/// table): [`parse_rows`] sorts each series after.
pub(crate) const POINTS: &str = "SELECT benchmark, machine, pass, point FROM judged";
pub(crate) const POINTS_WITH_MEDIANS: &str = "SELECT benchmark, machine, pass, point, span_medians FROM judged";

/// A judged row as read: its series, its point, its span medians (for the page).
pub(crate) type RawRow = (SeriesKey, String, Option<String>);

/// The rows read back as series, each in its commits' order (commit time,
/// first added, commit); parsed on every core, since at 10,000 commits the
/// JSON is most of `history report`'s time.
pub(crate) fn parse_rows(db: &str, rows: Vec<RawRow>) -> Result<BTreeMap<SeriesKey, Vec<Judged>>, HistoryError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = rows.len().div_ceil(cores).max(1);
    let parsed: Vec<Result<Vec<(SeriesKey, Judged)>, HistoryError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = rows
            .chunks(chunk)
            .map(|part| {
                sc.spawn(move || {
                    part.iter()
                        .map(|(key, point, medians)| {
                            let mut j: Judged = parse(db, "point", point)?;
                            if let Some(m) = medians {
                                j.span_medians = parse(db, "span_medians", m)?;
                            }
                            Ok((key.clone(), j))
                        })
                        .collect()
                })
            })
            .collect();
        // A panic here is a bug: it goes on with its own message.
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    let mut out: BTreeMap<SeriesKey, Vec<Judged>> = BTreeMap::new();
    for part in parsed {
        for (key, j) in part? {
            out.entry(key).or_default().push(j);
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (a.commit_time, a.added_us, &a.commit).cmp(&(b.commit_time, b.added_us, &b.commit)));
    }
    Ok(out)
}

/// SQLite numbers its parameters `?N`.
pub(crate) fn sqlite(sql: &str) -> String {
    sql.replace('$', "?")
}

/// The runs a bundle adds, per series.
pub(crate) fn series_runs(meta: &Meta, record: &BundleRecord) -> BTreeMap<SeriesKey, Vec<RunInput>> {
    let benchmark = meta.benchmark.clone().unwrap_or_else(|| "unknown benchmark".into());
    let machine = meta.machine.clone().unwrap_or_else(|| "unknown machine".into());
    let mut out: BTreeMap<SeriesKey, Vec<RunInput>> = BTreeMap::new();
    for r in &record.runs {
        let key = SeriesKey { benchmark: benchmark.clone(), machine: machine.clone(), pass: r.pass.clone() };
        out.entry(key).or_default().push(RunInput {
            evaluated_s: r.evaluated_s,
            spans: r.spans.clone(),
            counters: r.counters.clone(),
            path: r.path.clone(),
        });
    }
    out
}

/// The JSON of a row's three columns: point, span medians, inputs.
pub(crate) fn columns(j: &Judged) -> (String, String, String) {
    fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
        serde_json::to_string(v).expect("a judged row serializes")
    }
    (json(j), json(&j.span_medians), json(&j.inputs))
}

/// A row read back; `what` names it in an error.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(db: &str, what: &str, text: &str) -> Result<T, HistoryError> {
    serde_json::from_str(text).map_err(|e| unreadable(db, what, e))
}

fn unreadable(db: &str, what: &str, e: serde_json::Error) -> HistoryError {
    HistoryError::Invalid(format!(
        "{db}: table judged, {what}: unreadable ({e}); `history add` judges again from a history without judged rows"
    ))
}

/// A judged row as an older schema wrote it: everything but its changes
/// reads as now; the changes (schema 1: a sentence each, no grounds) are
/// left out, to be found again when the row is judged again.
pub(crate) fn parse_older(db: &str, text: &str) -> Result<Judged, HistoryError> {
    let mut v: serde_json::Value = parse(db, "point", text)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("changes".into(), serde_json::Value::Array(Vec::new()));
    }
    serde_json::from_value(v).map_err(|e| unreadable(db, "point", e))
}

/// The added commit and every commit after it, judged again: `before` in
/// order (oldest first), `after` the rows from the added commit's place on.
/// Returns the rows to write in place of `after`.
pub(crate) fn rejudge(
    pass: &str,
    before: Vec<Judged>,
    after: Vec<Judged>,
    added: (&str, i64, i64),
    runs: Vec<RunInput>,
) -> Vec<Judged> {
    let (commit, commit_time, added_us) = added;
    let mut rest = after.into_iter().peekable();
    let mut inputs = match rest.peek() {
        Some(first) if first.commit == commit => rest.next().map(|f| f.inputs).unwrap_or_default(),
        _ => Vec::new(),
    };
    inputs.extend(runs);
    let mut series = before;
    let from = series.len();
    let first = Judged::new(commit.to_string(), commit_time, added_us, inputs);
    for p in std::iter::once(first).chain(rest.map(|p| Judged::new(p.commit, p.commit_time, p.added_us, p.inputs))) {
        let j = judge(pass, &series, p);
        series.push(j);
    }
    series.split_off(from)
}

/// How far back `add` reads: the window, and the baseline's inputs (one
/// more than the baseline: the previous commit's counters are read too).
pub(crate) const READ_BACK: (i64, i64) = (WINDOW_COMMITS as i64, BASELINE_COMMITS as i64 + 1);
