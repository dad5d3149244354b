//! Numbers as the bundle's files write them: each at its unit's precision
//! (µs as integers, ms to 3 decimals, s to 6), so a script reads `249.57`
//! and not `249.57000000000016`, and two runs over the same input write the
//! same text.

/// `x` rounded to `decimals` places (half away from zero).
pub fn round_to(x: f64, decimals: i32) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let f = 10f64.powi(decimals);
    let r = (x * f).round() / f;
    // -0.0 prints as "-0.0": a sign that says nothing.
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// Seconds, to the microsecond.
pub fn s(x: f64) -> f64 {
    round_to(x, 6)
}

/// Milliseconds, to the microsecond.
pub fn ms(x: f64) -> f64 {
    round_to(x, 3)
}

/// Decimals for a unit's name as the verdicts and summaries spell them.
pub fn decimals(unit: &str) -> i32 {
    match unit {
        "s" => 6,
        "ms" | "%" | "MiB" => 3,
        "us" | "µs" | "bytes" | "B" => 0,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_at_the_unit() {
        assert_eq!(super::ms(249.57000000000016).to_string(), "249.57");
        assert_eq!(super::s(0.1 + 0.2).to_string(), "0.3");
        assert_eq!(super::round_to(-0.0000001, 3).to_string(), "0");
        assert!(super::s(f64::NAN).is_nan());
    }
}
