//! nix's instructions, counted exactly in the counted passes (`run
//! --counted`), as a primary measure: per pass the count of every run, its
//! median and spread, per phase and per function; and A against B, judged as
//! an exact-ish count rather than as a time.
//!
//! Why not a time test: the instructions of one evaluation, counted under
//! Valgrind, differ between runs by a few parts in a million (the lab's A/A
//! pairs, docs/instructions.md), where its evaluated seconds spread by
//! percents. So a change is called when it is larger than the spread the
//! counts are known to have: the larger of [`SPREAD_PCT`] (measured A/A,
//! under nix 2.8, 2.26 and 2.34) and three times the widest spread of either
//! side's own runs. One run a side suffices.
//!
//! The report words what this computes (`evalbench_report::words`).

use std::collections::BTreeMap;

use evalbench_bundle::instructions::{self as counted, Phase};
use evalbench_bundle::layout;
use evalbench_bundle::{Bundle, PassDir};
use serde::Serialize;

use crate::spread::{median, spread};
use crate::verdict::Kind;

/// Instructions within this percentage of A's median are the counts'
/// own spread. Measured here (docs/instructions.md): ten A/A pairs of
/// counted runs of the bundled hello flake under nix 2.8, interleaved in one
/// `run --baseline`, spread by 0.0005% (cold-counted, 557,366,986 to
/// 557,369,538) and 0.0003% (warm-counted); in the lab, three cold-counted
/// runs each of nix 2.26 by 0.004% and of 2.34 by 0.0005%; plain
/// evaluations of 2.34 outside the lab (the issue's) by 0.12%. About twice
/// the widest: a 1% change is called, 0.12% is not.
pub const SPREAD_PCT: f64 = 0.25;
/// A side's own runs: a change is called past this many times their spread.
pub const SPREAD_TIMES: f64 = 3.0;
/// The functions listed: the top of a pass, the most moved of a comparison.
pub const TOP_FUNCTIONS: usize = 10;

/// One run of a counted pass.
#[derive(Debug, Clone, Serialize)]
pub struct CountedRun {
    pub run: String,
    /// Instructions of every nix process of the run (not their children).
    pub instructions: u64,
    /// Per phase (lock, discover, evaluate), in that order.
    pub phases: BTreeMap<Phase, u64>,
    /// Each nix process: its name (`lock`, `discover`, a shard `0`, `0.1`
    /// after a recycle), phase and instructions.
    pub processes: Vec<ProcessCount>,
    /// Per function, summed over the processes.
    #[serde(skip)]
    pub functions: BTreeMap<String, u64>,
}

/// One nix process of a counted run.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessCount {
    pub who: String,
    pub phase: Phase,
    pub instructions: u64,
}

/// A function's instructions, and what it comes from.
#[derive(Debug, Clone, Serialize)]
pub struct FunctionCount {
    pub function: String,
    pub from: Origin,
    pub instructions: f64,
    /// Share of the pass's instructions, percent.
    pub share_pct: f64,
}

/// Where a function comes from, read from its name: cachegrind names
/// functions, not the libraries they are in. nix's own are in `nix::`;
/// `???` is code without an exported symbol (nix 2.26 and later are one
/// stripped executable, so nearly all of their own code is `???`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Nix,
    Gc,
    Sqlite,
    Loader,
    Cxx,
    Other,
    NoSymbol,
}

