//! The nearest-rank percentile, the one definition every table uses (the
//! summary's p50/p95, the WebSocket latencies, the statements'): the value at
//! rank ceil(q·n) of the n sorted values.

/// The 1-based rank of the q-quantile among `n` sorted values (1 for n = 0).
pub fn nearest_rank(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n.max(1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranks() {
        assert_eq!(super::nearest_rank(100, 0.95), 95);
        assert_eq!(super::nearest_rank(1, 0.5), 1);
        assert_eq!(super::nearest_rank(3, 0.5), 2);
        assert_eq!(super::nearest_rank(0, 0.5), 1);
    }
}
