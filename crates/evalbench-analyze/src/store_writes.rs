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
//! of a pass differ, and `compare` says when its two sides do (each
//! finding carries its sentence: its `Display`).

/// The lab's count of `.drv` files a run's evaluation wrote (its
/// `evaluation_metric`); None where the bundle does not say (another
/// target, an older lab).
pub fn drvs_written(metric: Option<&serde_json::Value>) -> Option<i64> {
    metric?.get("drvs_written")?.as_i64()
}

/// Runs of one pass that wrote different numbers of `.drv` files: the
/// count most runs share (the smallest on a tie), and the runs apart from
/// it with theirs (its `Display` is the summary's sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunsApart {
    pub runs: usize,
    pub usual: i64,
    pub apart: Vec<(String, i64)>,
}

/// The runs of one pass, (run, count) pairs, that wrote a different number
/// of `.drv` files than most. None when they agree or any does not say.
pub fn runs_apart(runs: &[(&str, Option<i64>)]) -> Option<RunsApart> {
    let counts: Vec<i64> = runs.iter().map(|r| r.1).collect::<Option<_>>()?;
    let first = *counts.first()?;
    if counts.iter().all(|&c| c == first) {
        return None;
    }
    let mut most = counts.clone();
    most.sort_unstable();
    let usual = most.chunk_by(|a, b| a == b).max_by_key(|c| (c.len(), std::cmp::Reverse(c[0])))?[0];
    let apart = runs.iter().zip(&counts).filter(|(_, &c)| c != usual).map(|(r, &c)| (r.0.to_string(), c)).collect();
    Some(RunsApart { runs: runs.len(), usual, apart })
}

/// The two sides of a comparison, each its runs' counts, when they did not
/// all write alike: part of a difference in time is then the store's, not
/// the change's (its `Display` is compare's sentence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidesApart {
    pub a: Vec<i64>,
    pub b: Vec<i64>,
}

impl std::fmt::Display for RunsApart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let apart: Vec<String> = self.apart.iter().map(|(run, c)| format!("{run} {c}")).collect();
        write!(
            f,
            ".drv files written to the nix store differ: {} of {} runs wrote {}, but {}. A flake's first evaluation \
                writes its derivations and later ones find them, so these runs are not alike: their spread mixes both",
            self.runs - self.apart.len(),
            self.runs,
            self.usual,
            listed(&apart, 5)
        )
    }
}

impl std::fmt::Display for SidesApart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[i64]| listed(&v.iter().map(i64::to_string).collect::<Vec<_>>(), 8);
        write!(
            f,
            ".drv files written to the nix store differ: A's runs wrote {}, B's {}. A flake's first evaluation writes \
                its derivations and later ones find them, so part of a difference in time is the store's, not the \
                change's",
            list(&self.a),
            list(&self.b)
        )
    }
}

/// The first `k` of `items`, comma-separated, and how many more there are.
fn listed(items: &[String], k: usize) -> String {
    let shown = items[..items.len().min(k)].join(", ");
    match items.len().saturating_sub(k) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// None when every run wrote the same or any does not say.
pub fn sides_apart(a: &[Option<i64>], b: &[Option<i64>]) -> Option<SidesApart> {
    let (a, b): (Vec<i64>, Vec<i64>) =
        (a.iter().copied().collect::<Option<_>>()?, b.iter().copied().collect::<Option<_>>()?);
    let first = *a.first().or(b.first())?;
    if a.iter().chain(&b).all(|&c| c == first) {
        return None;
    }
    Some(SidesApart { a, b })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_that_wrote_differently_are_found() {
        assert_eq!(sides_apart(&[Some(0), Some(0)], &[Some(0)]), None);
        assert_eq!(sides_apart(&[Some(0)], &[None]), None, "a side that does not say");
        let n = sides_apart(&[Some(0); 3], &[Some(2000), Some(0), Some(0)]).unwrap();
        assert_eq!(n, SidesApart { a: vec![0, 0, 0], b: vec![2000, 0, 0] });
        // A side whose runs differ among themselves counts too.
        assert!(sides_apart(&[Some(5), Some(0)], &[Some(5), Some(0)]).is_some());
    }

    #[test]
    fn runs_that_wrote_differently_are_named() {
        let mut runs: Vec<(String, Option<i64>)> = (2..=32).map(|k| (format!("cold-clean.{k}"), Some(0))).collect();
        runs.insert(0, ("cold-clean".into(), Some(5000)));
        let pairs: Vec<(&str, Option<i64>)> = runs.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        assert_eq!(
            runs_apart(&pairs),
            Some(RunsApart { runs: 32, usual: 0, apart: vec![("cold-clean".into(), 5000)] })
        );
        // Alike, or one run silent: nothing to say.
        assert_eq!(runs_apart(&[("a", Some(3)), ("a.2", Some(3))]), None);
        assert_eq!(runs_apart(&[("a", Some(3)), ("a.2", None)]), None);
        // The usual count is the most common one.
        let many: Vec<(String, Option<i64>)> =
            (1..=10).map(|k| (format!("p.{k}"), Some(if k <= 7 { k } else { 0 }))).collect();
        let pairs: Vec<(&str, Option<i64>)> = many.iter().map(|(p, c)| (p.as_str(), *c)).collect();
        let r = runs_apart(&pairs).unwrap();
        assert_eq!((r.usual, r.apart.len(), r.apart[0].clone()), (0, 7, ("p.1".to_string(), 1)));
    }
}
