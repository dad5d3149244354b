//! Two bundles compared pass by pass, after saying how their provenance
//! differs: the clean passes' evaluated seconds (one family; the
//! instrumented passes' another, as their timings are distorted), then per
//! pass its spans, its statements and nix's counters,
//! each verdict held to the rules of [`crate::verdict`]. A cold pass is
//! never set against a warm one, nor a clean one against an instrumented
//! one. The report formats what this computes (`evalbench_report::output`).

use std::collections::BTreeMap;

use evalbench_bundle::layout::{self, PassKind};
use evalbench_bundle::provenance::{Difference, Provenance};
use evalbench_bundle::{Bundle, PassDir, RunInfo};
use serde::Serialize;

use crate::compare_error::CompareError;
pub use crate::compare_opts::{Opts, BETWEEN_SESSIONS_PCT};
use crate::conditions::Conditions;
use crate::counters::{noisy_verdict, sort_counters, split_counters, CounterVerdict};
use crate::explore::{Explore, Explored, List};
use crate::plans::{self, PlanRow};
use crate::runs;
use crate::undecided::undecided;
pub use crate::undecided::{NoVerdict, Undecided};
use crate::verdict::{judge_each, median, Family, Measured, Rules, Verdict, TIME};

/// evaluated_s comes from µs timestamps: its resolution.
const EVALUATED_RESOLUTION_S: f64 = 1e-6;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub what: String,
    pub verdict: Verdict,
}

/// A span or statement only one side has: its median total per run, ms.
#[derive(Debug, Clone, Serialize)]
pub struct OnlyRow {
    pub what: String,
    pub total_ms: f64,
    pub runs: usize,
}

/// A pass only one side has.
#[derive(Debug, Clone, Serialize)]
pub struct OnlyPass {
    pub pass: String,
    pub runs: usize,
    /// Median evaluated seconds over its runs.
    pub evaluated_s: f64,
}

/// Two bundles compared: how they differ, then pass by pass.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Provenance fields (and PostgreSQL settings) that differ between A and B.
    pub differs: Vec<Difference>,
    pub provenance_a: Provenance,
    pub provenance_b: Provenance,
    pub passes: Vec<PassComparison>,
    pub only_a: Vec<OnlyPass>,
    pub only_b: Vec<OnlyPass>,
    /// Clean passes' evaluated seconds that got no verdict (one run a side,
    /// or too few for the family's correction).
    pub undecided: Vec<Undecided>,
    /// A and B hold the same runs (one bundle given twice, or a copy of it).
    pub one_bundle: bool,
    /// What reading the runs went past (an unreadable run.json, malformed span lines), with file and line.
    pub warnings: Vec<String>,
    /// The negligible floors in force (`Opts::min_change`, `Opts::min_abs_us`), for the legend.
    pub min_change_pct: f64,
    pub min_abs_us: f64,
    /// The counted passes both sides have: nix's instructions, A against B
    /// (a primary measure, judged by the counts' spread, not as a time).
    pub instructions: Vec<crate::instructions::InstructionsComparison>,
    /// What the gate judges that only one side has (`gate::missing`): said
    /// first, and the gate fails closed on it unless told otherwise.
    pub missing: Vec<crate::gate::Missing>,
    /// How each side's passes' runs ended (`outcomes`): a side's pass whose
    /// runs did not all complete is compared over those that did, and said.
    pub status_a: Vec<crate::outcomes::PassRuns>,
    pub status_b: Vec<crate::outcomes::PassRuns>,
}

impl Comparison {
    /// The groups in which A and B differ, in provenance order, each once.
    pub fn differing_groups(&self) -> Vec<&'static str> {
        let mut groups: Vec<&'static str> = self.differs.iter().map(|d| d.group).collect();
        groups.dedup();
        groups
    }

    /// The provenance groups both sides record: those a "measured the same" may speak of.
    pub fn both_recorded(&self) -> Vec<&'static str> {
        crate::sides::both_recorded(&self.provenance_a, &self.provenance_b)
    }
}

/// The families a pass's verdicts were corrected in, each with its word on power.
#[derive(Debug, Clone, Serialize)]
pub struct Families {
    /// The evaluated seconds: shared by every clean pass compared (or every
    /// instrumented one).
    pub evaluated: Family,
    pub spans: Family,
    pub statements: Family,
    pub counters: Family,
    /// The critical path's steps (time on the path per run).
    pub path: Family,
}

