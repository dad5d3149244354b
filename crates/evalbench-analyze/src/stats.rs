//! Span totals by (name, process).

use std::collections::HashMap;

use evalbench_bundle::Stream;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpanStat {
    pub name: String,
    pub process: String,
    pub count: u64,
    pub total_us: i64,
    pub mean_us: i64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub max_us: i64,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[evalbench_decode::rank::nearest_rank(sorted.len(), q) - 1]
}

/// Nearest-rank percentile by selection (reorders `v`).
pub fn select_rank(v: &mut [i64], q: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    let rank = evalbench_decode::rank::nearest_rank(v.len(), q);
    *v.select_nth_unstable(rank - 1).1
}

/// Aggregates every span by (name, process), sorted by total time, largest first.
pub fn span_stats(streams: &[Stream]) -> Vec<SpanStat> {
    let mut groups: HashMap<(&str, &str), Vec<i64>> = HashMap::new();
    for st in streams {
        // Index by the stream's name table first: one hash lookup per name, not per span.
        let mut local: Vec<Vec<i64>> = vec![Vec::new(); st.names.len()];
        for s in &st.spans {
            local[s.name as usize].push(s.dur_us);
        }
        for (i, durs) in local.into_iter().enumerate() {
            if durs.is_empty() {
                continue;
            }
            groups.entry((st.names[i].as_str(), st.process.as_str())).or_default().extend(durs);
        }
    }
    stats_of(groups)
}

/// The statistics of every (name, process)'s durations, largest total first.
pub fn stats_of<K: AsRef<str>>(groups: impl IntoIterator<Item = ((K, K), Vec<i64>)>) -> Vec<SpanStat> {
    let mut out: Vec<SpanStat> = groups
        .into_iter()
        .filter(|(_, d)| !d.is_empty())
        .map(|((name, process), mut d)| {
            let total: i64 = d.iter().sum();
            let max = d.iter().copied().max().unwrap_or(0);
            // Two selections instead of a sort: same nearest-rank answer, linear time.
            let p95 = select_rank(&mut d, 0.95);
            let p50 = select_rank(&mut d, 0.50);
            SpanStat {
                name: name.as_ref().to_string(),
                process: process.as_ref().to_string(),
                count: d.len() as u64,
                total_us: total,
                mean_us: total / d.len() as i64,
                p50_us: p50,
                p95_us: p95,
                max_us: max,
            }
        })
        .collect();
    out.sort_by(|a, b| b.total_us.cmp(&a.total_us).then_with(|| a.name.cmp(&b.name)).then_with(|| a.process.cmp(&b.process)));
    out
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn selection_agrees_with_sorting() {
        let mut v: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1013).collect();
        let mut sorted = v.clone();
        sorted.sort();
        for q in [0.01, 0.5, 0.95, 0.999, 1.0] {
            assert_eq!(super::select_rank(&mut v, q), percentile(&sorted, q));
        }
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.95), 95);
        assert_eq!(percentile(&[7], 0.95), 7);
    }
}
