//! Why a verdict reads as it does, as a word a table can hold. The full
//! sentence (`Verdict::text`) carries the statistics; a table shows the word
//! and says what each word means once, in a legend (`Reason::legend`), so
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
            (_, Kind::InsideNoise) => "noise",
            (_, Kind::NoNoiseEstimate) => "too few runs",
            (_, k) => k.as_str(),
        }
    }

    /// What the word `label` means, said once under a table.
    pub fn legend(label: &str) -> Option<&'static str> {
        Some(match label {
            "faster" | "slower" => "faster, slower: outside noise: Mann-Whitney p under 0.05 after Holm over the row's family, and the 95% interval of the ratio of medians excludes 1",
            "noise" => "noise: inside run-to-run noise, by the same tests",
            "drift" => "drift: one side's own runs drifted while they were made (their medians in blocks in run order lie as far apart as the change)",
            "pass drift" => "pass drift: A and B come from two sessions, and the change is inside the largest drift measured in the pass (its drift note)",
            "sessions" => "sessions: A and B come from two sessions, and the change is inside what two sessions of one flake differ by (--between-sessions; for a row, a move under a hundredth of the evaluated seconds)",
            "negligible" => "negligible: real or not, smaller than the floor (1% of A's median, and 50 µs for a span or statement)",
            "withheld" => "withheld: not judged, the machine was busy beside a side's runs (the pass's machine note)",
            "too few runs" => "too few runs: a side has one run, so no noise estimate and no verdict",
            "more" | "less" | "same" => "more, less, same: exact counts, compared as they are (no test is needed)",
            _ => return None,
        })
    }
}
