//! Any bytes as a capture file through both stream decoders: an error or a
//! result, never a panic, never an allocation sized by a length field.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.pcap");
    std::fs::write(&f, data).unwrap();
    let _ = evalbench_decode::pg::decode_file(&f, None, &mut |_| {});
    let _ = evalbench_decode::ws::decode_file(&f, Some(8080), &mut |_| {});
});