impl Origin {
    pub fn of(function: &str) -> Origin {
        let f = function.trim_start_matches("void ");
        if f == "???" {
            Origin::NoSymbol
        } else if f.starts_with("nix::") {
            Origin::Nix
        } else if f.starts_with("GC_") || f.starts_with("GC::") {
            Origin::Gc
        } else if f.starts_with("sqlite3") {
            Origin::Sqlite
        } else if f.starts_with("_dl_") || f.starts_with("do_lookup") || f.starts_with("check_match") {
            Origin::Loader
        } else if ["std::", "__gnu_cxx", "__cxa", "__cxxabiv1", "__dynamic_cast", "operator ", "boost::"]
            .iter()
            .any(|p| f.starts_with(p))
        {
            Origin::Cxx
        } else {
            Origin::Other
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Nix => "nix",
            Origin::Gc => "Boehm GC",
            Origin::Sqlite => "SQLite",
            Origin::Loader => "dynamic loader",
            Origin::Cxx => "C++ runtime",
            Origin::Other => "C library, other",
            Origin::NoSymbol => "no symbol",
        }
    }
}

/// A counted pass, all its runs.
#[derive(Debug, Clone, Serialize)]
pub struct CountedPass {
    pub pass: String,
    /// The clean pass it counts (`cold-counted` counts `cold-clean`'s work).
    pub clean: String,
    pub runs: Vec<CountedRun>,
    /// Median instructions over the runs.
    pub median: f64,
    /// (max - min) / median, percent; 0 with one run.
    pub spread_pct: f64,
    /// Median per phase over the runs.
    pub phases: BTreeMap<Phase, f64>,
    /// The top functions by their median over the runs.
    pub top: Vec<FunctionCount>,
    /// Of the median, the dynamic loader's functions: the processes'
    /// start (binding nix's shared libraries' symbols), told apart by name.
    pub loader: f64,
}

/// Every counted pass of a bundle, in pass order; what could not be read
/// is a warning naming the file and line, and that run is left out.
pub fn passes(b: &Bundle) -> (Vec<CountedPass>, Vec<String>) {
    let mut warnings = Vec::new();
    let counted: Vec<&PassDir> = b.passes.iter().filter(|p| layout::is_counted(&p.name)).collect();
    let mut out = Vec::new();
    for (base, dirs) in layout::pass_groups(counted, |p| &p.name) {
        if let Some(p) = pass(&base, &dirs, &mut warnings) {
            out.push(p);
        }
    }
    (out, warnings)
}

/// One counted pass from its runs' directories.
fn pass(base: &str, dirs: &[&PassDir], warnings: &mut Vec<String>) -> Option<CountedPass> {
    let mut runs = Vec::new();
    for d in dirs {
        match counted::read(&d.path) {
            Ok(Some(p)) => runs.push(CountedRun {
                run: d.name.clone(),
                instructions: p.total(),
                phases: p.by_phase(),
                processes: p
                    .processes
                    .iter()
                    .map(|x| ProcessCount { who: x.who.clone(), phase: x.phase, instructions: x.counted.instructions })
                    .collect(),
                functions: p.functions(),
            }),
            Ok(None) => warnings.push(format!(
                "{}: a counted run without instruction counts (no eval/cachegrind.*.out); left out",
                d.path.display()
            )),
            Err(e) => warnings.push(format!("{e}; run {} left out", d.name)),
        }
    }
    if runs.is_empty() {
        return None;
    }
    let totals: Vec<f64> = runs.iter().map(|r| r.instructions as f64).collect();
    let m = median(&totals);
    let functions = median_functions(&runs);
    let loader = functions.iter().filter(|(f, _)| Origin::of(f) == Origin::Loader).map(|(_, n)| n).sum();
    let mut top: Vec<(String, f64)> = functions.into_iter().collect();
    top.sort_by(|x, y| y.1.total_cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let top = top
        .into_iter()
        .take(TOP_FUNCTIONS)
        .map(|(function, n)| FunctionCount {
            from: Origin::of(&function),
            share_pct: n / m * 100.0,
            instructions: n,
            function,
        })
        .collect();
    let phases = [Phase::Lock, Phase::Discover, Phase::Evaluate]
        .into_iter()
        .filter(|ph| runs.iter().any(|r| r.phases.contains_key(ph)))
        .map(|ph| {
            (ph, median(&runs.iter().map(|r| r.phases.get(&ph).copied().unwrap_or(0) as f64).collect::<Vec<_>>()))
        })
        .collect();
    Some(CountedPass {
        pass: base.to_string(),
        clean: layout::clean_of_counted(base),
        spread_pct: spread_pct(&totals),
        median: m,
        phases,
        top,
        loader,
        runs,
    })
}

fn spread_pct(v: &[f64]) -> f64 {
    spread(v).range_pct()
}

/// Each function's median over the runs (a run without it counts 0).
fn median_functions(runs: &[CountedRun]) -> BTreeMap<String, f64> {
    let names: std::collections::BTreeSet<&String> = runs.iter().flat_map(|r| r.functions.keys()).collect();
    names
        .into_iter()
        .map(|n| {
            (
                n.clone(),
                median(&runs.iter().map(|r| r.functions.get(n).copied().unwrap_or(0) as f64).collect::<Vec<_>>()),
            )
        })
        .collect()
}

/// What a change in instructions was held to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum Threshold {
    /// The spread measured A/A ([`SPREAD_PCT`]).
    Measured { pct: f64 },
    /// [`SPREAD_TIMES`] the widest spread of a side's own runs, wider than the measured one.
    Sides { pct: f64, spread_pct: f64 },
}

