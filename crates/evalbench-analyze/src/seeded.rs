//! A small seeded generator for tests built by construction: no
//! dependency for a test's randomness, the same rows on every run.

/// xorshift64.
pub(crate) struct Seeded(pub u64);

impl Seeded {
    /// A number in 0..n.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
