//! `evalbench compare A B`: two bundles, pass by pass, with verdicts that
//! survive scrutiny: a change is "outside noise" only when the tests say so,
//! a pass with one run gives no verdict, and a cold pass is never set
//! against a warm one.

use std::collections::BTreeMap;

use evalbench_host::outln;
use std::path::PathBuf;
use std::process::ExitCode;

use evalbench_analyze::counters::{judge_counters, CounterVerdict};
use evalbench_analyze::runs;
use evalbench_analyze::verdict::{judge, Family, Kind, Measured, Rules, Verdict, TIME};
use evalbench_bundle::{layout, Bundle, Limits};
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline bundle (directory or .tar.gz).
    pub a: PathBuf,
    /// The bundle to judge against it.
    pub b: PathBuf,
    /// Compare this pass of A (with its repeats) ...
    #[arg(long, requires = "pass_b")]
    pub pass_a: Option<String>,
    /// ... against this pass of B. Refused when one is cold and the other warm.
    #[arg(long, requires = "pass_a")]
    pub pass_b: Option<String>,
    /// Print every verdict as JSON on stdout (per pass: headline, spans, statements, families).
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when a pass's wall time is slower outside noise by at least this many percent.
    #[arg(long)]
    pub fail_on_regression: Option<f64>,
    /// Span and statement rows to print per pass (all are in --json).
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// A change smaller than this percentage of A's median is "negligible".
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub min_change: f64,
    /// ... and so is a change of a span's or statement's total smaller than this many µs per run.
    #[arg(long, default_value_t = 50.0, value_name = "US")]
    pub min_abs_us: f64,
    /// Refuse archives that unpack to more than this (e.g. 512M, 16G).
    #[arg(long, default_value = "16G", value_parser = crate::size::parse_size)]
    pub max_unpacked: u64,
}

/// evaluated_s comes from µs timestamps: its resolution.
const EVALUATED_RESOLUTION_S: f64 = 1e-6;

#[derive(Serialize)]
struct Row {
    what: String,
    verdict: Verdict,
}