#[derive(Debug, Clone, Serialize)]
pub struct PassComparison {
    pub pass_a: String,
    pub pass_b: String,
    /// Clean or instrumented (both sides are the same).
    pub kind: PassKind,
    pub runs_a: usize,
    pub runs_b: usize,
    /// The evaluated seconds' verdict (`wall` in the JSON, as it has always been).
    #[serde(rename = "wall")]
    pub evaluated: Verdict,
    pub spans: Vec<Row>,
    pub statements: Vec<Row>,
    /// Spans and statements one side lacks, with their totals.
    pub spans_only_a: Vec<OnlyRow>,
    pub spans_only_b: Vec<OnlyRow>,
    pub statements_only_a: Vec<OnlyRow>,
    pub statements_only_b: Vec<OnlyRow>,
    /// The critical path's steps that moved: time on the path per run,
    /// judged as spans are (a step off one side's path counts 0 there).
    pub path: Vec<Row>,
    /// nix's counters: exact ones by equality, the rest like times.
    pub counters: Vec<CounterVerdict>,
    /// nix's exact headline counters (what the gate judges) that only one
    /// side's runs have: (counter, the side that lacks it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters_missing: Vec<(String, &'static str)>,
    pub families: Families,
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
    /// Set when the runs did not all write as many `.drv` files to the nix
    /// store (`store_writes::between`), with the pass named.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(skip)]
    pub store_writes: Option<crate::store_writes::SidesApart>,
    /// The machine beside each side's runs, the pass's drift and its trends:
    /// what the time verdicts were held to (the report says each once: its `condition_notes`).
    pub conditions: Conditions,
    /// A primary measure of a clean pass, beside its evaluated seconds:
    /// nix's own evaluation time on the critical path ([`NIX_STEP`]),
    /// judged in the primary family, not among the path's other steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nix_on_path: Option<Verdict>,
    /// Instrumented passes with nix's profile on both sides: the attributes
    /// whose calls or share of nix's own time moved (`attributes::moved`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Vec<crate::attributes::AttributeMove>>,
}

/// A clean pass's measure in the primary family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Primary {
    Evaluated,
    /// nix's own time on the critical path ([`NIX_STEP`]).
    NixOnPath,
}

/// nix's own evaluation on the critical path: the eval subprocess's
/// `resolve` steps, one per attribute.
pub const NIX_STEP: &str = "eval resolve";

/// A list's rows as judged: verdicts outside noise first, then by how much
/// time moved (a span going from 0.000 to 0.001 ms is +inf% but no one's
/// first concern).
fn rows(verdicts: Vec<(String, Verdict)>) -> Vec<Row> {
    let mut out: Vec<Row> = verdicts.into_iter().map(|(what, verdict)| Row { what, verdict }).collect();
    out.sort_by(|x, y| {
        let moved = |r: &Row| (r.verdict.b.median - r.verdict.a.median).abs();
        y.verdict
            .kind
            .is_change()
            .cmp(&x.verdict.kind.is_change())
            .then(moved(y).total_cmp(&moved(x)))
            .then(x.what.cmp(&y.what))
    });
    out
}

/// The path's steps of both sides: a step off one side's path was on it for
/// 0 ms there, a move, not a name one side lacks. Without nix's step when
/// it is judged among the primary measures.
type PerRun = BTreeMap<String, Vec<f64>>;
fn path_steps(sa: &runs::Samples, sb: &runs::Samples, primary_nix: bool) -> (PerRun, PerRun) {
    let (mut pa, mut pb) = (sa.path.clone(), sb.path.clone());
    for k in sa.path.keys().chain(sb.path.keys()) {
        pa.entry(k.clone()).or_insert_with(|| vec![0.0; sa.path_runs]);
        pb.entry(k.clone()).or_insert_with(|| vec![0.0; sb.path_runs]);
    }
    if primary_nix {
        pa.remove(NIX_STEP);
        pb.remove(NIX_STEP);
    }
    (pa, pb)
}

/// What `a` has and `b` lacks, largest total first.
fn only(a: &BTreeMap<String, Vec<f64>>, b: &BTreeMap<String, Vec<f64>>) -> Vec<OnlyRow> {
    let mut out: Vec<OnlyRow> = a
        .iter()
        .filter(|(k, v)| !b.contains_key(*k) && v.iter().any(|x| *x != 0.0))
        .map(|(k, v)| OnlyRow {
            what: k.clone(),
            total_ms: evalbench_bundle::num::round_to(median(v), 3),
            runs: v.len(),
        })
        .collect();
    out.sort_by(|x, y| y.total_ms.total_cmp(&x.total_ms).then(x.what.cmp(&y.what)));
    out
}

