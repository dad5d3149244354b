//! Why a verdict reads as it does, as a word a table can hold. The full
//! sentence (the report's `words::verdict`) carries the statistics; a table shows the word
//! and says what each word means once, in a legend (the report's
//! `compare::tables::legend`), so
//! that 80 rows do not repeat one explanation 80 times.

use serde::{Deserialize, Serialize};

use crate::verdict::Kind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The tests alone decided: outside noise, inside it, or within the floor.
    #[default]
    Tested,
    /// A side's own runs drifted, in blocks in run order, as far as the change.
    SideDrift,
    /// Between sessions: inside the largest drift measured in the pass.
    PassDrift,
    /// Between sessions: inside the allowance `--between-sessions`.
    BetweenSessions,
    /// The machine was busy beside a side's runs.
    Machine,
    /// Too few runs for a noise estimate.
    TooFewRuns,
}

impl Reason {
    /// The word a table shows for a verdict of `kind` for this reason.
    pub fn label(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (_, Kind::Withheld) | (Reason::Machine, _) => "withheld",
            (Reason::SideDrift, _) => "drift",
            (Reason::PassDrift, _) => "pass drift",
            (Reason::BetweenSessions, _) => "sessions",
            (Reason::TooFewRuns, _) => "too few runs",
            (_, Kind::InsideNoise) => "noise",
            (_, Kind::NoNoiseEstimate) => "too few runs",
            (_, k) => k.as_str(),
        }
    }
}
