//! Any bytes as a PostgreSQL log with auto_explain plans.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("postgres.log");
    std::fs::write(&f, data).unwrap();
    let _ = evalbench_decode::explain::decode(&f, &mut |_| {});
});