fn only_passes(g: &BTreeMap<String, Vec<&PassDir>>, other: &BTreeMap<String, Vec<&PassDir>>) -> Vec<OnlyPass> {
    // A counted pass only one side has is no time to show (its seconds are Valgrind's).
    g.iter()
        .filter(|(k, _)| !other.contains_key(*k) && !layout::is_counted(k))
        .map(|(k, dirs)| {
            let s = runs::samples(dirs);
            OnlyPass { pass: k.clone(), runs: s.runs, evaluated_s: evalbench_bundle::num::s(median(&s.evaluated_s)) }
        })
        .collect()
}

/// One side of a pair of passes: the pass's runs and their samples.
struct Side<'a> {
    pass: String,
    dirs: &'a [&'a PassDir],
    samples: runs::Samples,
}

/// A bundle's runs grouped into passes (`runs::group`).
type Groups<'a> = BTreeMap<String, Vec<&'a PassDir>>;

/// A pair's verdicts from the primary family, its exact counters, and what
/// its times were held to.
struct Judged {
    evaluated: Verdict,
    nix_on_path: Option<Verdict>,
    exact: Vec<CounterVerdict>,
    conditions: Conditions,
}

/// A pair of passes compared, given its verdicts from both families.
fn pass_comparison(
    i: usize,
    a: Side,
    b: Side,
    judged: Judged,
    evaluated: Family,
    explored: &mut Explored,
) -> PassComparison {
    let kind = PassKind::of(&a.pass);
    let (sa, sb) = (&a.samples, &b.samples);
    let spans = rows(explored.take(i, List::Spans));
    let statements = rows(explored.take(i, List::Statements));
    let path = rows(explored.take(i, List::Path));
    let mut counters = judged.exact;
    counters.extend(explored.take(i, List::Counters).into_iter().map(|(name, v)| noisy_verdict(name, v)));
    sort_counters(&mut counters);
    let fx = || Family { verdicts: Vec::new(), ..explored.family.clone() };
    let attributes = match (kind, a.dirs.first(), b.dirs.first()) {
        (PassKind::Instrumented, Some(da), Some(db)) => crate::attributes::moved(da, db),
        _ => None,
    };
    let (plans, plan_notes) = match kind {
        PassKind::Clean => (None, Vec::new()),
        // Counted passes are compared by their instructions (`instructions`), never here.
        PassKind::Counted => (None, Vec::new()),
        PassKind::Instrumented => {
            let (ka, kb) = (plans::book(a.dirs), plans::book(b.dirs));
            let notes = ka
                .missing
                .iter()
                .map(|m| format!("A: {m}"))
                .chain(kb.missing.iter().map(|m| format!("B: {m}")))
                .collect();
            // Bundles without plans (the sample pipeline, a target without
            // auto_explain) say so in a note rather than with an empty list.
            let none = ka.statements.is_empty()
                && kb.statements.is_empty()
                && !ka.missing.is_empty()
                && !kb.missing.is_empty();
            ((!none).then(|| plans::compare(&ka, &kb)), notes)
        }
    };
    PassComparison {
        kind,
        runs_a: sa.runs,
        runs_b: sb.runs,
        evaluated: judged.evaluated,
        nix_on_path: judged.nix_on_path,
        conditions: judged.conditions,
        spans_only_a: only(&sa.spans, &sb.spans),
        spans_only_b: only(&sb.spans, &sa.spans),
        statements_only_a: only(&sa.statements, &sb.statements),
        statements_only_b: only(&sb.statements, &sa.statements),
        path,
        spans,
        statements,
        counters,
        counters_missing: crate::gate::counters_missing(&sa.counters, &sb.counters),
        families: Families { evaluated, spans: fx(), statements: fx(), counters: fx(), path: fx() },
        plans,
        plan_notes,
        attributes,
        pg_settings_a: runs::pg_settings(a.dirs),
        pg_settings_b: runs::pg_settings(b.dirs),
        store_writes: crate::store_writes::sides_apart(&sa.drvs_written, &sb.drvs_written),
        pass_a: a.pass,
        pass_b: b.pass,
    }
}

