//! Any bytes as a span file: never a panic; whatever parses also survives
//! alignment, statistics and track layout; the fast line reader reads every
//! line as serde does, or leaves it to serde; fields left in the file are
//! found at the bytes that a plain read gives, through any buffer size;
//! nesting inferred by time (lines without ids, Gradient's) gives every
//! span an id and a parent that contains it, never itself.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        assert!(
            evalbench_bundle::spans::fast_path_agrees(line),
            "fast and serde readers disagree on {:?}",
            String::from_utf8_lossy(line)
        );
    }
    for buffer in [3, 4096] {
        assert!(
            evalbench_bundle::spans::placed_fields_agree(data, buffer),
            "fields left in the file are not where read, buffer {buffer}"
        );
    }
    if let Ok(mut file) = evalbench_bundle::spans::read_spans_from_bytes(data, "fuzz.1.jsonl") {
        for st in &mut file.streams {
            if st.infer_nesting() {
                let by_id: std::collections::HashMap<u64, &evalbench_bundle::Span> =
                    st.spans.iter().map(|s| (st.id(s).expect("an inferred id"), s)).collect();
                for s in &st.spans {
                    if let Some(p) = st.parent(s) {
                        let parent = by_id[&p];
                        assert!(p != st.id(s).unwrap_or(0), "a span is its own parent");
                        assert!(
                            parent.ts_us <= s.ts_us && s.end_us() <= parent.end_us(),
                            "a parent that does not contain its child"
                        );
                    }
                }
            }
        }
        let _ = evalbench_analyze::align_pass(&file.streams);
        let _ = evalbench_analyze::span_stats(&file.streams);
        for s in &file.streams {
            let _ = evalbench_analyze::assign_tracks(s);
        }
    }
}
