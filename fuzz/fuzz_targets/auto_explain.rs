//! Any bytes as a PostgreSQL log with auto_explain plans (read from memory).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = evalbench_decode::explain::decode_from(data, "fuzz", &mut |_| {});
});
