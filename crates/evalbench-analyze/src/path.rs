//! The critical path of a pass (`evalbench-path`), given what it reads of
//! the pass: the spans, run.json, the directory (pg.pcap), and the clocks
//! as the alignment put them. Analysis and the report ask here with a
//! pass as loaded; the graph, the walks and what-if are the path crate's.

pub use evalbench_path::*;

use crate::{Alignment, PassData};

impl Clocks for Alignment {
    fn offset_for(&self, st: &evalbench_bundle::Stream) -> i64 {
        Alignment::offset_for(self, st)
    }
    fn bound_us(&self) -> Option<i64> {
        self.hosts.iter().filter_map(|h| h.bound_us).max()
    }
}

fn pass(data: &PassData) -> Pass<'_> {
    Pass { run: data.run.as_ref(), dir: &data.dir }
}

/// A pass's critical path, or why there is none. The spans are given up
/// to the graph as soon as it has what it needs of them: the pass comes
/// back without its streams.
pub fn critical_path(mut data: PassData, align: &Alignment) -> (PassData, Result<(Graph, CriticalPath), PathError>) {
    let streams = std::mem::take(&mut data.streams);
    let path = evalbench_path::critical_path(streams, pass(&data), align);
    (data, path)
}

/// The path's steps alone, the spans given up as in [`critical_path`].
pub fn critical_steps(mut data: PassData, align: &Alignment) -> Result<Vec<PathStep>, PathError> {
    let streams = std::mem::take(&mut data.streams);
    evalbench_path::critical_steps(streams, pass(&data), align)
}

/// A prediction made on each run of a pass, on its own path: one run is
/// a detail of the measurement, as its evaluated seconds are.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OverRuns {
    pub runs: usize,
    pub measured_s: crate::spread::Spread,
    pub predicted_s: crate::spread::Spread,
    /// Measured less predicted, per run.
    pub saved_ms: crate::spread::Spread,
}

impl OverRuns {
    /// From each run's prediction.
    pub fn of(each: &[whatif::WhatIf]) -> OverRuns {
        let v = |f: &dyn Fn(&whatif::WhatIf) -> f64, places: i32| {
            crate::spread::spread(&each.iter().map(f).collect::<Vec<_>>()).rounded(places)
        };
        OverRuns {
            runs: each.len(),
            measured_s: v(&|w| w.measured_s, 6),
            predicted_s: v(&|w| w.predicted_s, 6),
            saved_ms: v(&|w| (w.measured_s - w.predicted_s) * 1e3, 3),
        }
    }
}
