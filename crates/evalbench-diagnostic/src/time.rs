//! Gradient's timestamps: PostgreSQL's text of a `timestamp without time
//! zone` (`2026-12-01 10:15:30.123456`), which Gradient stores in UTC. Read
//! as UTC, to Unix microseconds; a text with an offset is read with it.

/// Unix microseconds of a PostgreSQL timestamp text; None when it is not one.
pub fn parse_us(text: &str) -> Option<i64> {
    let t = text.trim();
    // jiff reads a civil time past an offset; only a text without one is civil.
    let has_offset = t.get(10..).is_some_and(|time| time.contains(['+', '-', 'Z', 'z']));
    if has_offset {
        // `+00`, as PostgreSQL writes an offset of whole hours, is not RFC 3339's `+00:00`.
        let with_minutes = match t.rfind(['+', '-']) {
            Some(i) if i > 10 && t.len() - i == 3 => format!("{t}:00"),
            _ => t.to_string(),
        };
        return with_minutes.parse::<jiff::Timestamp>().ok().map(|ts| ts.as_microsecond());
    }
    if let Ok(civil) = t.parse::<jiff::civil::DateTime>() {
        let ts = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
        return Some(ts.as_microsecond());
    }
    None
}

/// The text of Unix microseconds as PostgreSQL writes a timestamp without
/// time zone (UTC), for the lab's reports.
pub fn format_us(us: i64) -> String {
    match jiff::Timestamp::from_microsecond(us) {
        Ok(ts) => ts.to_zoned(jiff::tz::TimeZone::UTC).datetime().strftime("%Y-%m-%d %H:%M:%S%.f").to_string(),
        Err(_) => us.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_texts_read_as_utc() {
        assert_eq!(parse_us("1970-01-01 00:00:01"), Some(1_000_000));
        assert_eq!(parse_us("1970-01-01 00:00:01.5"), Some(1_500_000));
        assert_eq!(parse_us("2026-12-01 10:15:30.123456"), Some(1_796_120_130_123_456));
        assert_eq!(parse_us("1970-01-01 01:00:00+01"), Some(0));
        assert_eq!(parse_us("yesterday"), None);
        assert_eq!(parse_us(""), None);
        assert_eq!(parse_us(&format_us(1_796_120_130_123_456)), Some(1_796_120_130_123_456));
    }
}
