//! How a verdict's figures are written: a change in percent, a number at
//! its precision, with its unit, run numbers as ranges; in the verdicts' sentences (`words`) and
//! in compare's tables alike.

/// A change in percent for people: `+12.3%`, or how it changed where A is 0.
pub fn pct(change: f64, a: f64, b: f64) -> String {
    if a.is_nan() || b.is_nan() {
        "no figure on one side".into()
    } else if change.is_finite() {
        format!("{change:+.1}%")
    } else if a == b {
        "+0.0%".into()
    } else {
        format!("from {} to {}", fmt(a), fmt(b))
    }
}

/// A number and its unit; a family without a unit (nix's counters) gets no
/// stray space.
pub fn with_unit(x: f64, unit: &str) -> String {
    if unit.is_empty() {
        fmt(x)
    } else {
        format!("{} {unit}", fmt(x))
    }
}

/// A verdict's figure: whole from 100 up, else to three places.
pub fn fmt(x: f64) -> String {
    if x.is_nan() {
        "unknown".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// Thousands separated, for counts people read.
pub fn grouped(v: f64) -> String {
    if v.fract() != 0.0 || v.abs() >= 1e18 {
        // Times (cpuTime): to the microsecond, as nix writes them.
        let s = format!("{v:.6}");
        return s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    let s = format!("{}", v.abs() as u64);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// 1-based run numbers as ranges: "3, 17-32".
pub fn ranges(runs: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let mut j = i;
        while j + 1 < runs.len() && runs[j + 1] == runs[j] + 1 {
            j += 1;
        }
        out.push(if j == i { runs[i].to_string() } else { format!("{}-{}", runs[i], runs[j]) });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping() {
        assert_eq!(grouped(1_448_790.0), "1,448,790");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(0.5), "0.5");
        assert_eq!(grouped(0.08976200000000001), "0.089762");
        assert_eq!(grouped(-1000.0), "-1,000");
    }

    #[test]
    fn run_numbers_as_ranges() {
        assert_eq!(ranges(&[3, 17, 18, 19, 32]), "3, 17-19, 32");
        assert_eq!(ranges(&[1]), "1");
        assert_eq!(ranges(&[]), "");
    }
}
