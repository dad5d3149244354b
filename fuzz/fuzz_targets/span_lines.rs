//! Any bytes as a span file: never a panic; whatever parses also survives
//! alignment, statistics and track layout.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = evalbench_bundle::spans::read_spans_from_bytes(data, "fuzz.1.jsonl") {
        let _ = evalbench_analyze::align_pass(&file.streams);
        let _ = evalbench_analyze::span_stats(&file.streams);
        for s in &file.streams {
            let _ = evalbench_analyze::assign_tracks(s);
        }
    }
});
