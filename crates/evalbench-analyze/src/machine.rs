//! What the machine did beside a side's runs (run.json's `machine`, read
//! off /proc by the runner), summed up per pass: which runs were busy, and
//! whether a side was busy enough that its times say more about the
//! machine than about the change. A time verdict is withheld for such a
//! side; exact counters are still judged (docs/decisions.md, "Verdicts").

use evalbench_bundle::MachineState;
use serde::Serialize;

use crate::spread::median;

/// A run is busy when other processes used at least this many cores during
/// its window. Measured here (docs/verdicts.md): 272 clean
/// runs of the lab with nothing else running read a median of 0.07 cores of
/// other processes' CPU, 0.23 at the 95th percentile and 0.59 at most (a
/// tick is 0.05 cores of a 0.2 s window); 118 runs beside two busy loops
/// read 0.98 to 1.54.
pub const BUSY_CORES: f64 = 0.5;

/// A side is busy, and its times are not judged, when at least this share
/// of its runs were busy. Fewer move a median by little: 3 slow runs of 32
/// put it at the 57th percentile of the other 29, about 1.5% at the lab's
/// run-to-run noise (σ of ln 0.09), a tenth of the change the default
/// run count is sized for.
pub const BUSY_SHARE: f64 = 0.125;

/// One side's runs of a pass, seen from the machine.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SideMachine {
    pub runs: usize,
    /// Runs whose run.json records the machine.
    pub recorded: usize,
    /// Median over the recorded runs, cores.
    pub other_cores_median: f64,
    pub other_cores_max: f64,
    pub steal_cores_max: f64,
    /// Runs (1 = the first) at or past [`BUSY_CORES`].
    pub busy_runs: Vec<usize>,
    /// Median of the busy runs' other-process CPU, cores.
    pub busy_cores_median: f64,
}

impl SideMachine {
    /// From each run's state, in run order (None: not recorded).
    pub fn of(states: &[Option<MachineState>]) -> Option<SideMachine> {
        let rec: Vec<(usize, &MachineState)> =
            states.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (i + 1, s))).collect();
        if rec.is_empty() {
            return None;
        }
        let other: Vec<f64> = rec.iter().map(|(_, s)| s.other_cores).collect();
        let busy: Vec<(usize, f64)> =
            rec.iter().filter(|(_, s)| s.other_cores >= BUSY_CORES).map(|(i, s)| (*i, s.other_cores)).collect();
        Some(SideMachine {
            runs: states.len(),
            recorded: rec.len(),
            other_cores_median: median(&other),
            other_cores_max: other.iter().copied().fold(0.0, f64::max),
            steal_cores_max: rec.iter().map(|(_, s)| s.steal_cores).fold(0.0, f64::max),
            busy_cores_median: if busy.is_empty() {
                0.0
            } else {
                median(&busy.iter().map(|b| b.1).collect::<Vec<_>>())
            },
            busy_runs: busy.into_iter().map(|b| b.0).collect(),
        })
    }

    /// Whether so many runs were busy that the side's times are not judged.
    pub fn busy(&self) -> bool {
        !self.busy_runs.is_empty() && self.busy_runs.len() as f64 >= BUSY_SHARE * self.recorded as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(other: f64) -> Option<MachineState> {
        Some(MachineState { other_cores: other, window_s: 0.5, ..MachineState::default() })
    }

    #[test]
    fn busy_runs_are_named_and_a_side_busy_by_its_share() {
        let mut runs: Vec<Option<MachineState>> = (0..32).map(|_| state(0.02)).collect();
        assert!(!SideMachine::of(&runs).unwrap().busy());
        assert!(SideMachine::of(&runs).unwrap().busy_runs.is_empty());
        runs[2] = state(0.9);
        let m = SideMachine::of(&runs).unwrap();
        assert!(!m.busy(), "one busy run of 32 moves no median far");
        for r in runs.iter_mut().skip(16) {
            *r = state(0.9);
        }
        let m = SideMachine::of(&runs).unwrap();
        assert!(m.busy());
        assert_eq!((m.busy_runs.len(), m.busy_cores_median), (17, 0.9));
        assert_eq!(m.busy_runs, std::iter::once(3).chain(17..=32).collect::<Vec<_>>());
        assert_eq!(SideMachine::of(&[None, None]), None, "bundles from before the record say nothing");
    }
}
