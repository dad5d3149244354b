//! "Did you mean": for a pass, span or step a person typed that a bundle
//! lacks, the nearest names it has. `whatif --pass cold` answered with a
//! list of 66 pass names; a pass's 32 runs are one name here, shown once.

use crate::layout;

/// Up to three of `names` nearest to `typed`: those it begins or that
/// contain it first, then by Jaro-Winkler similarity (at least 0.75).
pub fn nearest<'a>(typed: &str, names: &[&'a str]) -> Vec<&'a str> {
    let t = typed.to_lowercase();
    let mut scored: Vec<(f64, &'a str)> = names
        .iter()
        .map(|n| {
            let l = n.to_lowercase();
            let contained = !t.is_empty() && (l.contains(&t) || t.contains(&l));
            // A step is "process name": its name alone is what is often typed.
            let name = l.split_once(' ').map_or(l.as_str(), |(_, n)| n);
            (if contained { 2.0 } else { strsim::jaro_winkler(&t, &l).max(strsim::jaro_winkler(&t, name)) }, *n)
        })
        .filter(|(s, _)| *s >= 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// What to say after "no pass X": the nearest passes, and the bundle's
/// passes with each pass's runs named once (`cold-clean.2 … cold-clean.32`).
pub fn pass_hint(typed: &str, passes: &[&str]) -> String {
    let bases = layout::runs_per_pass(passes.iter().copied());
    let listing: Vec<String> = bases
        .iter()
        .map(|(b, n)| if *n > 1 { format!("{b} ({n} runs: {b}, {b}.2 … {b}.{n})") } else { b.to_string() })
        .collect();
    let names: Vec<&str> = bases.iter().map(|(b, _)| *b).collect();
    match nearest(layout::base_name(typed), &names).as_slice() {
        [] => format!("its passes: {}", listing.join(", ")),
        near => format!("did you mean {}? Its passes: {}", near.join(" or "), listing.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_suggested_once_with_its_runs() {
        let mut passes = vec!["cold-instrumented", "warm-instrumented"];
        let runs: Vec<String> = (1..=32)
            .flat_map(|k| ["cold-clean", "warm-clean"].map(|b| if k == 1 { b.to_string() } else { format!("{b}.{k}") }))
            .collect();
        passes.extend(runs.iter().map(String::as_str));
        let hint = pass_hint("cold", &passes);
        assert!(hint.starts_with("did you mean cold-clean or cold-instrumented?"), "{hint}");
        assert!(hint.contains("cold-clean (32 runs: cold-clean, cold-clean.2 … cold-clean.32)"), "{hint}");
        assert!(hint.len() < 300, "{} bytes: {hint}", hint.len());
        assert!(pass_hint("cold-claen", &passes).starts_with("did you mean cold-clean"), "a typo");
        assert!(pass_hint("zzz", &passes).starts_with("its passes:"), "nothing near");
    }

    #[test]
    fn a_span_typed_wrong_finds_its_name() {
        let names = ["server record_one", "server commit_one", "eval resolve", "postgres INSERT INTO build"];
        assert_eq!(nearest("record", &names), ["server record_one"]);
        assert_eq!(nearest("resolv", &names)[0], "eval resolve");
        assert_eq!(nearest("recrd_one", &names)[0], "server record_one", "a typo in the name alone");
        assert!(nearest("qqqqqq", &names).is_empty());
    }
}
