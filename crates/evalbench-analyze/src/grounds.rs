//! What a verdict's sentence is made of: the exact figures (a verdict's
//! own are rounded to their unit's precision), the tests where they were
//! made, and the rule that decided it. The report words a verdict from
//! these (`evalbench_report::words`); analyze says no sentence of its own
//! but the one its JSON and history have always stored (`Verdict::text`),
//! which the report's words equal, rule by rule.

use crate::verdict::Kind;

#[derive(Debug, Clone, PartialEq)]
pub struct Grounds {
    /// The measure's unit (`s`, `ms`, or none for a count).
    pub unit: String,
    /// (median B / median A - 1) × 100, exact; NaN from 0 to anything.
    pub change: f64,
    pub a_median: f64,
    pub b_median: f64,
    /// The smallest change that counts, in the unit, exact.
    pub floor: f64,
    /// Where the two sides were tested.
    pub tested: Option<Tested>,
    /// The 95% bootstrap interval of the ratio of medians, where made.
    pub interval: Option<(f64, f64)>,
    /// The words of a change: (better, worse).
    pub words: (Kind, Kind),
    pub rule: Rule,
}

/// Mann-Whitney's p, Holm's adjusted p, and the size of the family it
/// was adjusted over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tested {
    pub p: f64,
    pub adjusted: f64,
    pub family: usize,
}

/// Which rule decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Not tested (one run on a side), but under the floor whatever the noise.
    UnderFloorUntested,
    /// Not tested: one run on a side gives no noise estimate.
    NoEstimate,
    /// Holm's p did not pass; no interval was made.
    NoiseByP,
    /// The machine was busy beside a side's runs.
    Withheld,
    /// A side's runs, in blocks in run order, drifted as far as the change.
    SideDrift {
        side: &'static str,
        drift: f64,
        p: f64,
    },
    /// Between sessions: inside the largest drift measured in the pass.
    PassDrift {
        drift: f64,
    },
    /// Between sessions: a row that moved by less than a hundredth of the
    /// pass's evaluated seconds, which rows so small have differed by.
    SessionFloor {
        moved: f64,
        floor: f64,
        allowance: f64,
    },
    /// Between sessions: inside the allowance.
    BetweenSessions {
        allowance: f64,
    },
    /// Real, but under the floor.
    RealUnderFloor,
    Better,
    Worse,
    /// The interval lies within the floor.
    WithinFloor,
    Noise,
}