impl Threshold {
    pub fn pct(self) -> f64 {
        match self {
            Threshold::Measured { pct } | Threshold::Sides { pct, .. } => pct,
        }
    }
}

/// A counted pass, A against B.
#[derive(Debug, Clone, Serialize)]
pub struct InstructionsComparison {
    pub pass: String,
    pub runs_a: usize,
    pub runs_b: usize,
    pub a: f64,
    pub b: f64,
    /// (median B / median A - 1) × 100.
    pub change_pct: f64,
    pub threshold: Threshold,
    /// more, less (past the threshold), inside noise (within it), same (equal).
    pub kind: Kind,
    /// Per phase both sides have: A's and B's medians.
    pub phases: Vec<PhaseCounts>,
    /// The functions whose instructions moved most, largest move first.
    pub moved: Vec<FunctionMove>,
    /// A and B ran two nixes: `moved` holds only functions both name
    /// (one build's symbols are not the other's: nix 2.26 and later are one
    /// stripped executable whose own functions are all `???`).
    pub moved_named_on_both: bool,
}

/// A phase's instructions on both sides (medians).
#[derive(Debug, Clone, Serialize)]
pub struct PhaseCounts {
    pub phase: Phase,
    pub a: f64,
    pub b: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionMove {
    pub function: String,
    pub from: Origin,
    pub a: f64,
    pub b: f64,
}

/// The verdict on two sides' counts (each a run's instructions).
pub fn judge(a: &[f64], b: &[f64]) -> (f64, Threshold, Kind) {
    let (ma, mb) = (median(a), median(b));
    let change = (mb / ma - 1.0) * 100.0;
    let own = spread_pct(a).max(spread_pct(b));
    let threshold = if own * SPREAD_TIMES > SPREAD_PCT {
        Threshold::Sides { pct: own * SPREAD_TIMES, spread_pct: own }
    } else {
        Threshold::Measured { pct: SPREAD_PCT }
    };
    let kind = if ma == mb {
        Kind::Same
    } else if !change.is_finite() || change.abs() <= threshold.pct() {
        Kind::InsideNoise
    } else if change > 0.0 {
        Kind::More
    } else {
        Kind::Less
    };
    (change, threshold, kind)
}

/// compare's counted passes: every one both bundles have, or only the
/// pass each side names (`--pass-a`, `--pass-b`) where it is a counted one;
/// what could not be read, as warnings. `two_nixes`: their provenance names
/// two nix versions ([`compare`]).
pub fn of_comparison(
    ba: &Bundle,
    bb: &Bundle,
    (pass_a, pass_b): (Option<&str>, Option<&str>),
    two_nixes: bool,
) -> (Vec<InstructionsComparison>, Vec<String>) {
    let (mut ca, wa) = passes(ba);
    let (mut cb, wb) = passes(bb);
    if let (Some(x), Some(y)) = (pass_a, pass_b) {
        ca.retain(|p| p.pass == layout::base_name(x));
        cb.retain(|p| p.pass == layout::base_name(y));
        if let (Some(pa), Some(pb)) = (ca.first(), cb.first_mut()) {
            pb.pass = pa.pass.clone();
        }
    }
    (compare(&ca, &cb, two_nixes), wa.into_iter().chain(wb).collect())
}

/// Every counted pass both sides have, compared (by name). Between two
/// nixes (`two_nixes`) a function's name is comparable only where both
/// builds export its symbol: the moved functions are then those both name.
pub fn compare(a: &[CountedPass], b: &[CountedPass], two_nixes: bool) -> Vec<InstructionsComparison> {
    a.iter().filter_map(|pa| b.iter().find(|pb| pb.pass == pa.pass).map(|pb| compare_pass(pa, pb, two_nixes))).collect()
}

fn compare_pass(pa: &CountedPass, pb: &CountedPass, two_nixes: bool) -> InstructionsComparison {
    let counts = |p: &CountedPass| p.runs.iter().map(|r| r.instructions as f64).collect::<Vec<_>>();
    let (change_pct, threshold, kind) = judge(&counts(pa), &counts(pb));
    let phases = pa
        .phases
        .iter()
        .filter_map(|(ph, a)| pb.phases.get(ph).map(|b| PhaseCounts { phase: *ph, a: *a, b: *b }))
        .collect();
    let (fa, fb) = (median_functions(&pa.runs), median_functions(&pb.runs));
    let mut moved: Vec<FunctionMove> = fa
        .keys()
        .chain(fb.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|f| FunctionMove {
            function: f.clone(),
            from: Origin::of(f),
            a: fa.get(f).copied().unwrap_or(0.0),
            b: fb.get(f).copied().unwrap_or(0.0),
        })
        .filter(|m| m.a != m.b && (!two_nixes || (m.a > 0.0 && m.b > 0.0 && m.from != Origin::NoSymbol)))
        .collect();
    moved.sort_by(|x, y| (y.b - y.a).abs().total_cmp(&(x.b - x.a).abs()).then_with(|| x.function.cmp(&y.function)));
    moved.truncate(TOP_FUNCTIONS);
    InstructionsComparison {
        pass: pa.pass.clone(),
        runs_a: pa.runs.len(),
        runs_b: pb.runs.len(),
        a: pa.median,
        b: pb.median,
        change_pct,
        threshold,
        kind,
        phases,
        moved,
        moved_named_on_both: two_nixes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded::Seeded;

    /// Counts drawn around a median with a relative spread, seeded.
    fn counts(rng: &mut Seeded, n: usize, median: f64, spread: f64) -> Vec<f64> {
        (0..n).map(|_| (median * (1.0 + spread * (rng.next(1_000_001) as f64 / 1e6 - 0.5))).round()).collect()
    }

    /// A/A: the same evaluation counted again, at the spread measured,
    /// never gives a verdict, with one run a side or ten.
    #[test]
    fn an_aa_pair_is_never_called() {
        let mut rng = Seeded(58);
        for trial in 0..2000 {
            let n = 1 + trial % 10;
            let (a, b) = (counts(&mut rng, n, 4.1e8, 2e-5), counts(&mut rng, n, 4.1e8, 2e-5));
            let (_, _, kind) = judge(&a, &b);
            assert!(matches!(kind, Kind::InsideNoise | Kind::Same), "trial {trial}: {kind:?} on {a:?} {b:?}");
        }
    }

    /// A change of 1% is called with one run a side, in its direction;
    /// 0.1% (inside the measured spread) is not.
    #[test]
    fn one_percent_is_called_with_one_run_a_side() {
        let mut rng = Seeded(7);
        for _ in 0..500 {
            let a = counts(&mut rng, 1, 4.1e8, 2e-5);
            let up = counts(&mut rng, 1, 4.1e8 * 1.01, 2e-5);
            let down = counts(&mut rng, 1, 4.1e8 * 0.99, 2e-5);
            let small = counts(&mut rng, 1, 4.1e8 * 1.001, 2e-5);
            assert_eq!(judge(&a, &up).2, Kind::More);
            assert_eq!(judge(&a, &down).2, Kind::Less);
            assert_eq!(judge(&a, &small).2, Kind::InsideNoise);
        }
    }

    /// Sides whose own runs spread widely raise the threshold with them:
    /// a 1% change between sides that each spread by 1% is not called.
    #[test]
    fn a_wide_side_raises_the_threshold() {
        let a = [4.00e8, 4.04e8, 4.02e8];
        let b = [4.06e8, 4.07e8, 4.065e8];
        let (change, threshold, kind) = judge(&a, &b);
        assert!(change > 1.0, "{change}");
        assert!(matches!(threshold, Threshold::Sides { .. }), "{threshold:?}");
        assert!((threshold.pct() - 3.0 * 0.04e8 / 4.02e8 * 100.0).abs() < 1e-9, "{threshold:?}");
        assert_eq!(kind, Kind::InsideNoise);
        assert_eq!(judge(&[5.0], &[5.0]).2, Kind::Same);
    }

    fn counted(fns: &[(&str, u64)]) -> CountedPass {
        let functions: BTreeMap<String, u64> = fns.iter().map(|(f, n)| (f.to_string(), *n)).collect();
        let total = functions.values().sum();
        let run = CountedRun {
            run: "cold-counted".into(),
            instructions: total,
            phases: BTreeMap::new(),
            processes: Vec::new(),
            functions,
        };
        CountedPass {
            pass: "cold-counted".into(),
            clean: "cold-clean".into(),
            median: total as f64,
            spread_pct: 0.0,
            phases: BTreeMap::new(),
            top: Vec::new(),
            loader: 0.0,
            runs: vec![run],
        }
    }

    /// One nix: every function that moved, one-sided ones too. Two nixes:
    /// only functions both builds name (2.8's `nix::` functions are `???` in 2.26).
    #[test]
    fn between_two_nixes_only_functions_both_name_are_moved() {
        let a = counted(&[("nix::ExprVar::eval", 900), ("???", 100), ("malloc", 50)]);
        let b = counted(&[("???", 1200), ("malloc", 70)]);
        let one = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), false);
        let names: Vec<&str> = one[0].moved.iter().map(|m| m.function.as_str()).collect();
        assert_eq!(names, ["???", "nix::ExprVar::eval", "malloc"]);
        let two = compare(&[a], &[b], true);
        let names: Vec<&str> = two[0].moved.iter().map(|m| m.function.as_str()).collect();
        assert_eq!(names, ["malloc"]);
        assert!(two[0].moved_named_on_both && !one[0].moved_named_on_both);
        assert_eq!(two[0].kind, Kind::More, "1,050 -> 1,270 instructions");
    }

    #[test]
    fn functions_are_placed_by_their_names() {
        assert_eq!(
            Origin::of(
                "nix::EvalState::callFunction(nix::Value&, unsigned long, nix::Value**, nix::Value&, nix::PosIdx)"
            ),
            Origin::Nix
        );
        assert_eq!(Origin::of("GC_mark_from"), Origin::Gc);
        assert_eq!(Origin::of("do_lookup_x"), Origin::Loader);
        assert_eq!(Origin::of("???"), Origin::NoSymbol);
        assert_eq!(Origin::of("std::_Rb_tree_insert_and_rebalance"), Origin::Cxx);
        assert_eq!(Origin::of("__memcpy_avx_unaligned_erms"), Origin::Other);
    }
}
