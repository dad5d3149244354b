//! A pass and its repeats as samples, one value per run: the evaluated
//! seconds, every span total, every statement total. What `compare` judges.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evalbench_bundle::{layout, Bundle, PassDir};

use crate::{load, Fields, PassData};

/// Per run of a pass: evaluated seconds, span totals, statement totals.
pub struct Samples {
    pub runs: usize,
    /// Evaluated seconds (run.json) of the runs that give them; the others are `no_evaluated`.
    pub evaluated_s: Vec<f64>,
    /// "<process> <span>" to its total per run, ms; 0 where a run lacks it.
    pub spans: BTreeMap<String, Vec<f64>>,
    /// Normalized statement to its pg_stat_statements total per run, ms.
    pub statements: BTreeMap<String, Vec<f64>>,
    /// nix's counters per run, for the runs that have them (see `counters`).
    pub counters: BTreeMap<String, Vec<f64>>,
    /// The critical path's steps ("<process> <span>" or "wait: …") to
    /// their time on the path per run with a whole path (`path_runs` of
    /// them), ms; 0 where a run's path missed it.
    pub path: BTreeMap<String, Vec<f64>>,
    /// The runs with a whole critical path: those `path` holds.
    pub path_runs: usize,
    /// The `.drv` files each run's evaluation wrote to the nix store, where
    /// the bundle says (`store_writes`).
    pub drvs_written: Vec<Option<i64>>,
    /// What the machine did beside each run (run.json's `machine`).
    pub machine: Vec<Option<evalbench_bundle::MachineState>>,
    /// Which of an interleaved session's two targets ran each run (run.json's `instance`).
    pub instance: Vec<Option<u32>>,
    /// What reading the runs went past, each with its file and line: an
    /// unreadable run.json, malformed span lines.
    pub warnings: Vec<String>,
    /// The runs whose evaluated seconds run.json did not give (none, or
    /// unreadable): left out of `evaluated_s`, nothing standing in, and named.
    pub no_evaluated: Vec<String>,
}

/// One run's totals: "<process> <span>" to its total, and each normalized
/// statement to its pg_stat_statements total, both in ms.
pub struct Totals {
    pub spans: BTreeMap<String, f64>,
    pub statements: BTreeMap<String, f64>,
}

/// The totals of one run of a pass, from its loaded spans and its directory.
pub fn totals(data: &PassData, dir: &PassDir) -> Totals {
    Totals { spans: spans_of(data), statements: statements(dir) }
}

/// "<process> <span>" to its total over the run's loaded spans, ms.
fn spans_of(data: &PassData) -> BTreeMap<String, f64> {
    // Sums alone: the statistics' durations (8 bytes a span) are not needed.
    let mut by_name = crate::scan::ByName::new();
    for st in &data.streams {
        crate::scan::add_totals(&mut by_name, st, &mut st.spans.iter());
    }
    span_totals(by_name)
}

/// "<process> <span>" ([`span_key`]) to its total, ms.
fn span_totals(by_name: crate::scan::ByName<(i64, u64)>) -> BTreeMap<String, f64> {
    by_name
        .into_iter()
        .map(|((name, process), (total_us, _))| (span_key(&process, &name), total_us as f64 / 1e3))
        .collect()
}

/// A span name's key in comparisons and history: "<process> <span>", as
/// every stored series has it. A process whose name has a space (or
/// starts with a quote) is written as a JSON string, so that no two
/// (process, span) pairs share a key: "a" with "b c" and "a b" with "c"
/// were both "a b c", and one series silently took the other's place.
pub fn span_key(process: &str, name: &str) -> String {
    if process.contains(' ') || process.starts_with('"') {
        format!("{} {name}", serde_json::Value::from(process))
    } else {
        format!("{process} {name}")
    }
}

/// [`totals`] without loading the pass: its spans streamed through
/// [`crate::scan::totals`], memory growing with the span names alone. The
/// same figures, with what the scan learned (run.json, alignment, warnings).
/// `chunk`: [`evalbench_bundle::TRACE_CHUNK`] unless testing.
pub fn totals_scanned(dir: &PassDir, chunk: u64) -> (crate::scan::Scanned, Totals) {
    let (scanned, by_name) = crate::scan::totals(dir, chunk);
    (scanned, Totals { spans: span_totals(by_name), statements: statements(dir) })
}

