//! Two bundles compared pass by pass: the passes' evaluated seconds (one
//! family), then per pass its spans, its statements and nix's counters,
//! each verdict held to the rules of [`crate::verdict`]. A cold pass is
//! never set against a warm one, nor a clean one against an instrumented
//! one. The report formats what this computes (`evalbench_report::output`).

use std::collections::BTreeMap;

use evalbench_bundle::{layout, Bundle, PassDir, RunInfo};
use serde::Serialize;

use crate::counters::{judge_counters, CounterVerdict};
use crate::plans::{self, PlanRow};
use crate::runs;
use crate::verdict::{judge, Family, Measured, Rules, Verdict, TIME};

/// What to compare, and the floors under which a change is negligible.
#[derive(Debug, Clone, Default)]
pub struct Opts {
    /// This pass of A (with its repeats) against `pass_b` of B; else every pass both have.
    pub pass_a: Option<String>,
    pub pass_b: Option<String>,
    pub min_change: f64,
    pub min_abs_us: f64,
}

/// evaluated_s comes from µs timestamps: its resolution.
const EVALUATED_RESOLUTION_S: f64 = 1e-6;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub what: String,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassComparison {
    pub pass_a: String,
    pub pass_b: String,
    pub runs_a: usize,
    pub runs_b: usize,
    pub wall: Verdict,
    pub spans: Vec<Row>,
    pub statements: Vec<Row>,
    /// nix's counters: exact ones by equality, the rest like times.
    pub counters: Vec<CounterVerdict>,
    /// The families these verdicts were corrected in, with a word on power:
    /// the evaluated seconds, then this pass's spans, statements, counters.
    pub families: Vec<Family>,
    /// Instrumented passes: every statement's plans on both sides (auto_explain),
    /// the changes first. None for clean passes, which log no plans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans: Option<Vec<PlanRow>>,
    /// Runs whose plans could not be read, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan_notes: Vec<String>,
    /// PostgreSQL settings each side's first run was given (`--pg-setting`), as the server showed them.
    pub pg_settings_a: BTreeMap<String, String>,
    pub pg_settings_b: BTreeMap<String, String>,
}

/// The `--pg-setting`s of a pass's first run, from its run.json.
fn pg_settings(dirs: &[&PassDir]) -> BTreeMap<String, String> {
    dirs.first().and_then(|d| RunInfo::read(&d.file(layout::RUN_JSON)).ok()).and_then(|r| r.pg_settings().cloned()).unwrap_or_default()
}

/// Span and statement totals are in milliseconds; one family per kind and pass.
fn rows(name: &str, a: &BTreeMap<String, Vec<f64>>, b: &BTreeMap<String, Vec<f64>>, floor_ms: f64, rules: Rules) -> (Vec<Row>, Family) {
    let items: Vec<Measured> =
        a.iter().filter_map(|(k, va)| b.get(k).map(|vb| Measured { what: k.clone(), a: va.clone(), b: vb.clone(), floor_abs: floor_ms })).collect();
    let mut family = judge(name, items, "ms", TIME, rules);
    let mut out: Vec<Row> = std::mem::take(&mut family.verdicts).into_iter().map(|(what, verdict)| Row { what, verdict }).collect();
    // Verdicts outside noise first, then by size of the change.
    out.sort_by(|x, y| {
        let ox = x.verdict.kind.is_change();
        let oy = y.verdict.kind.is_change();
        oy.cmp(&ox).then(y.verdict.change_pct.abs().total_cmp(&x.verdict.change_pct.abs())).then(x.what.cmp(&y.what))
    });
    (out, family)
}

