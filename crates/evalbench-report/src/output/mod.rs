//! What commands print for people, one file per command (as hyperfine keeps
//! its `output/`): plain text for a terminal, and GitHub-flavoured Markdown
//! for a pull request comment or `$GITHUB_STEP_SUMMARY`. Formatting only:
//! the values come computed from `evalbench-analyze` and `evalbench-history`.

pub mod bench;
pub mod bisect;
pub mod compare;
pub mod compare_json;
pub mod decode;
pub mod history;
pub mod instructions;
pub mod markdown;
pub mod path;
pub mod plans;
pub mod warnings;
pub mod worded;

use std::collections::BTreeMap;

/// How a table column's cells line up: numbers to the right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// `1 run`, `2 runs`: a count with its noun, singular where it is one.
pub fn count(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// A change as "+12.3%", or "–" where there is none (a counter from 0).
pub fn signed_pct(p: f64) -> String {
    if p.is_finite() {
        format!("{p:+.1}%")
    } else {
        "–".into()
    }
}

/// `--pg-setting`s as one phrase, `NAME=VALUE` joined by `sep`, or "defaults".
pub fn pg_settings(s: &BTreeMap<String, String>, sep: &str) -> String {
    if s.is_empty() {
        "defaults".into()
    } else {
        s.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(sep)
    }
}
