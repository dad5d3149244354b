//! Why two bundles cannot be compared: each reason a variant, its message
//! what a person reads and what to do instead.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(
        "refusing to compare {a} with {b}: one is cold (empty eval cache) and the other warm; a warm run's speed is \
            the cache's, not the change's"
    )]
    ColdAgainstWarm { a: String, b: String },
    #[error(
        "refusing to compare {a} with {b}: an instrumented pass's timings are distorted by perf, strace and \
            auto_explain"
    )]
    InstrumentedAgainstClean { a: String, b: String },
    #[error("{} and {} have no pass in common", .a.display(), .b.display())]
    NoPassInCommon { a: PathBuf, b: PathBuf },
    /// A pass asked for that a bundle lacks: per bundle, which and the nearest it has.
    #[error("{}", .0.join("\n"))]
    NoSuchPass(Vec<String>),
    /// A run asked for (`--pass-a cold-clean.7`) that a side lacks: each side's.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    NoSuchRun(Vec<crate::runs::NoSuchRun>),
}
