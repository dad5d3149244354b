//! What the commands without a home of their own print (bench, decode,
//! whatif's path, warnings), and the helpers every text and Markdown writer
//! shares (counts, alignment, GitHub-flavoured tables: `markdown`; the JSON
//! words scripts read: `worded`). Formatting only: the values come computed
//! from `evalbench-analyze` and `evalbench-history`.

pub mod bench;
pub mod decode;
pub mod markdown;
pub mod path;
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
