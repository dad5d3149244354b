//! What the two sides of a comparison are: each bundle's provenance (what
//! it measured, where), how they differ, and which groups of it both
//! recorded: "measured the same workload" is said only of what both sides
//! recorded alike (a bundle without provenance says nothing of it).

use std::collections::BTreeMap;

use evalbench_bundle::provenance::{Difference, Provenance, GROUPS};
use evalbench_bundle::Bundle;

use crate::runs;

/// The provenance of both sides, and every field that differs, with the
/// PostgreSQL settings of each side's first pass as the group "settings".
pub fn differs(ba: &Bundle, bb: &Bundle) -> (Provenance, Provenance, Vec<Difference>) {
    let (pa, pb) = (ba.provenance(), bb.provenance());
    let mut d = pa.differs(&pb);
    let first = |b: &Bundle| b.passes.first().map(|p| runs::pg_settings(&[p])).unwrap_or_default();
    let (sa, sb) = (first(ba), first(bb));
    if sa != sb {
        let text = |s: &BTreeMap<String, String>| {
            if s.is_empty() {
                "defaults".to_string()
            } else {
                s.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
            }
        };
        // The server's settings differ by these: said once, as given.
        d.retain(|x| x.field != "postgres_settings");
        d.push(Difference { group: "settings", field: "pg_settings".into(), a: text(&sa), b: text(&sb) });
    }
    (pa, pb, d)
}

/// The provenance groups (workload, system, evalbench, machine, plan) that
/// `p` records something of.
pub fn recorded(p: &Provenance) -> Vec<&'static str> {
    let v = serde_json::to_value(p).unwrap_or_default();
    GROUPS
        .iter()
        .copied()
        .filter(|g| v.get(*g).and_then(|x| x.as_object()).is_some_and(|o| o.values().any(|x| !x.is_null())))
        .collect()
}

/// The groups both sides record: those a "measured the same" may speak of.
pub fn both_recorded(a: &Provenance, b: &Provenance) -> Vec<&'static str> {
    let rb = recorded(b);
    recorded(a).into_iter().filter(|g| rb.contains(g)).collect()
}