/// Each normalized statement's pg_stat_statements total, ms (none where
/// the run has no readable file).
fn statements(dir: &PassDir) -> BTreeMap<String, f64> {
    read_statements(dir).ok().flatten().unwrap_or_default()
}

/// A run's statements: None where it has no pg_stat_statements.json, an
/// error (naming the file) where it has one that does not read.
pub fn read_statements(dir: &PassDir) -> Result<Option<BTreeMap<String, f64>>, evalbench_decode::DecodeError> {
    let path = dir.file(layout::PG_STAT_STATEMENTS);
    if !path.exists() {
        return Ok(None);
    }
    let rows = evalbench_decode::stats::statements(&path)?;
    let mut statements = BTreeMap::new();
    for r in rows {
        *statements.entry(evalbench_decode::normalize::normalize_sql(&r.query)).or_insert(0.0) += r.total_exec_time;
    }
    Ok(Some(statements))
}

/// The runs of one pass, in order.
pub fn samples(dirs: &[&PassDir]) -> Samples {
    let mut s = Samples {
        runs: dirs.len(),
        evaluated_s: Vec::new(),
        spans: BTreeMap::new(),
        statements: BTreeMap::new(),
        counters: BTreeMap::new(),
        path: BTreeMap::new(),
        drvs_written: Vec::new(),
        machine: Vec::new(),
        instance: Vec::new(),
        warnings: Vec::new(),
        no_evaluated: Vec::new(),
        path_runs: 0,
    };
    let (mut path_runs, mut statement_runs, mut without) = (0, 0, Vec::new());
    for (i, d) in dirs.iter().enumerate() {
        // Totals, counters and the path's steps read no other span's fields.
        let (data, align) = load(d, Fields::Read);
        match crate::evaluated(data.run.as_ref()) {
            Some(e) => s.evaluated_s.push(e),
            None => s.no_evaluated.push(d.name.clone()),
        }
        s.warnings.extend(data.warnings.iter().map(ToString::to_string));
        s.machine.push(data.run.as_ref().and_then(|r| r.runner.as_ref()).and_then(|r| r.machine));
        s.instance.push(data.run.as_ref().and_then(|r| r.runner.as_ref()).and_then(|r| r.instance));
        s.drvs_written.push(crate::store_writes::drvs_written(
            crate::counters::evaluation_metric(data.run.as_ref(), &data.dir).as_ref(),
        ));
        // A counter is a count of this run or absent: never filled with zeros.
        for (k, v) in crate::counters::of_pass(&data).unwrap_or_default() {
            s.counters.entry(k).or_default().push(v);
        }
        // Statements only from runs whose file read: a run without them is no row of zeros.
        let statements = read_statements(d).unwrap_or_else(|e| {
            s.warnings.push(format!("{e}: its statements left out"));
            None
        });
        if statements.is_none() {
            without.push(d.file(layout::PG_STAT_STATEMENTS));
        }
        let spans = spans_of(&data);
        // Last, with the spans given up: the path's walk does not hold them.
        // A run whose span files did not all read has a partial path, and
        // a run without a path has none: neither is a row of zeros.
        let partial = !data.unreadable_files.is_empty();
        let path: Option<BTreeMap<String, f64>> = crate::path::critical_steps(data, &align)
            .map(|steps| steps.iter().map(|st| (st.label(), st.on_path_us as f64 / 1e3)).collect())
            .ok()
            .filter(|_| !partial);
        add_run(&mut s.spans, spans, i);
        if let Some(st) = statements {
            add_run(&mut s.statements, st, statement_runs);
            statement_runs += 1;
        }
        if let Some(path) = path {
            add_run(&mut s.path, path, path_runs);
            path_runs += 1;
        }
    }
    s.path_runs = path_runs;
    // A run that lacks the file its pass's other runs have is named.
    if statement_runs > 0 {
        for p in without.into_iter().filter(|p| !p.exists()) {
            s.warnings.push(format!(
                "{}: missing, where the pass's other runs have one: its statements left out",
                p.display()
            ));
        }
    }
    s
}

