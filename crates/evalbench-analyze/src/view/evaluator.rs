//! The evaluator of a pass as the page shows it: nix's counters, the calls
//! nix counted (instrumented passes), and the attributes by time and by the
//! memory they added, from the `resolve` spans.

use evalbench_bundle::nix_stats::{self, Calls, Counters};

use super::{PassView, Section};

/// Rows shown per list.
pub const TOP: usize = 15;

/// One attribute's `resolve` span.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub attr: String,
    pub dur_us: i64,
    /// The evaluator's RSS after the attribute, and what it added (KiB);
    /// None when answered from the cache.
    pub rss_kb: Option<i64>,
    pub rss_delta_kb: Option<i64>,
    pub cached: bool,
}

/// nix's own profile of the pass (instrumented passes): the folded stacks,
/// and the call sites and attributes by self time and by calls.
#[derive(Debug, Default)]
pub struct NixProfile {
    pub stacks: Vec<(Vec<String>, f64)>,
    pub svg_exists: bool,
    /// (call site, calls, self µs)
    pub sites_by_self: Vec<(String, u64, u64)>,
    pub sites_by_calls: Vec<(String, u64, u64)>,
    /// (attribute, self µs, calls)
    pub attrs_by_self: Vec<(String, u64, u64)>,
    pub attrs_by_calls: Vec<(String, u64, u64)>,
    pub lines: u64,
    pub traced_us: u64,
}

#[derive(Debug, Default)]
pub struct Evaluator {
    /// nix evaluations in the pass (statistics files).
    pub evaluations: usize,
    pub counters: Counters,
    /// Calls by primop and by function position, most first (NIX_COUNT_CALLS).
    pub primops: Vec<(String, u64)>,
    pub functions: Vec<(String, u64)>,
    /// Attributes by evaluation time, most first; and by RSS added, most first.
    pub slowest: Vec<Attribute>,
    pub hungriest: Vec<Attribute>,
    pub attributes: usize,
    pub cached: usize,
    pub profile: Option<Section<NixProfile>>,
}

fn profile(p: &PassView) -> Option<Section<NixProfile>> {
    use evalbench_bundle::layout;
    let folded = std::fs::read_to_string(p.file(layout::NIX_PROFILE_FOLDED)).ok()?;
    let Some(j) = super::read_json(&p.file(layout::NIX_PROFILE_JSON)) else {
        return Some(Section::Unreadable(format!("{}/{}: missing or not JSON", p.name, layout::NIX_PROFILE_JSON)));
    };
    let rows = |key: &str, a: &str, b: &str, c: &str| -> Vec<(String, u64, u64)> {
        j[key].as_array().into_iter().flatten().filter_map(|v| Some((v[a].as_str()?.to_string(), v[b].as_u64()?, v[c].as_u64()?))).collect()
    };
    let sites = rows("by_position", "position", "calls", "self_us");
    let attrs = rows("by_attribute", "attr", "self_us", "calls");
    let top = |mut v: Vec<(String, u64, u64)>, by: fn(&(String, u64, u64)) -> u64| {
        v.sort_by(|x, y| by(y).cmp(&by(x)).then_with(|| x.0.cmp(&y.0)));
        v.truncate(TOP);
        v
    };
    Some(Section::Ready(NixProfile {
        stacks: super::captures::folded_stacks(&folded),
        svg_exists: p.file(layout::NIX_FLAME_SVG).exists(),
        sites_by_self: top(sites.clone(), |r| r.2),
        sites_by_calls: top(sites, |r| r.1),
        attrs_by_self: top(attrs.clone(), |r| r.1),
        attrs_by_calls: top(attrs, |r| r.2),
        lines: j["lines"].as_u64().unwrap_or(0),
        traced_us: j["traced_us"].as_u64().unwrap_or(0),
    }))
}

fn top(m: &std::collections::BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m.iter().map(|(k, &n)| (k.clone(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(TOP);
    v
}

pub(super) fn read(p: &PassView) -> Section<Evaluator> {
    let mut e = Evaluator::default();
    match nix_stats::read(&p.dir) {
        Ok(Some(s)) => {
            e.evaluations = s.files.len();
            e.counters = s.counters;
            let Calls { primops, functions, .. } = &s.calls;
            e.primops = top(primops);
            e.functions = top(functions);
        }
        Ok(None) => {}
        Err(err) => return Section::Unreadable(err.to_string()),
    }
    let mut attrs: Vec<Attribute> = Vec::new();
    for (si, st) in p.data.streams.iter().enumerate() {
        for (i, s) in st.spans.iter().enumerate() {
            if st.name(s) != "resolve" {
                continue;
            }
            let f = |k: &str| p.field(si, i, k);
            attrs.push(Attribute {
                attr: f("attr").and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                dur_us: s.dur_us,
                rss_kb: f("rss_kb").and_then(|v| v.as_i64()),
                rss_delta_kb: f("rss_delta_kb").and_then(|v| v.as_i64()),
                cached: f("eval_cache").is_some_and(|v| v == "hit"),
            });
        }
    }
    if e.evaluations == 0 && attrs.is_empty() {
        return Section::Missing(evalbench_bundle::layout::EVAL_DIR);
    }
    e.profile = profile(p);
    e.attributes = attrs.len();
    e.cached = attrs.iter().filter(|a| a.cached).count();
    attrs.sort_by(|a, b| b.dur_us.cmp(&a.dur_us).then_with(|| a.attr.cmp(&b.attr)));
    e.slowest = attrs.iter().take(TOP).cloned().collect();
    attrs.retain(|a| a.rss_delta_kb.is_some());
    attrs.sort_by(|a, b| b.rss_delta_kb.cmp(&a.rss_delta_kb).then_with(|| a.attr.cmp(&b.attr)));
    e.hungriest = attrs.into_iter().take(TOP).collect();
    Section::Ready(e)
}
