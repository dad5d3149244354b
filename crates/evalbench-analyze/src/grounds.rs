//! What a verdict's sentence is made of: the exact figures (a verdict's
//! own are rounded to their unit's precision), the tests where they were
//! made, and the rule that decided it. analyze says no sentence: the report
//! words a verdict from these (`evalbench_report::words`), and history
//! stores them with each change it found, to be worded when shown.
//!
//! Stored, every figure keeps its value: an infinite end of an interval (a
//! resample of A with median 0) or a change from 0 (NaN) is written as a
//! string, where serde_json would write null and lose which it was.

use serde::{Deserialize, Serialize};

use crate::verdict::Kind;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grounds {
    /// The measure's unit (`s`, `ms`, or none for a count).
    pub unit: String,
    /// (median B / median A - 1) × 100, exact; NaN from 0 to anything.
    #[serde(with = "any_f64")]
    pub change: f64,
    #[serde(with = "any_f64")]
    pub a_median: f64,
    #[serde(with = "any_f64")]
    pub b_median: f64,
    /// The smallest change that counts, in the unit, exact.
    #[serde(with = "any_f64")]
    pub floor: f64,
    /// Where the two sides were tested.
    pub tested: Option<Tested>,
    /// The 95% bootstrap interval of the ratio of medians, where made.
    #[serde(with = "any_interval")]
    pub interval: Option<(f64, f64)>,
    /// The words of a change: (better, worse).
    pub words: (Kind, Kind),
    pub rule: Rule,
}

/// Mann-Whitney's p, Holm's adjusted p, and the size of the family it
/// was adjusted over.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tested {
    #[serde(with = "any_f64")]
    pub p: f64,
    #[serde(with = "any_f64")]
    pub adjusted: f64,
    pub family: usize,
}

/// One of the two sides compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    A,
    B,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::A => "A",
            Side::B => "B",
        })
    }
}

/// Which rule decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
        side: Side,
        #[serde(with = "any_f64")]
        drift: f64,
        #[serde(with = "any_f64")]
        p: f64,
    },
    /// Between sessions: inside the largest drift measured in the pass.
    PassDrift {
        #[serde(with = "any_f64")]
        drift: f64,
    },
    /// Between sessions: a row that moved by less than a hundredth of the
    /// pass's evaluated seconds, which rows so small have differed by.
    SessionFloor {
        #[serde(with = "any_f64")]
        moved: f64,
        #[serde(with = "any_f64")]
        floor: f64,
        #[serde(with = "any_f64")]
        allowance: f64,
    },
    /// Between sessions: inside the allowance.
    BetweenSessions {
        #[serde(with = "any_f64")]
        allowance: f64,
    },
    /// Real, but under the floor.
    RealUnderFloor,
    Better,
    Worse,
    /// The interval lies within the floor.
    WithinFloor,
    Noise,
    /// Not called, and no run counts like these could have called it: the
    /// smallest p the test gives for them (`best`) is not under the
    /// family's threshold (`alpha` / its tests); `need` runs a side would do.
    TooFewRuns {
        #[serde(with = "any_f64")]
        best: f64,
        #[serde(with = "any_f64")]
        threshold: f64,
        need: usize,
    },
}

/// A float as stored: a number when finite, else `"inf"`, `"-inf"` or `"NaN"`.
pub mod any_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored<'a> {
        Number(f64),
        Word(&'a str),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Stored::deserialize(d)? {
            Stored::Number(v) => Ok(v),
            Stored::Word("NaN") => Ok(f64::NAN),
            Stored::Word("inf") => Ok(f64::INFINITY),
            Stored::Word("-inf") => Ok(f64::NEG_INFINITY),
            Stored::Word(w) => {
                Err(serde::de::Error::custom(format!("expected a number, \"inf\", \"-inf\" or \"NaN\", found {w:?}")))
            }
        }
    }
}

/// An interval as stored: its two ends as [`any_f64`], or null.
mod any_interval {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct End(#[serde(with = "super::any_f64")] f64);

    pub fn serialize<S: Serializer>(v: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
        v.map(|(lo, hi)| (End(lo), End(hi))).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
        Ok(Option::<(End, End)>::deserialize(d)?.map(|(lo, hi)| (lo.0, hi.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure comes back as it went, the ones JSON has no number for too.
    #[test]
    fn stored_grounds_keep_every_figure() {
        let g = Grounds {
            unit: "ms".into(),
            change: f64::NAN,
            a_median: 0.0,
            b_median: 0.25,
            floor: 0.05,
            tested: Some(Tested { p: 0.001, adjusted: 0.01, family: 12 }),
            interval: Some((1.5, f64::INFINITY)),
            words: (Kind::Faster, Kind::Slower),
            rule: Rule::SideDrift { side: Side::B, drift: 0.125, p: 0.02 },
        };
        let json = serde_json::to_string(&g).unwrap();
        assert!(json.contains(r#""change":"NaN""#) && json.contains(r#""interval":[1.5,"inf"]"#), "{json}");
        let back: Grounds = serde_json::from_str(&json).unwrap();
        assert!(back.change.is_nan());
        assert_eq!(Grounds { change: 0.0, ..back }, Grounds { change: 0.0, ..g });
        let err = serde_json::from_str::<Grounds>(&json.replace(r#""inf""#, r#""big""#)).unwrap_err().to_string();
        assert!(err.contains("found \"big\""), "{err}");
    }
}