/// The passes compared, A's and B's: the two asked for, or every pass both
/// bundles have. A cold pass is never set against a warm one, nor a clean
/// one against an instrumented one.
fn pass_pairs(
    ga: &Groups<'_>,
    gb: &Groups<'_>,
    o: &Opts,
    (ba, bb): (&Bundle, &Bundle),
    counted: bool,
) -> Result<Vec<(String, String)>, CompareError> {
    let pairs: Vec<(String, String)> = match (&o.pass_a, &o.pass_b) {
        (Some(x), Some(y)) => {
            let (x, y) = (layout::base_name(x).to_string(), layout::base_name(y).to_string());
            // A pass a side lacks is named first: its temperature means nothing.
            let lacks = |g: &Groups<'_>, p: &str, b: &Bundle| {
                let have: Vec<&str> = g.keys().map(String::as_str).collect();
                (!g.contains_key(p))
                    .then(|| format!("{}: no pass {p:?}; {}", b.source.display(), crate::suggest::pass_hint(p, &have)))
            };
            let missing: Vec<String> = [lacks(ga, &x, ba), lacks(gb, &y, bb)].into_iter().flatten().collect();
            if !missing.is_empty() {
                return Err(CompareError::NoSuchPass(missing));
            }
            if layout::is_cold(&x) != layout::is_cold(&y) {
                return Err(CompareError::ColdAgainstWarm { a: x, b: y });
            }
            if PassKind::of(&x) != PassKind::of(&y) {
                return Err(CompareError::InstrumentedAgainstClean { a: x, b: y });
            }
            if layout::is_counted(&x) {
                Vec::new()
            } else {
                vec![(x, y)]
            }
        }
        // A counted pass's times are Valgrind's; it is compared by its instructions (`instructions`).
        _ => ga
            .keys()
            .filter(|k| gb.contains_key(*k) && !layout::is_counted(k))
            .map(|k| (k.clone(), k.clone()))
            .collect(),
    };
    if pairs.is_empty() && !counted {
        return Err(CompareError::NoPassInCommon { a: ba.source.clone(), b: bb.source.clone() });
    }
    Ok(pairs)
}

/// One pair of passes measured for judging: its conditions, its primary
/// measures (clean passes: the evaluated seconds and nix's time on the
/// path) added to `clean_heads`, every other row to `explore`; its exact
/// counters, judged by equality, returned.
fn measure_pair(
    i: usize,
    (a, b): (&Side, &Side),
    between_sessions: bool,
    (rules, floor_ms): (Rules, f64),
    clean_heads: &mut Vec<(Measured, Rules, (usize, Primary))>,
    explore: &mut Explore,
) -> (Vec<CounterVerdict>, Conditions) {
    let conditions = Conditions::of(&a.samples, &b.samples, between_sessions, floor_ms);
    let pass_rules = conditions.rules(rules);
    let head = Measured {
        what: format!("{} evaluated", a.pass),
        a: a.samples.evaluated_s.clone(),
        b: b.samples.evaluated_s.clone(),
        floor_abs: EVALUATED_RESOLUTION_S,
    };
    let (sa, sb) = (&a.samples, &b.samples);
    // nix's own time on the path is the second primary measure of a
    // clean pass, where either side's path has it.
    let primary_nix =
        PassKind::of(&a.pass) == PassKind::Clean && (sa.path.contains_key(NIX_STEP) || sb.path.contains_key(NIX_STEP));
    match PassKind::of(&a.pass) {
        PassKind::Clean => {
            clean_heads.push((head, pass_rules, (i, Primary::Evaluated)));
            if primary_nix {
                // In seconds, as the family's other measure: the path keeps ms.
                let step = |s: &runs::Samples| {
                    s.path
                        .get(NIX_STEP)
                        .map_or_else(|| vec![0.0; s.path_runs], |v| v.iter().map(|ms| ms / 1e3).collect())
                };
                let m = Measured {
                    what: format!("{} {NIX_STEP}", a.pass),
                    a: step(sa),
                    b: step(sb),
                    floor_abs: floor_ms / 1e3,
                };
                clean_heads.push((m, pass_rules, (i, Primary::NixOnPath)));
            }
        }
        PassKind::Instrumented | PassKind::Counted => explore.seconds(i, head, pass_rules),
    }
    // Between sessions a row's move is held to a hundredth of the pass's
    // evaluated seconds too (`Rules::session_floor`), in the rows' ms.
    let row_rules = Rules {
        session_floor: pass_rules.between_sessions.map(|_| median(&sa.evaluated_s) * 1e3 / 100.0),
        ..pass_rules
    };
    explore.times(i, List::Spans, &sa.spans, &sb.spans, floor_ms, row_rules);
    explore.times(i, List::Statements, &sa.statements, &sb.statements, floor_ms, row_rules);
    let (pa, pb) = path_steps(sa, sb, primary_nix);
    explore.times(i, List::Path, &pa, &pb, floor_ms, row_rules);
    let (exact, noisy) = split_counters(&sa.counters, &sb.counters);
    explore.counters(i, noisy, pass_rules);
    (exact, conditions)
}

