//! analyze's results as their JSON has them: analyze's numbers, with the
//! report's words in the places scripts have always read them (a verdict's
//! `text`, a family's `power`, an undecided time's `why`, a pass's
//! `store_writes` and its conditions' `withheld`). analyze holds a
//! verdict's grounds, not its sentence; this is the one place the JSON of
//! `compare`, `run --baseline` (compare.json) and `bench` gets its words.

use evalbench_analyze::comparison::{PassComparison, Undecided};
use evalbench_analyze::counters::CounterVerdict;
use evalbench_analyze::verdict::{Family, Verdict};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::words;

/// A verdict with its sentence, after its numbers.
#[derive(Serialize)]
pub struct WordedVerdict<'a> {
    #[serde(flatten)]
    verdict: &'a Verdict,
    text: String,
}

pub fn verdict(v: &Verdict) -> WordedVerdict<'_> {
    WordedVerdict { verdict: v, text: words::verdict(v) }
}

/// A counter's verdict with its sentence.
#[derive(Serialize)]
pub struct WordedCounter<'a> {
    #[serde(flatten)]
    counter: &'a CounterVerdict,
    text: String,
}

pub fn counter(c: &CounterVerdict) -> WordedCounter<'_> {
    WordedCounter { counter: c, text: words::counter(c) }
}

/// A family with its word on power (null when its runs allow a verdict).
#[derive(Serialize)]
pub struct WordedFamily<'a> {
    #[serde(flatten)]
    family: &'a Family,
    power: Option<String>,
}

pub fn family(f: &Family) -> WordedFamily<'_> {
    WordedFamily { family: f, power: words::power(f) }
}

/// For `#[serde(serialize_with)]` on a verdict field of an output model.
pub fn verdict_field<S: Serializer>(v: &Verdict, s: S) -> Result<S::Ok, S::Error> {
    verdict(v).serialize(s)
}

pub fn verdict_option<S: Serializer>(v: &Option<Verdict>, s: S) -> Result<S::Ok, S::Error> {
    v.as_ref().map(verdict).serialize(s)
}

pub fn families_field<S: Serializer>(v: &[Family], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(family))
}

pub fn counters_field<S: Serializer>(v: &[CounterVerdict], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(counter))
}

fn value<T: Serialize>(v: T) -> Value {
    serde_json::to_value(v).expect("serializes")
}

/// A pass compared, as compare.json has it: every verdict, counter and
/// family with its words.
pub fn pass(c: &PassComparison) -> Value {
    let mut v = value(c);
    let rows = |rows: &[evalbench_analyze::comparison::Row]| -> Value {
        Value::Array(
            rows.iter().map(|r| serde_json::json!({ "what": r.what, "verdict": verdict(&r.verdict) })).collect(),
        )
    };
    v["wall"] = value(verdict(&c.evaluated));
    v["spans"] = rows(&c.spans);
    v["statements"] = rows(&c.statements);
    v["path"] = rows(&c.path);
    v["counters"] = value(c.counters.iter().map(counter).collect::<Vec<_>>());
    if let Some(n) = &c.nix_on_path {
        v["nix_on_path"] = value(verdict(n));
    }
    let f = &c.families;
    for (key, fam) in [
        ("evaluated", &f.evaluated),
        ("spans", &f.spans),
        ("statements", &f.statements),
        ("counters", &f.counters),
        ("path", &f.path),
    ] {
        v["families"][key] = value(family(fam));
    }
    if let Some(w) = words::store_writes(c) {
        v["store_writes"] = Value::from(w);
    }
    if let Some(w) = crate::condition_notes::withheld(&c.conditions) {
        v["conditions"]["withheld"] = Value::from(w);
    }
    if let (Some(rows), Some(Value::Array(out))) = (&c.plans, v.get_mut("plans")) {
        for (row, out) in rows.iter().zip(out) {
            if let Some(s) = &row.statement_verdict {
                out["statement_verdict"] = value(verdict(s));
            }
        }
    }
    v
}

/// The clean passes' times without a verdict, each with why.
pub fn undecided(u: &[Undecided]) -> Value {
    Value::Array(
        u.iter()
            .map(|u| {
                let mut v = value(u);
                v["why"] = Value::from(words::no_verdict(u.why));
                v
            })
            .collect(),
    )
}
