//! The evaluator of a pass as the page shows it: nix's counters, the calls
//! nix counted (instrumented passes), and the attributes by time and by the
//! memory they added, from the `resolve` spans.

use evalbench_bundle::nix_stats::{self, Calls, Counters};

pub use evalbench_decode::nix_profile::AttributeCost;
pub use evalbench_decode::nix_trace::Position;

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
    /// The stacks' self time added up (µs).
    pub self_us: f64,
    pub svg_exists: bool,
    pub sites_by_self: Vec<Position>,
    pub sites_by_calls: Vec<Position>,
    pub attrs_by_self: Vec<AttributeCost>,
    pub attrs_by_calls: Vec<AttributeCost>,
    pub lines: u64,
    pub traced_us: u64,
    /// Call sites a stack kept, and the frame that holds deeper calls
    /// (None: stacks were not cut).
    pub cut: Option<(usize, String)>,
}

/// nix's own sampled profile (Nix >= 2.30, `--eval-profiler flamegraph`),
/// ranked, to set beside the trace's exact one.
#[derive(Debug, Default)]
pub struct Sampled {
    pub samples: u64,
    pub by_position: Vec<Ranked>,
    pub by_function: Vec<Ranked>,
}

pub use evalbench_decode::eval_profiler::Ranked;

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
    /// Evaluators recycled past the memory cap, whose work the counters lack.
    pub recycled: usize,
    pub profile: Option<Section<NixProfile>>,
    pub sampled: Option<Section<Sampled>>,
}

fn sampled(p: &PassView) -> Option<Section<Sampled>> {
    let file = p.file(evalbench_bundle::layout::NIX_EVAL_PROFILER_FOLDED);
    if !file.exists() {
        return None;
    }
    let inputs = evalbench_bundle::inputs::Inputs::read(&p.dir);
    Some(match evalbench_decode::eval_profiler::read(&file, inputs.as_ref()) {
        Ok(s) => {
            let top = |mut v: Vec<Ranked>| {
                v.truncate(TOP);
                v
            };
            Section::Ready(Sampled {
                samples: s.samples,
                by_position: top(s.by_position()),
                by_function: top(s.by_function()),
            })
        }
        Err(e) => Section::Unreadable(e.to_string()),
    })
}

fn profile(p: &PassView) -> Option<Section<NixProfile>> {
    use evalbench_bundle::layout;
    let folded = std::fs::read_to_string(p.file(layout::NIX_PROFILE_FOLDED)).ok()?;
    let j = match evalbench_decode::nix_profile::NixProfile::read(&p.file(layout::NIX_PROFILE_JSON)) {
        Ok(j) => j,
        Err(e) => return Some(Section::Unreadable(e.to_string())),
    };
    fn top<T: Clone>(v: &[T], key: impl Fn(&T) -> (u64, &str)) -> Vec<T> {
        let mut v = v.to_vec();
        v.sort_by(|x, y| key(y).0.cmp(&key(x).0).then_with(|| key(x).1.cmp(key(y).1)));
        v.truncate(TOP);
        v
    }
    let stacks = super::captures::folded_stacks(&folded);
    Some(Section::Ready(NixProfile {
        self_us: stacks.iter().map(|s| s.1).sum(),
        stacks,
        svg_exists: p.file(layout::NIX_FLAME_SVG).exists(),
        sites_by_self: top(&j.by_position, |r| (r.self_us, &r.position)),
        sites_by_calls: top(&j.by_position, |r| (r.calls, &r.position)),
        attrs_by_self: top(&j.by_attribute, |r| (r.self_us, &r.attr)),
        attrs_by_calls: top(&j.by_attribute, |r| (r.calls, &r.attr)),
        lines: j.lines,
        traced_us: j.traced_us,
        cut: j.max_depth.map(|d| (d, evalbench_decode::nix_trace::truncation_frame(d))),
    }))
}

