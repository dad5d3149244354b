//! Whether a pass's runs found the nix store alike.
//!
//! A flake's first evaluation writes every derivation's `.drv` to the
//! store; later ones find them there. At 5,000 packages that made the first
//! evaluation 4-5x slower (nix's own CPU time), and the lab's cold passes
//! keep the store (the contract resets the database and the eval cache, not
//! the store). So a run that wrote them is not like one that did not, and
//! a spread over both mixes two things, and so does a comparison of two
//! sides that wrote differently: the lab counts the `.drv` files each
//! evaluation wrote (`drvs_written`, exact), the summary says which runs
//! of a pass differ, and `compare` says when its two sides do.

/// The lab's count of `.drv` files a run's evaluation wrote (its
/// `evaluation_metric`); None where the bundle does not say (another
/// target, an older lab).
pub fn drvs_written(metric: Option<&serde_json::Value>) -> Option<i64> {
    metric?.get("drvs_written")?.as_i64()
}

/// A note when the runs of one pass, (run, count) pairs, wrote different
/// numbers of `.drv` files: which wrote how many. None when they agree or
/// any does not say.
pub fn note(runs: &[(&str, Option<i64>)]) -> Option<String> {
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
    Some(format!(
        ".drv files written to the nix store differ: {} of {} runs wrote {usual}, but {}. A flake's first evaluation writes its derivations and later ones find them, so these runs are not alike: their spread mixes both",
        runs.len() - apart.len(),
        runs.len(),
        listed(&apart, 5)
    ))
}

/// A note when the two sides of a comparison, each its runs' counts,
/// did not all write alike: part of a difference in time is then the
/// store's, not the change's. None when every run wrote the same or any
/// does not say.
pub fn between(a: &[Option<i64>], b: &[Option<i64>]) -> Option<String> {
    let (a, b): (Vec<i64>, Vec<i64>) = (a.iter().copied().collect::<Option<_>>()?, b.iter().copied().collect::<Option<_>>()?);
    let first = *a.first().or(b.first())?;
    if a.iter().chain(&b).all(|&c| c == first) {
        return None;
    }
    let list = |v: &[i64]| listed(&v.iter().map(i64::to_string).collect::<Vec<_>>(), 8);
    Some(format!(
        ".drv files written to the nix store differ: A's runs wrote {}, B's {}. A flake's first evaluation writes its derivations and later ones find them, so part of a difference in time is the store's, not the change's",
        list(&a),
        list(&b)
    ))
}

/// The first `k` of `items`, comma-separated, and how many more there are.
fn listed(items: &[String], k: usize) -> String {
    let shown = items[..items.len().min(k)].join(", ");
    match items.len().saturating_sub(k) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::{between, note as note_of};

    #[test]
    fn sides_that_wrote_differently_are_said() {
        assert_eq!(between(&[Some(0), Some(0)], &[Some(0)]), None);
        assert_eq!(between(&[Some(0)], &[None]), None, "a side that does not say");
        let n = between(&[Some(0); 3], &[Some(2000), Some(0), Some(0)]).unwrap();
        assert!(n.contains("A's runs wrote 0, 0, 0, B's 2000, 0, 0."), "{n}");
        // A side whose runs differ among themselves is said too.
        assert!(between(&[Some(5), Some(0)], &[Some(5), Some(0)]).is_some());
        let many = between(&[Some(1); 10], &[Some(0)]).unwrap();
        assert!(many.contains("1, 1, 1, 1, 1, 1, 1, 1 and 2 more, B's 0."), "{many}");
    }

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
