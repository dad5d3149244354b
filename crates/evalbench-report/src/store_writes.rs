//! Whether a pass's runs found the nix store alike.
//!
//! A flake's first evaluation writes every derivation's `.drv` to the
//! store; later ones find them there. At 5,000 packages that made the first
//! evaluation 4-5x slower (nix's own CPU time), and the lab's cold passes
//! keep the store (the contract resets the database and the eval cache, not
//! the store). So a run that wrote them is not like one that did not, and
//! a spread over both mixes two things: the lab counts the `.drv` files
//! each evaluation wrote (`drvs_written`, exact) and the summary says
//! which runs differ.

use crate::PassSummary;

/// The lab's count of `.drv` files the run's evaluation wrote; None where
/// the bundle does not say (another target, an older lab).
pub fn drvs_written(p: &PassSummary) -> Option<i64> {
    p.evaluation_metric.as_ref()?.get("drvs_written")?.as_i64()
}

/// A note when the runs of one pass wrote different numbers of `.drv`
/// files: which wrote how many. None when they agree or any does not say.
pub fn note(runs: &[&PassSummary]) -> Option<String> {
    let counted: Vec<(&str, Option<i64>)> = runs.iter().map(|r| (r.pass.as_str(), drvs_written(r))).collect();
    note_of(&counted)
}

/// [`note`] over (run, count) pairs.
fn note_of(runs: &[(&str, Option<i64>)]) -> Option<String> {
    let counts: Vec<i64> = runs.iter().map(|r| r.1).collect::<Option<_>>()?;
    let first = *counts.first()?;
    if counts.iter().all(|&c| c == first) {
        return None;
    }
    let mut most = counts.clone();
    most.sort_unstable();
    // The count most runs share (the smallest on a tie), and the runs apart from it.
    let usual = most.chunk_by(|a, b| a == b).max_by_key(|c| (c.len(), std::cmp::Reverse(c[0])))?[0];
    let apart: Vec<String> = runs.iter().zip(&counts).filter(|(_, &c)| c != usual).map(|(r, c)| format!("{} {c}", r.0)).collect();
    let shown = apart.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    let more = if apart.len() > 5 { format!(" and {} more", apart.len() - 5) } else { String::new() };
    Some(format!(
        ".drv files written to the nix store differ: {} of {} runs wrote {usual}, but {shown}{more}. A flake's first evaluation writes its derivations and later ones find them, so these runs are not alike: their spread mixes both",
        runs.len() - apart.len(),
        runs.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::note_of;

    #[test]
    fn runs_that_wrote_differently_are_named() {
        let mut runs: Vec<(String, Option<i64>)> = (2..=32).map(|k| (format!("cold-clean.{k}"), Some(0))).collect();
        runs.insert(0, ("cold-clean".into(), Some(5000)));
        let pairs: Vec<(&str, Option<i64>)> = runs.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let n = note_of(&pairs).expect("a note");
        assert!(n.contains("31 of 32 runs wrote 0, but cold-clean 5000."), "{n}");
        // Alike, or one run silent: nothing to say.
        assert_eq!(note_of(&[("a", Some(3)), ("a.2", Some(3))]), None);
        assert_eq!(note_of(&[("a", Some(3)), ("a.2", None)]), None);
        // Many apart: five named, the rest counted; the usual count is the most common.
        let many: Vec<(String, Option<i64>)> = (1..=10).map(|k| (format!("p.{k}"), Some(if k <= 7 { k } else { 0 }))).collect();
        let pairs: Vec<(&str, Option<i64>)> = many.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let n = note_of(&pairs).unwrap();
        assert!(n.contains("3 of 10 runs wrote 0, but p.1 1, p.2 2, p.3 3, p.4 4, p.5 5 and 2 more."), "{n}");
    }
}
