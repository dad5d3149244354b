//! The slow attribute, named. Gradient cannot tell which attribute of an
//! evaluation is slow (its per-entry-point cost keeps `eval_ms` at 0); the
//! lab's instrumented passes trace every call nix makes, folded under the
//! attribute the evaluator was on (`eval/nix-profile.json`,
//! `eval/nix-profile.folded`). Per instrumented pass: the attributes with
//! the largest share of nix's own time (a share: instrumented timings are
//! shapes, not durations), those with the most function calls (exact
//! counts), and for each the call site where most of its own time went.
//! Two passes compared: the attributes whose share or calls moved.

use std::collections::HashMap;

use evalbench_bundle::{layout, PassDir};
use serde::Serialize;

/// Attributes named per list.
pub const NAMED: usize = 3;
/// A share that moved by at least this many percentage points is named by compare.
pub const SHARE_POINTS: f64 = 5.0;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AttributeShare {
    pub attr: String,
    /// Of the pass's traced own time (0-1).
    pub share: f64,
    pub calls: u64,
    /// The call site (file:line:col as nix's trace gives it) where most of
    /// the attribute's own time went; None where its stacks name none.
    pub site: Option<String>,
}

/// One instrumented pass's attributes.
#[derive(Debug, Clone, Serialize)]
pub struct PassAttributes {
    pub pass: String,
    pub attributes: usize,
    pub by_share: Vec<AttributeShare>,
    pub by_calls: Vec<AttributeShare>,
}

/// Each attribute's (self µs, calls), by name.
type Costs = HashMap<String, (u64, u64)>;

/// Every attribute of a pass's profile, and the total own time.
fn costs(p: &PassDir) -> Option<(Costs, u64)> {
    let j = evalbench_decode::nix_profile::NixProfile::read(&p.file(layout::NIX_PROFILE_JSON)).ok()?;
    // The evaluator's own frames (opening the flake) are not an attribute.
    let costs: Costs = j
        .by_attribute
        .iter()
        .filter(|a| !a.attr.starts_with('('))
        .map(|a| (a.attr.clone(), (a.self_us, a.calls)))
        .collect();
    let total = j.by_attribute.iter().map(|a| a.self_us).sum::<u64>();
    (!costs.is_empty()).then_some((costs, total))
}

/// For each of `attrs`, the frame below it whose stacks hold most own time.
fn sites(p: &PassDir, attrs: &[&str]) -> HashMap<String, String> {
    let Ok(folded) = std::fs::read_to_string(p.file(layout::NIX_PROFILE_FOLDED)) else { return HashMap::new() };
    let mut by: HashMap<(&str, &str), u64> = HashMap::new();
    for line in folded.lines() {
        let Some((stack, value)) = line.rsplit_once(' ') else { continue };
        let Some((root, rest)) = stack.split_once(';') else { continue };
        if !attrs.contains(&root) {
            continue;
        }
        // A stack cut at the profile's depth holds time whose place is not
        // known (it is below the cut): not given to the frame above it.
        if rest.rsplit(';').next().is_some_and(|f| f.starts_with('[')) {
            continue;
        }
        // The deepest frame that is a place in the source: not the evaluator's
        // own `--apply` code (`(string)`) or a position nix does not know.
        let source = |f: &&str| !f.starts_with('(') && *f != "undefined position";
        let Some(leaf) = rest.rsplit(';').find(source) else { continue };
        *by.entry((root, leaf)).or_default() += value.parse::<u64>().unwrap_or(0);
    }
    let mut out: HashMap<String, (String, u64)> = HashMap::new();
    for ((root, leaf), v) in by {
        let better = out.get(root).is_none_or(|(l, best)| v > *best || (v == *best && leaf < l.as_str()));
        if better {
            out.insert(root.to_string(), (leaf.to_string(), v));
        }
    }
    out.into_iter().map(|(k, (leaf, _))| (k, leaf)).collect()
}

/// The named attributes of an instrumented pass with nix's profile; None otherwise.
pub fn of_pass(p: &PassDir) -> Option<PassAttributes> {
    if layout::PassKind::of(&p.name) != layout::PassKind::Instrumented {
        return None;
    }
    let (costs, total) = costs(p)?;
    let mut all: Vec<(&String, &(u64, u64))> = costs.iter().collect();
    let share = |us: u64| if total == 0 { 0.0 } else { us as f64 / total as f64 };
    all.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    let by_share: Vec<_> = all.iter().take(NAMED).map(|(a, c)| (a.as_str(), **c)).collect();
    all.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(b.0)));
    let by_calls: Vec<_> = all.iter().take(NAMED).map(|(a, c)| (a.as_str(), **c)).collect();
    let names: Vec<&str> = by_share.iter().chain(&by_calls).map(|(a, _)| *a).collect();
    let sites = sites(p, &names);
    let named = |v: Vec<(&str, (u64, u64))>| {
        v.into_iter()
            .map(|(a, (us, calls))| AttributeShare {
                attr: a.to_string(),
                share: share(us),
                calls,
                site: sites.get(a).cloned(),
            })
            .collect()
    };
    Some(PassAttributes {
        pass: p.name.clone(),
        attributes: costs.len(),
        by_share: named(by_share),
        by_calls: named(by_calls),
    })
}

/// An attribute whose share or calls moved from A's pass to B's.
#[derive(Debug, Clone, Serialize)]
pub struct AttributeMove {
    pub attr: String,
    pub a_share: f64,
    pub b_share: f64,
    pub a_calls: u64,
    pub b_calls: u64,
}

/// The attributes whose calls changed (exact counts) or whose share moved
/// by [`SHARE_POINTS`] or more, between two instrumented passes; largest
/// move in calls first, then in share; an attribute on one side only counts from 0.
pub fn moved(a: &PassDir, b: &PassDir) -> Option<Vec<AttributeMove>> {
    let ((ca, ta), (cb, tb)) = (costs(a)?, costs(b)?);
    let share = |us: u64, t: u64| if t == 0 { 0.0 } else { us as f64 / t as f64 };
    let mut names: Vec<&String> = ca.keys().chain(cb.keys()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<AttributeMove> = names
        .into_iter()
        .map(|n| {
            let ((sa, xa), (sb, xb)) = (ca.get(n).copied().unwrap_or_default(), cb.get(n).copied().unwrap_or_default());
            AttributeMove { attr: n.clone(), a_share: share(sa, ta), b_share: share(sb, tb), a_calls: xa, b_calls: xb }
        })
        .filter(|m| m.a_calls != m.b_calls || (m.b_share - m.a_share).abs() * 100.0 >= SHARE_POINTS)
        .collect();
    let calls_moved = |m: &AttributeMove| m.b_calls.abs_diff(m.a_calls);
    out.sort_by(|x, y| {
        calls_moved(y)
            .cmp(&calls_moved(x))
            .then((y.b_share - y.a_share).abs().total_cmp(&(x.b_share - x.a_share).abs()))
            .then(x.attr.cmp(&y.attr))
    });
    Some(out)
}
