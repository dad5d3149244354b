//! Any bytes as a capture file through both stream decoders (read from
//! memory): an error or a result, never a panic, never an allocation sized
//! by a length field.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = evalbench_decode::pg::decode_from(data, "fuzz", None, &mut |_| {});
    let _ = evalbench_decode::ws::decode_from(data, "fuzz", Some(8080), &mut |_| {});
});
