//! How a verdict's figures are written: a change in percent, a number at
//! its precision, with its unit. Here while analyze still makes the
//! sentence compare.json and history store (`Verdict::text`); the report's
//! words use the same (`evalbench_report::words`).

/// A change in percent for people: `+12.3%`, or how it changed where A is 0.
pub fn pct(change: f64, a: f64, b: f64) -> String {
    if change.is_finite() {
        format!("{change:+.1}%")
    } else if a == b {
        "+0.0%".into()
    } else {
        format!("from {} to {}", fmt(a), fmt(b))
    }
}

/// A number and its unit; a family without a unit (nix's counters) gets no
/// stray space. (With [`pct`] and [`fmt`], how a verdict's figures are
/// written, here while `Verdict::text` is: the report's words use them.)
pub fn with_unit(x: f64, unit: &str) -> String {
    if unit.is_empty() {
        fmt(x)
    } else {
        format!("{} {unit}", fmt(x))
    }
}

/// A verdict's figure: whole from 100 up, else to three places.
pub fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}
