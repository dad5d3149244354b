//! A clean pass's evaluated seconds that got no verdict in a comparison,
//! why, and how many runs a side would allow one: what compare prints on
//! stderr and `--fail-on-undecided` fails on.

use serde::Serialize;

use crate::comparison::PassComparison;
use crate::verdict::{runs_needed, Kind};

/// A clean pass's time that could not be judged, and what would allow it.
#[derive(Debug, Clone, Serialize)]
pub struct Undecided {
    pub pass: String,
    pub what: String,
    pub runs_a: usize,
    pub runs_b: usize,
    /// Runs a side at which a verdict becomes possible at all in its family.
    pub runs_needed: usize,
    /// Why there is no verdict (its JSON carries the words: `report::output::worded`).
    #[serde(skip)]
    pub why: NoVerdict,
}

/// Why a clean pass's time got no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoVerdict {
    /// One run on a side: no noise estimate.
    OneRun,
    /// Too few runs for any change of the family to pass Holm's correction.
    TooFewForFamily,
}

/// A clean pass's evaluated seconds without a verdict, and the runs a side
/// that would make one possible in its family.
pub(crate) fn undecided(c: &PassComparison, m: usize) -> Option<Undecided> {
    let family = &c.families.evaluated;
    let why = match c.evaluated.kind {
        Kind::NoNoiseEstimate => NoVerdict::OneRun,
        Kind::InsideNoise if family.power.is_some() => NoVerdict::TooFewForFamily,
        _ => return None,
    };
    let runs_needed = runs_needed(m, crate::verdict::ALPHA);
    Some(Undecided {
        pass: c.pass_a.clone(),
        what: "evaluated".into(),
        runs_a: c.runs_a,
        runs_b: c.runs_b,
        runs_needed,
        why,
    })
}
