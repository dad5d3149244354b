//! Any bytes as the tar inside a bundle archive (gzipped here, so the
//! fuzzer explores tar headers, not gzip checksums): an error or a tree
//! inside the destination, never a panic, never a file outside it.

/// The target's check on one input: returns, or panics on a finding.
pub fn check(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("in.tar.gz");
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    std::fs::write(&archive, gz.finish().unwrap()).unwrap();
    let dest = dir.path().join("out");
    std::fs::create_dir(&dest).unwrap();
    let limits = evalbench_bundle::Limits { max_unpacked_bytes: 1 << 20, max_entries: 1000 };
    let _ = evalbench_bundle::unpack(&archive, &dest, limits);
    // Nothing may appear beside `out` but the archive itself.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(names.len() == 2, "something was written outside the destination: {names:?}");
}
