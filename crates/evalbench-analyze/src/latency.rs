//! Statement latencies from a PostgreSQL wire capture, by statement shape:
//! the one table `decode pg` prints and the report draws.

use std::collections::HashMap;
use std::path::Path;

use evalbench_decode::normalize::normalize_sql;
use evalbench_decode::pg::{Execution, PgSummary};
use serde::Serialize;

use crate::stats::percentile;

/// One statement shape's executions.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StatementLatency {
    /// The normalized statement text (constants replaced).
    pub sql: String,
    pub count: usize,
    pub total_us: i64,
    pub p50_us: i64,
    pub p95_us: i64,
    pub max_us: i64,
    pub errors: u64,
}

/// Collects executions, then gives the table.
#[derive(Default)]
pub struct LatencyTable {
    by_shape: HashMap<String, (Vec<i64>, u64)>,
}

impl LatencyTable {
    pub fn add(&mut self, x: &Execution) {
        let e = self.by_shape.entry(normalize_sql(&x.sql)).or_default();
        e.0.push(x.latency_us);
        if x.error.is_some() {
            e.1 += 1;
        }
    }

    /// Largest total first; equal totals by statement text.
    pub fn finish(self) -> Vec<StatementLatency> {
        let mut rows: Vec<StatementLatency> = self
            .by_shape
            .into_iter()
            .map(|(sql, (mut v, errors))| {
                v.sort_unstable();
                StatementLatency {
                    sql,
                    count: v.len(),
                    total_us: v.iter().sum(),
                    p50_us: percentile(&v, 0.5),
                    p95_us: percentile(&v, 0.95),
                    max_us: percentile(&v, 1.0),
                    errors,
                }
            })
            .collect();
        rows.sort_by(|a, b| b.total_us.cmp(&a.total_us).then_with(|| a.sql.cmp(&b.sql)));
        rows
    }
}

/// Decodes `pcap` (server on `port` when given) into its summary and table;
/// `each` sees every execution as it is decoded.
pub fn from_capture(
    pcap: &Path,
    port: Option<u16>,
    each: &mut dyn FnMut(&Execution),
) -> Result<(PgSummary, Vec<StatementLatency>), evalbench_decode::DecodeError> {
    let mut table = LatencyTable::default();
    let summary = evalbench_decode::pg::decode_file(pcap, port, &mut |x| {
        each(&x);
        table.add(&x);
    })?;
    Ok((summary, table.finish()))
}
