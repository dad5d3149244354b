//! Any bytes as an strace output file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("worker.42");
    std::fs::write(&f, data).unwrap();
    let _ = evalbench_decode::strace::decode(&f);
});
