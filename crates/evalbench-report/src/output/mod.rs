//! What commands print for people, one file per command (as hyperfine keeps
//! its `output/`): plain text for a terminal, and GitHub-flavoured Markdown
//! for a pull request comment or `$GITHUB_STEP_SUMMARY`. Formatting only:
//! the values come computed from `evalbench-analyze` and `evalbench-history`.

pub mod bench;
pub mod compare;
pub mod decode;
pub mod history;
pub mod markdown;
pub mod plans;