/// Adds run `i`'s values to rows of one value per run: a name new in
/// this run is 0 in the runs before it, a name absent from it 0 in it.
fn add_run(into: &mut BTreeMap<String, Vec<f64>>, from: BTreeMap<String, f64>, i: usize) {
    for (k, v) in from {
        let e = into.entry(k).or_insert_with(|| vec![0.0; i]);
        e.push(v);
    }
    for v in into.values_mut() {
        v.resize(i + 1, 0.0);
    }
}

/// The bundle's passes by base name (`cold-clean` with `cold-clean.2` ...).
pub fn group(b: &Bundle) -> BTreeMap<String, Vec<&PassDir>> {
    layout::pass_groups(&b.passes, |p| &p.name).into_iter().collect()
}

/// Narrows a side's runs to the one `name` names where it names a run
/// (`cold-clean.2`; `cold-clean.1` is the run in `cold-clean`): a pass name
/// is the pass, all its runs. A run the bundle lacks is an error saying
/// how many the pass has, never the whole pass instead.
pub fn select_run(g: &mut BTreeMap<String, Vec<&PassDir>>, name: &str, source: &Path) -> Result<(), NoSuchRun> {
    let base = layout::base_name(name);
    let Some(n) = name.strip_prefix(base).and_then(|r| r.strip_prefix('.')).and_then(|r| r.parse::<usize>().ok())
    else {
        return Ok(());
    };
    let Some(runs) = g.get_mut(base) else {
        return Ok(()); // the pass itself is missing: said where passes are matched
    };
    let wanted = |d: &&&PassDir| if n == 1 { d.name == base } else { d.name == name };
    match runs.iter().find(wanted).copied() {
        Some(d) => {
            *runs = vec![d];
            Ok(())
        }
        None => Err(NoSuchRun {
            bundle: source.to_path_buf(),
            run: name.to_string(),
            pass: base.to_string(),
            runs: runs.len(),
        }),
    }
}

/// A run asked for (`cold-clean.7`) that its bundle's pass does not have.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: no run {run}: {pass} has {runs} runs, {pass}.1 (the directory {pass}) to {pass}.{runs}", bundle.display())]
pub struct NoSuchRun {
    pub bundle: PathBuf,
    pub run: String,
    pub pass: String,
    pub runs: usize,
}

/// The `--pg-setting`s of a pass's first run, from its run.json.
pub fn pg_settings(dirs: &[&PassDir]) -> BTreeMap<String, String> {
    dirs.first()
        .and_then(|d| evalbench_bundle::RunInfo::read(&d.file(layout::RUN_JSON)).ok())
        .and_then(|r| r.pg_settings().cloned())
        .unwrap_or_default()
}

/// A bundle's runs by pass ([`group`]).
pub type Grouped<'a> = BTreeMap<String, Vec<&'a PassDir>>;

/// [`select_run`] on each side whose pass is given: every side's error.
pub fn select_runs(sides: [(&mut Grouped<'_>, Option<&str>, &Bundle); 2]) -> Result<(), Vec<NoSuchRun>> {
    let errors: Vec<NoSuchRun> = sides.into_iter().filter_map(|(g, p, b)| select_run(g, p?, &b.source).err()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::span_key;

    /// Seeded (process, name) pairs from pieces full of spaces and quotes:
    /// two pairs share a key only when they are the same pair.
    #[test]
    fn no_two_spans_share_a_key() {
        let pieces = ["a", "b", " ", "a b", "\"", "\"a\"", "", "c d ", "\\"];
        let mut r = crate::seeded::Seeded(0x6b65_7973);
        let mut seen: std::collections::HashMap<String, (String, String)> = Default::default();
        for _ in 0..5000 {
            let mut word = || (0..r.next(4)).map(|_| pieces[r.next(pieces.len() as u64) as usize]).collect::<String>();
            let pair = (word(), word());
            let key = span_key(&pair.0, &pair.1);
            if let Some(other) = seen.insert(key.clone(), pair.clone()) {
                assert_eq!(other, pair, "{key:?}");
            }
        }
        assert_eq!(span_key("server", "record one"), "server record one");
    }
}
