//! A pass and its repeats as samples, one value per run: the evaluated
//! seconds, every span total, every statement total. What `compare` judges.

use std::collections::BTreeMap;

use evalbench_bundle::{layout, Bundle, PassDir};

use crate::{align_pass, load_pass, span_stats};

/// Per run of a pass: wall seconds, span totals, statement totals.
pub struct Samples {
    pub runs: usize,
    /// Evaluated seconds (run.json), or the traced wall when unknown.
    pub wall: Vec<f64>,
    /// "<process> <span>" to its total per run, ms; 0 where a run lacks it.
    pub spans: BTreeMap<String, Vec<f64>>,
    /// Normalized statement to its pg_stat_statements total per run, ms.
    pub statements: BTreeMap<String, Vec<f64>>,
}

/// The runs of one pass, in order.
pub fn samples(dirs: &[&PassDir]) -> Samples {
    let mut s = Samples { runs: dirs.len(), wall: Vec::new(), spans: BTreeMap::new(), statements: BTreeMap::new() };
    for (i, d) in dirs.iter().enumerate() {
        let data = load_pass(d);
        let align = align_pass(&data.streams);
        let wall =
            data.run.as_ref().and_then(|r| r.evaluated_s).unwrap_or_else(|| data.extent(&align).map(|(a, b)| (b - a) as f64 / 1e6).unwrap_or(0.0));
        s.wall.push(wall);
        for st in span_stats(&data.streams) {
            let v = s.spans.entry(format!("{} {}", st.process, st.name)).or_insert_with(|| vec![0.0; i]);
            v.push(st.total_us as f64 / 1e3);
        }
        if let Ok(rows) = evalbench_decode::stats::statements(&d.file(layout::PG_STAT_STATEMENTS)) {
            for r in rows {
                let key = evalbench_decode::normalize::normalize_sql(&r.query);
                let v = s.statements.entry(key).or_insert_with(|| vec![0.0; i]);
                if v.len() == i + 1 {
                    *v.last_mut().expect("one") += r.total_exec_time;
                } else {
                    v.push(r.total_exec_time);
                }
            }
        }
        // A name absent from this run counts as zero.
        for v in s.spans.values_mut().chain(s.statements.values_mut()) {
            v.resize(i + 1, 0.0);
        }
    }
    s
}

/// The bundle's passes by base name (`cold-clean` with `cold-clean.2` ...).
pub fn group(b: &Bundle) -> BTreeMap<String, Vec<&PassDir>> {
    let mut m: BTreeMap<String, Vec<&PassDir>> = BTreeMap::new();
    for p in &b.passes {
        m.entry(layout::base_name(&p.name).to_string()).or_default().push(p);
    }
    m
}