fn top(m: &std::collections::BTreeMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m.iter().map(|(k, &n)| (k.clone(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(TOP);
    v
}

/// The span of one attribute's evaluation, whose fields this view reads
/// (attr, rss_kb, rss_delta_kb, eval_cache).
pub(super) const RESOLVE: &str = "resolve";

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
    // Only the lists' rows are kept, each list in its order as it goes: a
    // nixpkgs-sized pass has millions of attributes, and a vector of them
    // all was 150 MB at 1.4M that the allocator kept after.
    let slowest = |a: &Attribute, b: &Attribute| b.dur_us.cmp(&a.dur_us).then_with(|| a.attr.cmp(&b.attr));
    let hungriest =
        |a: &Attribute, b: &Attribute| b.rss_delta_kb.cmp(&a.rss_delta_kb).then_with(|| a.attr.cmp(&b.attr));
    let (mut attributes, mut cached) = (0, 0);
    for (si, st) in p.data.streams.iter().enumerate() {
        for (i, s) in st.spans.iter().enumerate() {
            if st.name(s) != RESOLVE {
                continue;
            }
            let f = |k: &str| p.field(si, i, k);
            let a = Attribute {
                attr: f("attr").and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                dur_us: s.dur_us,
                rss_kb: f("rss_kb").and_then(|v| v.as_i64()),
                rss_delta_kb: f("rss_delta_kb").and_then(|v| v.as_i64()),
                cached: f("eval_cache").is_some_and(|v| v == "hit"),
            };
            attributes += 1;
            cached += usize::from(a.cached);
            if a.rss_delta_kb.is_some() {
                offer(&mut e.hungriest, a.clone(), &hungriest);
            }
            offer(&mut e.slowest, a, &slowest);
        }
    }
    if e.evaluations == 0 && attributes == 0 {
        return Section::Missing(evalbench_bundle::layout::EVAL_DIR);
    }
    e.profile = profile(p);
    e.sampled = sampled(p);
    e.recycled = crate::counters::recycled_evaluators(&p.data);
    e.attributes = attributes;
    e.cached = cached;
    Section::Ready(e)
}

/// Puts `a` in `top` (at most [`TOP`] rows, in `order`) if it belongs
/// there: where a stable sort of every row would place it, after its equals.
fn offer(top: &mut Vec<Attribute>, a: Attribute, order: &dyn Fn(&Attribute, &Attribute) -> std::cmp::Ordering) {
    use std::cmp::Ordering::{Greater, Less};
    if top.len() == TOP && top.last().is_some_and(|last| order(&a, last) != Less) {
        return;
    }
    let at = top.partition_point(|x| order(x, &a) != Greater);
    top.insert(at, a);
    top.truncate(TOP);
}

#[cfg(test)]
mod tests {
    use super::{offer, Attribute, TOP};

    /// The kept rows are those a stable sort of every row puts first, ties
    /// (same time, same name) in the order they came: seeded rows with few
    /// distinct values, so that ties are many.
    #[test]
    fn the_kept_rows_are_the_sorted_lists_head() {
        let mut r = crate::seeded::Seeded(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |n: u64| r.next(n);
        for round in 0..200 {
            let rows: Vec<Attribute> = (0..next(60))
                .map(|i| Attribute {
                    attr: format!("a{}", next(5)),
                    dur_us: next(8) as i64,
                    rss_kb: Some(i as i64),
                    rss_delta_kb: (next(3) > 0).then(|| next(6) as i64),
                    cached: false,
                })
                .collect();
            let slowest = |a: &Attribute, b: &Attribute| b.dur_us.cmp(&a.dur_us).then_with(|| a.attr.cmp(&b.attr));
            let mut top = Vec::new();
            for r in &rows {
                offer(&mut top, r.clone(), &slowest);
            }
            let mut all = rows.clone();
            all.sort_by(slowest);
            all.truncate(TOP);
            // rss_kb numbers the rows: equal rows must keep their arrival order.
            assert_eq!(top, all, "round {round}");
        }
    }
}