/// Compares two bundles; an error says why they cannot be compared.
pub fn compare(ba: &Bundle, bb: &Bundle, o: &Opts) -> Result<Vec<PassComparison>, String> {
    let (ga, gb) = (runs::group(ba), runs::group(bb));
    let pairs: Vec<(String, String)> = match (&o.pass_a, &o.pass_b) {
        (Some(x), Some(y)) => {
            let (x, y) = (layout::base_name(x).to_string(), layout::base_name(y).to_string());
            if layout::is_cold(&x) != layout::is_cold(&y) {
                return Err(format!(
                    "refusing to compare {x} with {y}: one is cold (empty eval cache) and the other warm; a warm run's speed is the cache's, not the change's"
                ));
            }
            if layout::is_clean(&x) != layout::is_clean(&y) {
                return Err(format!(
                    "refusing to compare {x} with {y}: an instrumented pass's timings are distorted by perf, strace and auto_explain"
                ));
            }
            vec![(x, y)]
        }
        _ => ga.keys().filter(|k| gb.contains_key(*k)).map(|k| (k.clone(), k.clone())).collect(),
    };
    if pairs.is_empty() {
        return Err(format!("{} and {} have no pass in common", ba.source.display(), bb.source.display()));
    }
    let rules = Rules { min_change_pct: o.min_change, ..Rules::default() };
    let floor_ms = o.min_abs_us / 1e3;
    let mut out = Vec::new();
    let mut headlines = Vec::new();
    for (pa, pb) in pairs {
        let (Some(da), Some(db)) = (ga.get(&pa), gb.get(&pb)) else {
            return Err(format!("no pass {pa} in {} or no pass {pb} in {}", ba.source.display(), bb.source.display()));
        };
        let (sa, sb) = (runs::samples(da), runs::samples(db));
        headlines.push(Measured { what: format!("{pa} evaluated"), a: sa.wall.clone(), b: sb.wall.clone(), floor_abs: EVALUATED_RESOLUTION_S });
        let (spans, fs) = rows(&format!("{pa} spans"), &sa.spans, &sb.spans, floor_ms, rules);
        let (statements, fq) = rows(&format!("{pa} statements"), &sa.statements, &sb.statements, floor_ms, rules);
        let (counters, fc) = judge_counters(&pa, &sa.counters, &sb.counters, rules);
        let (plans, notes) = if layout::is_clean(&pa) {
            (None, Vec::new())
        } else {
            let (ka, kb) = (plans::book(da), plans::book(db));
            let notes = ka.missing.iter().map(|m| format!("A: {m}")).chain(kb.missing.iter().map(|m| format!("B: {m}"))).collect();
            // Bundles without plans (the sample pipeline, a target without
            // auto_explain) say so in a note rather than with an empty list.
            let none = ka.statements.is_empty() && kb.statements.is_empty() && !ka.missing.is_empty() && !kb.missing.is_empty();
            ((!none).then(|| plans::compare(&ka, &kb)), notes)
        };
        let settings = (pg_settings(da), pg_settings(db));
        out.push((pa, pb, sa.runs, sb.runs, spans, statements, counters, vec![fs, fq, fc], plans, notes, settings));
    }
    // The headlines of the passes compared are one family: two passes tested
    // at 5% each would call identical inputs changed in one pair of ten.
    let mut head = judge("evaluated", headlines, "s", TIME, rules);
    let walls = std::mem::take(&mut head.verdicts);
    let mut out: Vec<PassComparison> = out
        .into_iter()
        .zip(walls)
        .map(|((pass_a, pass_b, runs_a, runs_b, spans, statements, counters, mut families, plans, plan_notes, settings), (_, wall))| {
            families.insert(0, head.clone());
            let (pg_settings_a, pg_settings_b) = settings;
            PassComparison {
                pass_a,
                pass_b,
                runs_a,
                runs_b,
                wall,
                spans,
                statements,
                counters,
                families,
                plans,
                plan_notes,
                pg_settings_a,
                pg_settings_b,
            }
        })
        .collect();
    // A changed plan beside its statement's time: the clean pass of the same
    // temperature measured it undistorted.
    let clean: BTreeMap<String, BTreeMap<String, Verdict>> = out
        .iter()
        .filter(|c| layout::is_clean(&c.pass_a))
        .map(|c| (c.pass_a.clone(), c.statements.iter().map(|r| (r.what.clone(), r.verdict.clone())).collect()))
        .collect();
    for c in &mut out {
        let Some(rows) = &mut c.plans else { continue };
        let Some(verdicts) = clean.get(&layout::clean_of(&c.pass_a)) else { continue };
        for r in rows {
            r.statement_verdict = verdicts.get(&r.statement).cloned();
        }
    }
    Ok(out)
}
