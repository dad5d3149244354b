//! The `span_lines` fuzz target's stored corpus, replayed on every test
//! run: libFuzzer needs a nightly toolchain and cargo-fuzz, which CI does
//! not install, so the inputs it found (hostile span files) are held here
//! to what the target asserts.

use std::path::Path;

use evalbench_bundle::spans::{fast_path_agrees, placed_fields_agree, read_spans_from_bytes};

#[test]
fn every_stored_span_lines_input_still_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/span_lines");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        for line in data.split(|&b| b == b'\n') {
            assert!(fast_path_agrees(line), "{}: fast and serde readers disagree on {:?}", path.display(), String::from_utf8_lossy(line));
        }
        for buffer in [3, 4096] {
            assert!(placed_fields_agree(&data, buffer), "{}: fields left in the file are not where read (buffer {buffer})", path.display());
        }
        if let Ok(file) = read_spans_from_bytes(&data, "fuzz.1.jsonl") {
            let _ = evalbench_analyze::align_pass(&file.streams);
            let _ = evalbench_analyze::span_stats(&file.streams);
            for s in &file.streams {
                let _ = evalbench_analyze::assign_tracks(s);
            }
        }
        inputs += 1;
    }
    assert!(inputs > 1000, "{inputs} inputs in {}", dir.display());
}
