//! PostgreSQL's wire protocol in a pcap: a record per statement executed,
//! and a latency table by statement.

use evalbench_decode::pg::{Execution, PgSummary};

pub struct Pg;

impl super::Decoder for Pg {
    type Record = Execution;
    type Summary = PgSummary;
    type Text = evalbench_analyze::LatencyTable;

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Execution)) -> anyhow::Result<PgSummary> {
        Ok(evalbench_decode::pg::decode_file(&a.file, a.port, emit)?)
    }

    /// Connections, and not one statement in them: another protocol (a
    /// capture joined mid-connection is not always told apart).
    fn detect(&self, a: &super::Args, s: &PgSummary) -> anyhow::Result<()> {
        if s.statements == 0 && s.connections > 0 {
            anyhow::bail!(
                "{}: expected PostgreSQL's wire protocol, but none of its {} TCP connections carried a statement{}",
                a.file.display(),
                s.connections,
                if a.port.is_none() { " (proto.pcap? decode proto; or give the server's --port)" } else { "" }
            );
        }
        Ok(())
    }

    fn text_record(table: &mut Self::Text, x: &Execution) {
        table.add(x);
    }

    fn text(&self, table: Self::Text, s: &PgSummary) -> Vec<u8> {
        evalbench_report::output::decode::pg(&table.finish(), s).into_bytes()
    }

    fn json_summary(&self, s: &PgSummary) -> serde_json::Value {
        super::to_json(s)
    }
}
