//! Any bytes as a capture file through both stream decoders (read from
//! memory): an error or a result, never a panic, never an allocation sized
//! by a length field.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let _ = evalbench_decode::pg::decode_from(data, "fuzz", None, &mut |_| {});
    let _ = evalbench_decode::ws::decode_from(data, "fuzz", Some(8080), &mut |_| {});
}
