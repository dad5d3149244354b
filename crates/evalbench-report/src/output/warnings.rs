//! Warnings as a command prints them first: one line for a problem, however
//! many runs of a pass have it. A 32-run pass whose every run has the same
//! malformed span line said it 32 times; now the first is said whole and
//! the rest are counted and named by run (`--json` keeps every one).

use evalbench_bundle::layout;

/// The run a warning is about and the warning with that run taken out:
/// `B/cold-clean.7/trace/eval-81.jsonl:3: not a JSON object` is run
/// `cold-clean.7` and `B/cold-clean/trace/eval-*.jsonl:3: not a JSON object`.
fn run_and_shape(w: &str) -> Option<(String, String)> {
    let (path, rest) = w.split_once(": ")?;
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts.iter().position(|p| layout::base_name(p) != *p || layout::PASSES.contains(p))?;
    let run = parts[at].to_string();
    let mut shaped: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    shaped[at] = layout::base_name(&run).to_string();
    // A span file's pid differs from run to run: `eval-81.jsonl` is `eval-*.jsonl`.
    if let Some(last) = shaped.last_mut() {
        if let Some((process, tail)) = last.split_once('-') {
            if let Some((pid, ext)) = tail.split_once('.') {
                if !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()) {
                    *last = format!("{process}-*.{ext}");
                }
            }
        }
    }
    Some((run, format!("{}: {rest}", shaped.join("/"))))
}

/// The lines to print: each problem once, the first run's warning whole,
/// then `(the same in N more runs: cold-clean.2, ...)` where others had it.
pub fn grouped(warnings: &[String]) -> Vec<String> {
    let mut groups: Vec<(String, &str, Vec<String>)> = Vec::new();
    for w in warnings {
        match run_and_shape(w) {
            Some((run, shape)) => match groups.iter_mut().find(|(s, _, _)| *s == shape) {
                Some((_, _, runs)) => runs.push(run),
                None => groups.push((shape, w, Vec::new())),
            },
            None => groups.push((w.clone(), w, Vec::new())),
        }
    }
    groups
        .into_iter()
        .map(|(_, first, more)| match more.len() {
            0 => first.to_string(),
            n => {
                let named: Vec<&str> = more.iter().take(4).map(String::as_str).collect();
                let etc = if n > 4 { ", ..." } else { "" };
                format!(
                    "{first} (the same in {n} more {}: {}{etc})",
                    if n == 1 { "run" } else { "runs" },
                    named.join(", ")
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of one pass with one problem: one line, the others counted and
    /// named; another problem, or another pass, its own line.
    #[test]
    fn one_problem_in_many_runs_is_one_line() {
        let mut w: Vec<String> = (1..=6)
            .map(|k| {
                format!(
                    "/b/cold-clean{}/trace/eval-{}.jsonl:2: not a JSON object",
                    if k == 1 { String::new() } else { format!(".{k}") },
                    100 + k
                )
            })
            .collect();
        w.push("/b/warm-clean/trace/eval-9.jsonl:2: not a JSON object".into());
        w.push("/b/cold-clean.3/run.json: unreadable".into());
        w.push("no run.json anywhere".into());
        let g = grouped(&w);
        assert_eq!(
            g,
            [
                "/b/cold-clean/trace/eval-101.jsonl:2: not a JSON object (the same in 5 more runs: cold-clean.2, \
                    cold-clean.3, cold-clean.4, cold-clean.5, ...)",
                "/b/warm-clean/trace/eval-9.jsonl:2: not a JSON object",
                "/b/cold-clean.3/run.json: unreadable",
                "no run.json anywhere",
            ]
        );
    }
}
