//! What the eval subprocess tells its worker on stdout: one JSON line per
//! message, one type for both ends (written by [`super::eval`], read by the
//! worker), so neither dispatches on key names the other may not write.

use serde::{Deserialize, Serialize};

/// One line from the eval subprocess.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalLine {
    /// A derivation the evaluation resolved.
    Drv(String),
    /// The evaluation failed; `attr` names the attribute when one is to blame.
    Error { message: String, attr: Option<String> },
    /// The evaluation ended well: what it did, for the evaluation's metric.
    Done(Done),
}

/// The eval subprocess's own figures, sent on to the server as part of the
/// evaluation's metric (the worker adds its own phases beside them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Done {
    pub attrs: usize,
    pub eval_peak_rss_kb: i64,
    pub evaluator_peak_rss_kb: Vec<i64>,
    pub eval_cache_entries: usize,
    /// Evaluators that ran (one shard each).
    pub eval_workers: usize,
    /// Of the attributes' drvPaths, how many this evaluation wrote to the
    /// store (new to it): the rest were there from an earlier evaluation.
    #[serde(default)]
    pub drvs_written: usize,
    /// nix's exact counts, summed over the evaluators' statistics, under
    /// Gradient's `evaluation_metric` columns (`fn_calls`, `total_thunks`,
    /// ...: `contract::EVALUATION_METRIC_COUNTS`), as Gradient's worker
    /// reports them; empty when no nix ran (the eval cache answered).
    #[serde(default)]
    pub counts: std::collections::BTreeMap<String, i64>,
}

impl EvalLine {
    /// Writes the line to stdout and flushes it: the worker reads as the
    /// evaluation goes.
    pub fn emit(&self) {
        use std::io::Write;
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{}", serde_json::to_string(self).expect("an eval line serializes"));
        let _ = o.flush();
    }

    /// Reads one line; what is not an eval line (a stray print) is an
    /// error, and the caller says so with the line's text.
    pub fn parse(line: &str) -> Result<EvalLine, serde_json::Error> {
        serde_json::from_str(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_reads_back_as_written() {
        let lines = [
            EvalLine::Drv("/nix/store/x-hello.drv".into()),
            EvalLine::Error { message: "stack overflow".into(), attr: Some("packages.x86_64-linux.default".into()) },
            EvalLine::Error { message: "no flake.nix".into(), attr: None },
            EvalLine::Done(Done {
                attrs: 3,
                eval_peak_rss_kb: 10,
                evaluator_peak_rss_kb: vec![7, 8],
                eval_cache_entries: 1,
                eval_workers: 2,
                drvs_written: 2,
                counts: [("fn_calls".to_string(), 4_511), ("total_thunks".to_string(), 9_000)].into(),
            }),
        ];
        for l in lines {
            let text = serde_json::to_string(&l).unwrap();
            assert!(!text.contains('\n'));
            assert_eq!(EvalLine::parse(&text).unwrap(), l, "{text}");
        }
        // What nix or a library might print by mistake is not taken for a line.
        assert!(EvalLine::parse("warning: Git tree is dirty").is_err());
        assert!(EvalLine::parse("{\"drv\": 3}").is_err());
    }
}
