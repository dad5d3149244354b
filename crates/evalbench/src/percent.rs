//! Percentages as people type them: `5` and `5%` alike, in every option
//! that takes one. whatif's `--faster NAME=50%` took the sign while
//! `--fail-on-regression 5%` refused it; now both forms work everywhere.
//! And amounts (`--min-abs-us`): finite, 0 or more.

/// A percentage of 0 or more, with or without a trailing `%`.
pub fn parse(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 =
        n.parse().map_err(|_| format!("{s:?}: expected a percentage, a number with or without %, e.g. 5 or 5%"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?}: expected a percentage of 0 or more"));
    }
    Ok(v)
}

/// An amount of 0 or more (µs, a count), finite: a threshold typed as
/// `-1`, `nan` or `inf` is refused, never taken to mean "always" or "never".
pub fn amount(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?}: expected a number of 0 or more"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?}: expected a finite number of 0 or more"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn amounts_are_finite_and_not_negative() {
        assert_eq!(super::amount("50"), Ok(50.0));
        assert_eq!(super::amount("0"), Ok(0.0));
        for bad in ["", "-1", "nan", "inf", "-inf", "5%"] {
            assert!(super::amount(bad).is_err(), "{bad:?}");
        }
    }

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
