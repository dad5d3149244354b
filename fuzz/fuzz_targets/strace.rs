//! Any bytes as an strace output file (read from memory: no file per run).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = evalbench_decode::strace::decode_from(data, 42, "fuzz");
});
