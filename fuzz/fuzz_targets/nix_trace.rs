//! Any bytes as a saved nix function trace or a Nix flamegraph profile
//! (bundles and traces come from other machines): read as `decode
//! nix-trace` reads them, never a panic; a fold's self times never exceed
//! the traced time.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut fold = evalbench_decode::nix_trace::Fold::new();
    for (i, line) in String::from_utf8_lossy(data).lines().enumerate() {
        if i % 97 == 5 {
            fold.set_root(line);
        }
        fold.line(line);
    }
    let _ = fold.folded();
    let _ = fold.summary();
    let _ = fold.by_root();
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("trace.txt");
    std::fs::write(&f, data).unwrap();
    let _ = evalbench_decode::nix_trace::read(&f, Some(8));
});
