//! A deploy gate that names every failure and measures every step (the refuted claim of the benchmark's contract: a
//! gate that stops at
//! the first failure and says nothing of where its time went):
//! each machine toplevel and each check is its own process, so one broken
//! machine hides nothing; up to K steps run at once, never more than the
//! memory budget holds by each step's peak on the previous run; the eval
//! cache is used unless turned off, and said so; every step's wall, user and
//! sys time, peak memory and exit status are written as spans in a bundle.

//!
//! `discover` finds the steps, `cache` asks nix's eval cache whether a step
//! will be answered from it, `schedule` runs the steps under the memory
//! budget, `bundle` writes their spans.

mod bundle;
mod cache;
mod discover;
mod schedule;
mod self_test;

pub use bundle::write_bundle;
pub use cache::cache_holds;
pub use discover::discover;
pub use schedule::run;
pub use self_test::{self_test_passed, SELF_TEST_FLAKE, SELF_TEST_MACHINES};

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cmdbench::Run;

pub const SYSTEM: &str = "x86_64-linux";
/// Assumed peak of a step never measured before: conservative.
pub const DEFAULT_STEP_PEAK: u64 = 1 << 30;

#[derive(Debug, Clone)]
pub struct GateOpts {
    pub flake: PathBuf,
    /// Attribute set of machines (each `<attr>.<m>.drvPath`), when the flake has no nixosConfigurations.
    pub machines: Option<String>,
    pub checks: Option<String>,
    pub jobs: usize,
    pub mem_budget: u64,
    pub eval_cache: bool,
    pub out: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub name: String,
    pub kind: &'static str,
    pub argv: Vec<String>,
    /// The attribute path whose `drvPath` nix's eval cache may hold.
    pub attr_path: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub step: Step,
    pub run: Run,
    pub ok: bool,
    /// The last lines of the step's stderr when it failed.
    pub error: Option<String>,
    pub expected_peak: u64,
    pub start_us: i64,
    /// "hit" (the eval cache held the step's drvPath when it started), "miss", or "off".
    pub eval_cache: &'static str,
    /// nix's statistics of the step as nix wrote them (NIX_SHOW_STATS), when it wrote them.
    #[serde(skip)]
    pub nix_stats_file: Option<PathBuf>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct State {
    /// Step name to its peak memory on the last run, bytes.
    pub(super) peaks: HashMap<String, u64>,
}

pub(super) fn nix_config(eval_cache: bool) -> String {
    format!(
        "experimental-features = nix-command flakes\nsubstituters =\nbuild-users-group =\nsandbox = false\neval-cache \
            = {}\n",
        if eval_cache { "true" } else { "false" }
    )
}

pub(super) fn safe(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}