#[derive(Serialize)]
struct PassComparison {
    pass_a: String,
    pass_b: String,
    runs_a: usize,
    runs_b: usize,
    wall: Verdict,
    spans: Vec<Row>,
    statements: Vec<Row>,
    /// nix's counters: exact ones by equality, the rest like times.
    counters: Vec<CounterVerdict>,
    /// The families these verdicts were corrected in, with a word on power.
    families: Vec<Family>,
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

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let ba = Bundle::open(&a.a, Limits { max_unpacked_bytes: a.max_unpacked, ..Limits::default() })?;
    let bb = Bundle::open(&a.b, Limits { max_unpacked_bytes: a.max_unpacked, ..Limits::default() })?;
    let (ga, gb) = (runs::group(&ba), runs::group(&bb));
    let pairs: Vec<(String, String)> = match (&a.pass_a, &a.pass_b) {
        (Some(x), Some(y)) => {
            let (x, y) = (layout::base_name(x).to_string(), layout::base_name(y).to_string());
            if layout::is_cold(&x) != layout::is_cold(&y) {
                return Err(anyhow::anyhow!(
                    "refusing to compare {x} with {y}: one is cold (empty eval cache) and the other warm; a warm run's speed is the cache's, not the change's"
                ));
            }
            if layout::is_clean(&x) != layout::is_clean(&y) {
                return Err(anyhow::anyhow!(
                    "refusing to compare {x} with {y}: an instrumented pass's timings are distorted by perf, strace and auto_explain"
                ));
            }
            vec![(x, y)]
        }
        _ => ga.keys().filter(|k| gb.contains_key(*k)).map(|k| (k.clone(), k.clone())).collect(),
    };
    if pairs.is_empty() {
        return Err(anyhow::anyhow!("{} and {} have no pass in common", a.a.display(), a.b.display()));
    }
    let rules = Rules { min_change_pct: a.min_change, ..Rules::default() };
    let floor_ms = a.min_abs_us / 1e3;
    let mut out = Vec::new();
    let mut headlines = Vec::new();
    for (pa, pb) in pairs {
        let (Some(da), Some(db)) = (ga.get(&pa), gb.get(&pb)) else {
            return Err(anyhow::anyhow!("no pass {pa} in {} or no pass {pb} in {}", a.a.display(), a.b.display()));
        };
        let (sa, sb) = (runs::samples(da), runs::samples(db));
        headlines.push(Measured { what: format!("{pa} evaluated"), a: sa.wall.clone(), b: sb.wall.clone(), floor_abs: EVALUATED_RESOLUTION_S });
        let (spans, fs) = rows(&format!("{pa} spans"), &sa.spans, &sb.spans, floor_ms, rules);
        let (statements, fq) = rows(&format!("{pa} statements"), &sa.statements, &sb.statements, floor_ms, rules);
        let (counters, fc) = judge_counters(&pa, &sa.counters, &sb.counters, rules);
        out.push((pa, pb, sa.runs, sb.runs, spans, statements, counters, vec![fs, fq, fc]));
    }
    // The headlines of the passes compared are one family: two passes tested
    // at 5% each would call identical inputs changed in one pair of ten.
    let mut head = judge("evaluated", headlines, "s", TIME, rules);
    let walls = std::mem::take(&mut head.verdicts);
    let out: Vec<PassComparison> = out
        .into_iter()
        .zip(walls)
        .map(|((pass_a, pass_b, runs_a, runs_b, spans, statements, counters, mut families), (_, wall))| {
            families.insert(0, head.clone());
            PassComparison { pass_a, pass_b, runs_a, runs_b, wall, spans, statements, counters, families }
        })
        .collect();
    let mut w = evalbench_host::out::stdout();
    if a.json {
        outln!(w, "{}", serde_json::to_string_pretty(&serde_json::json!({ "a": a.a, "b": a.b, "passes": out })).expect("serializes"));
    } else {
        for c in &out {
            let label = if layout::base_name(&c.pass_a).ends_with("-instrumented") { "  (instrumented: distorted timings)" } else { "" };
            outln!(w, "{} ({} runs) vs {} ({} runs){label}", c.pass_a, c.runs_a, c.pass_b, c.runs_b);
            outln!(w, "  evaluated: {}", c.wall.text);
            if !c.counters.is_empty() {
                let same = c.counters.iter().filter(|v| v.kind == Kind::Same).count();
                outln!(w, "  nix's counters (exact counts unless said; nix-stats.*.json):");
                for v in c.counters.iter().filter(|v| v.kind != Kind::Same).take(a.top) {
                    outln!(w, "    {}", v.text);
                }
                if same > 0 {
                    outln!(w, "    {same} counters the same on both sides");
                }
            }
            for (k, (title, rows)) in
                [("spans (total ms per run)", &c.spans), ("statements (pg_stat_statements, total ms per run)", &c.statements)].into_iter().enumerate()
            {
                if rows.is_empty() {
                    continue;
                }
                outln!(w, "  {title}:");
                if let Some(p) = &c.families[k + 1].power {
                    outln!(w, "    note: {p}");
                }
                for r in rows.iter().take(a.top) {
                    outln!(w, "    {:<60} {}", r.what.chars().take(60).collect::<String>(), r.verdict.text);
                }
                if rows.len() > a.top {
                    outln!(w, "    ... {} more in --json", rows.len() - a.top);
                }
            }
        }
    }
    if let Some(p) = out.first().and_then(|c| c.families[0].power.as_ref()).filter(|_| !a.json) {
        outln!(w, "note: {p}");
    }
    crate::done(w)?;
    if let Some(pct) = a.fail_on_regression {
        if out.iter().any(|c| c.wall.kind == Kind::Slower && c.wall.change_pct >= pct) {
            eprintln!("evalbench compare: a pass is slower by {pct}% or more, outside noise");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