/// A changed plan beside its statement's time: the clean pass of the same
/// temperature measured it undistorted.
fn attach_statement_verdicts(out: &mut [PassComparison]) {
    let clean: BTreeMap<String, BTreeMap<String, Verdict>> = out
        .iter()
        .filter(|c| c.kind == PassKind::Clean)
        .map(|c| (c.pass_a.clone(), c.statements.iter().map(|r| (r.what.clone(), r.verdict.clone())).collect()))
        .collect();
    for c in out.iter_mut() {
        let Some(rows) = &mut c.plans else { continue };
        let Some(verdicts) = clean.get(&layout::clean_of(&c.pass_a)) else { continue };
        for r in rows {
            r.statement_verdict = verdicts.get(&r.statement).cloned();
        }
    }
}

/// Compares two bundles; an error says why they cannot be compared.
pub fn compare(ba: &Bundle, bb: &Bundle, o: &Opts) -> Result<Comparison, CompareError> {
    let (mut ga, mut gb) = (runs::group(ba), runs::group(bb));
    runs::select_runs([(&mut ga, o.pass_a.as_deref(), ba), (&mut gb, o.pass_b.as_deref(), bb)])
        .map_err(CompareError::NoSuchRun)?;
    let (provenance_a, provenance_b, differs) = crate::sides::differs(ba, bb);
    let two_nixes = provenance_a.system.nix_version != provenance_b.system.nix_version;
    let (instructions, counted_warnings) =
        crate::instructions::of_comparison(ba, bb, (o.pass_a.as_deref(), o.pass_b.as_deref()), two_nixes);
    let pairs = pass_pairs(&ga, &gb, o, (ba, bb), !instructions.is_empty())?;
    let (one_bundle, same_session, rules) = session_rules((&ga, &gb), &pairs, (&provenance_a, &provenance_b), o);
    let (floor_ms, mut warnings) = (o.min_abs_us / 1e3, counted_warnings);
    let mut sides = Vec::new();
    // The primary family's items, each with the rules of its pass and what
    // it is of which pass (found again by that, not by its label); every
    // other row goes to the exploratory family.
    let mut clean_heads = Vec::<(Measured, Rules, (usize, Primary))>::new();
    let mut explore = Explore::default();
    for (i, (pa, pb)) in pairs.into_iter().enumerate() {
        let (Some(da), Some(db)) = (ga.get(&pa), gb.get(&pb)) else {
            return Err(no_such_pass((&ga, &pa, ba), (&gb, &pb, bb)));
        };
        let (a, b) = (
            Side { pass: pa, samples: runs::samples(da), dirs: da },
            Side { pass: pb, samples: runs::samples(db), dirs: db },
        );
        warnings.extend(a.samples.warnings.iter().chain(&b.samples.warnings).cloned());
        let (exact, conditions) =
            measure_pair(i, (&a, &b), !same_session, (rules, floor_ms), &mut clean_heads, &mut explore);
        sides.push((a, b, exact, conditions));
    }
    // The primary family first, then the exploratory one (`judge_primary`).
    let (primary, mut primary_verdicts) = judge_primary(clean_heads, rules);
    let mut explored = explore.judge(rules);
    let mut out: Vec<PassComparison> = sides
        .into_iter()
        .enumerate()
        .map(|(i, (a, b, exact, conditions))| {
            let (evaluated, head) = match PassKind::of(&a.pass) {
                PassKind::Clean => (primary_verdicts.remove(&(i, Primary::Evaluated)), primary.clone()),
                PassKind::Instrumented | PassKind::Counted => {
                    let evaluated = explored.take(i, List::Evaluated).pop().map(|(_, v)| v);
                    (evaluated, Family { verdicts: Vec::new(), ..explored.family.clone() })
                }
            };
            let nix_on_path = primary_verdicts.remove(&(i, Primary::NixOnPath));
            let evaluated = evaluated.expect("one headline per pass");
            pass_comparison(i, a, b, Judged { evaluated, nix_on_path, exact, conditions }, head, &mut explored)
        })
        .collect();
    attach_statement_verdicts(&mut out);
    let undecided = out
        .iter()
        .filter(|c| c.kind == PassKind::Clean)
        .filter_map(|c| undecided(c, c.families.evaluated.tests))
        .collect();
    let (only_a, only_b) =
        if o.pass_a.is_some() { (Vec::new(), Vec::new()) } else { (only_passes(&ga, &gb), only_passes(&gb, &ga)) };
    let (min_change_pct, min_abs_us) = (o.min_change, o.min_abs_us);
    let missing = crate::gate::missing(&out, (ba, bb), o.pass_a.is_none());
    Ok(Comparison {
        missing,
        status_a: crate::outcomes::of_bundle(ba),
        status_b: crate::outcomes::of_bundle(bb),
        differs,
        provenance_a,
        provenance_b,
        passes: out,
        only_a,
        only_b,
        undecided,
        one_bundle,
        warnings,
        min_change_pct,
        min_abs_us,
        instructions,
    })
}

