//! Any text as SQL through the normalizer (statements from captures and
//! logs of other machines): never a panic, and normalizing is idempotent.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(sql) = std::str::from_utf8(data) {
        let once = evalbench_decode::normalize::normalize_sql(sql);
        let _ = evalbench_decode::normalize::normalize_sql(&once);
    }
});
