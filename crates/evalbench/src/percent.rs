//! Percentages as people type them: `5` and `5%` alike, in every option
//! that takes one. whatif's `--faster NAME=50%` took the sign while
//! `--fail-on-regression 5%` refused it; now both forms work everywhere.

/// A percentage of 0 or more, with or without a trailing `%`.
pub fn parse(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 = n.parse().map_err(|_| format!("{s:?}: expected a percentage, a number with or without %, e.g. 5 or 5%"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?}: expected a percentage of 0 or more"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn with_or_without_the_sign() {
        assert_eq!(parse("5"), Ok(5.0));
        assert_eq!(parse("5%"), Ok(5.0));
        assert_eq!(parse(" 2.5 % "), Ok(2.5));
        for bad in ["", "%", "five", "-3", "5%%", "nan", "inf"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