/// Whether A and B are one bundle (the same runs on both sides: the first
/// run of every pair is one evaluation, requested at one instant) or one
/// session, and the rules the times are judged by: times from two sessions
/// carry the machine's drift between them; exact counters do not, and are
/// judged by equality whatever the rules.
fn session_rules(
    (ga, gb): (&runs::Grouped<'_>, &runs::Grouped<'_>),
    pairs: &[(String, String)],
    (provenance_a, provenance_b): (&Provenance, &Provenance),
    o: &Opts,
) -> (bool, bool, Rules) {
    let rules = Rules { min_change_pct: o.min_change, ..Rules::default() };
    let first_run = |g: &BTreeMap<String, Vec<&PassDir>>, p: &str| {
        g.get(p)
            .and_then(|d| d.first())
            .and_then(|d| RunInfo::read(&d.file(layout::RUN_JSON)).ok())
            .map(|r| (r.evaluation_id, r.requested_us))
    };
    let one_bundle = !pairs.is_empty()
        && pairs
            .iter()
            .all(|(pa, pb)| first_run(ga, pa).is_some_and(|x| x.1.is_some() && Some(x) == first_run(gb, pb)));
    // One bundle, or runs of one `run`, are one session: no between-sessions
    // allowance; only a side of `run --baseline` was interleaved with the other.
    let same_session = one_bundle || provenance_a.same_session(provenance_b);
    let rules = Rules {
        between_sessions: o.between_sessions_pct.filter(|p| *p > 0.0 && !same_session).map(|p| p / 100.0),
        interleaved: !one_bundle && provenance_a.interleaved(provenance_b),
        ..rules
    };
    (one_bundle, same_session, rules)
}

/// A pass asked for that a side lacks: per bundle, which and the nearest it has.
fn no_such_pass(
    (ga, pa, ba): (&runs::Grouped<'_>, &str, &Bundle),
    (gb, pb, bb): (&runs::Grouped<'_>, &str, &Bundle),
) -> CompareError {
    let missing = |g: &BTreeMap<String, Vec<&PassDir>>, p: &str, b: &Bundle| {
        let have: Vec<&str> = g.keys().map(String::as_str).collect();
        (!g.contains_key(p))
            .then(|| format!("{}: no pass {p}; {}", b.source.display(), crate::suggest::pass_hint(p, &have)))
    };
    CompareError::NoSuchPass([missing(ga, pa, ba), missing(gb, pb, bb)].into_iter().flatten().collect())
}

/// The primary measures, fixed before looking and judged first, as one
/// family: the clean passes' evaluated seconds and nix's time on their
/// paths (Holm over these alone; exact counters by equality). Every other
/// row is exploratory, in one family over all passes (`explore`), the
/// instrumented passes' distorted headlines among them.
fn judge_primary(
    clean_heads: Vec<(Measured, Rules, (usize, Primary))>,
    rules: Rules,
) -> (Family, std::collections::HashMap<(usize, Primary), Verdict>) {
    let of: Vec<(usize, Primary)> = clean_heads.iter().map(|h| h.2).collect();
    let (heads, each): (Vec<Measured>, Vec<Rules>) = clean_heads.into_iter().map(|(m, r, _)| (m, r)).unzip();
    let mut primary = judge_each(
        "primary: evaluated seconds and nix's time on the path (clean passes)",
        heads,
        "s",
        TIME,
        rules,
        &|i| each[i],
    );
    // A family's verdicts come in its items' order.
    let primary_verdicts: std::collections::HashMap<(usize, Primary), Verdict> =
        of.into_iter().zip(std::mem::take(&mut primary.verdicts)).map(|(k, (_, v))| (k, v)).collect();
    (primary, primary_verdicts)
}
