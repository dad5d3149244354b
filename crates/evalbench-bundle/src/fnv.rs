//! FNV-1a: 64-bit as the hasher of maps keyed by span names and ids, 32-bit
//! as a stable hash of short strings (a chart colour per name).

/// FNV-1a as a map's hasher: span names are short and trusted to be few; SipHash's DoS
/// resistance costs more than it buys here.
#[derive(Default, Clone, Copy)]
pub struct Fnv;

pub struct FnvHasher(u64);

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x100000001b3);
        }
    }
}

impl std::hash::BuildHasher for Fnv {
    type Hasher = FnvHasher;
    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xcbf29ce484222325)
    }
}

/// The 32-bit FNV-1a hash of `bytes`: the same on every run and machine
/// (the report's colour of a name).
pub fn hash32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2166136261u32, |h, b| (h ^ *b as u32).wrapping_mul(16777619))
}

/// The 64-bit FNV-1a hash of `bytes`: the same on every run and machine
/// (a plan's fingerprint, written into JSON and compared across bundles).
pub fn hash64(bytes: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = Fnv.build_hasher();
    h.write(bytes);
    h.finish()
}
