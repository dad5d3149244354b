//! What `compare` is asked (which passes) and the rules it judges by (the
//! floors of "negligible", the allowance between sessions), with the
//! defaults `compare` without flags and `run --baseline` use.

/// What to compare, and the floors under which a change is negligible.
#[derive(Debug, Clone)]
pub struct Opts {
    /// This pass of A (with its repeats) against `pass_b` of B; else every pass both have.
    pub pass_a: Option<String>,
    pub pass_b: Option<String>,
    pub min_change: f64,
    pub min_abs_us: f64,
    /// For A and B from two sessions: a time change no larger than this
    /// percentage is inside the drift between sessions (None: not applied).
    /// Bundles of one interleaved run are judged without it.
    pub between_sessions_pct: Option<f64>,
}

impl Default for Opts {
    /// Every pass both have, with the rules' floors and the allowance
    /// between sessions: `compare` without flags, and `run --baseline`.
    fn default() -> Opts {
        Opts {
            pass_a: None,
            pass_b: None,
            min_change: crate::verdict::MIN_CHANGE_PCT,
            min_abs_us: crate::verdict::MIN_ABS_US,
            between_sessions_pct: Some(BETWEEN_SESSIONS_PCT),
        }
    }
}

/// How far the medians of one flake's clean passes lay apart between two
/// sessions on the 2-core machine this was measured on: 17.4% among five
/// sessions in a row, 18.5% in ten pairs of sessions (docs/sessions.md).
pub const BETWEEN_SESSIONS_PCT: f64 = 20.0;
