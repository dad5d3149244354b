//! Span time folded by nesting: the self time of each path of span names
//! (a span's duration less its children's), the input of a flame graph.

use std::collections::HashMap;

use evalbench_bundle::Stream;

/// (process, then span names from the root down; self time in µs), in path
/// order, so sums and siblings come out the same on every render.
pub(super) fn fold(streams: &[Stream]) -> Vec<(Vec<String>, f64)> {
    let mut folded: HashMap<Vec<String>, f64> = HashMap::new();
    for st in streams {
        let by_id: HashMap<u64, usize> = st.spans.iter().enumerate().filter_map(|(i, s)| s.id.map(|id| (id, i))).collect();
        let mut child_sum = vec![0i64; st.spans.len()];
        for s in &st.spans {
            if let Some(&pi) = s.parent.and_then(|pa| by_id.get(&pa)) {
                child_sum[pi] += s.dur_us;
            }
        }
        let mut path_cache: HashMap<usize, Vec<u32>> = HashMap::new();
        for (i, s) in st.spans.iter().enumerate() {
            let path = path_of(st, i, &by_id, &mut path_cache);
            let mut frames = vec![st.process.clone()];
            frames.extend(path.iter().map(|&n| st.names[n as usize].clone()));
            *folded.entry(frames).or_default() += (s.dur_us - child_sum[i]).max(0) as f64;
        }
    }
    let mut stacks: Vec<(Vec<String>, f64)> = folded.into_iter().collect();
    stacks.sort_by(|a, b| a.0.cmp(&b.0));
    stacks
}

/// The name ids from the root down to span `i`, memoised.
fn path_of(st: &Stream, i: usize, by_id: &HashMap<u64, usize>, cache: &mut HashMap<usize, Vec<u32>>) -> Vec<u32> {
    if let Some(p) = cache.get(&i) {
        return p.clone();
    }
    // Iterative walk up, guarding against cycles in hostile files.
    let mut chain = vec![i];
    let mut cur = i;
    while let Some(&pi) = st.spans[cur].parent.and_then(|pa| by_id.get(&pa)) {
        if chain.len() > 256 || chain.contains(&pi) {
            break;
        }
        if cache.contains_key(&pi) {
            break;
        }
        chain.push(pi);
        cur = pi;
    }
    let top = *chain.last().expect("non-empty");
    let mut base: Vec<u32> = match st.spans[top].parent.and_then(|pa| by_id.get(&pa)).and_then(|pi| cache.get(pi)) {
        Some(p) => p.clone(),
        None => Vec::new(),
    };
    for &k in chain.iter().rev() {
        base.push(st.spans[k].name);
        cache.insert(k, base.clone());
    }
    base
}
