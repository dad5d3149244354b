//! PostgreSQL's wire protocol in a pcap: a record per statement executed,
//! and a latency table by statement.

use std::collections::HashMap;
use std::sync::Arc;

use evalbench_decode::pg::{Execution, PgSummary};

pub struct Pg;

impl super::Decoder for Pg {
    type Record = Execution;
    type Summary = PgSummary;
    type Text = evalbench_analyze::LatencyTable;
    type Json = Escaped;

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

    /// Byte for byte what serde_json writes for an [`Execution`] (its fields
    /// in order; a test holds the two together), but each statement's
    /// text and tag escaped once: a capture runs the same few statements
    /// hundreds of thousands of times, and escaping them was a seventh of
    /// `decode pg --json`.
    fn json_record(json: &mut Escaped, x: &Execution, out: &mut Vec<u8>) {
        // Numbers by itoa, as serde_json writes them: through fmt they
        // were a tenth of the time.
        let mut n = itoa::Buffer::new();
        out.extend_from_slice(b"{\"conn\":");
        out.extend_from_slice(n.format(x.conn).as_bytes());
        out.extend_from_slice(b",\"start_us\":");
        out.extend_from_slice(n.format(x.start_us).as_bytes());
        out.extend_from_slice(b",\"latency_us\":");
        out.extend_from_slice(n.format(x.latency_us).as_bytes());
        out.extend_from_slice(b",\"sql\":");
        out.extend_from_slice(json.of(&x.sql));
        out.extend_from_slice(b",\"rows\":");
        match x.rows {
            Some(rows) => out.extend_from_slice(n.format(rows).as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"tag\":");
        match &x.tag {
            Some(t) => out.extend_from_slice(json.of(t)),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"error\":");
        serde_json::to_writer(&mut *out, &x.error).expect("a string serializes");
        out.extend_from_slice(b",\"bytes_in\":");
        out.extend_from_slice(n.format(x.bytes_in).as_bytes());
        out.extend_from_slice(b",\"bytes_out\":");
        out.extend_from_slice(n.format(x.bytes_out).as_bytes());
        out.extend_from_slice(if x.partial { b",\"partial\":true}" } else { b",\"partial\":false}" });
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

/// Statements and tags escaped as JSON strings, by the text they share
/// (an `Arc` the decoder hands every execution of a prepared statement,
/// and each tag of a connection): kept with the text, so that its address
/// is not another's while it is here; forgotten past a few thousand (a
/// capture of simple queries has a text per execution).
#[derive(Default)]
pub struct Escaped {
    /// foldhash, where SipHash on the addresses was 5% of `decode pg
    /// --json`; the keys are this process's own allocations.
    by_text: HashMap<*const u8, (Arc<str>, Vec<u8>), foldhash::fast::RandomState>,
}

impl Escaped {
    const MOST: usize = 4096;

    fn of(&mut self, text: &Arc<str>) -> &[u8] {
        if self.by_text.len() >= Self::MOST && !self.by_text.contains_key(&text.as_ptr()) {
            self.by_text.clear();
        }
        &self
            .by_text
            .entry(text.as_ptr())
            .or_insert_with(|| (text.clone(), serde_json::to_vec(&**text).expect("a string serializes")))
            .1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Decoder;

    /// The record written by hand is serde_json's, byte for byte, shared
    /// texts and all, with every field's None and Some and strings that
    /// need escaping.
    #[test]
    fn a_record_is_what_serde_json_writes() {
        let shared: Arc<str> = Arc::from("select \"x\"\n\t\\ é \u{1}");
        let tag: Arc<str> = Arc::from("SELECT 1");
        let mut json = Escaped::default();
        for i in 0..20u64 {
            let x = Execution {
                conn: i,
                start_us: -5 + i as i64 * 1_000_000_007,
                latency_us: i as i64,
                sql: if i % 3 == 0 { Arc::from(format!("q{i} \u{2028}")) } else { shared.clone() },
                rows: (i % 2 == 0).then_some(i * 7),
                tag: (i % 4 != 0).then(|| tag.clone()),
                error: (i % 5 == 0).then(|| format!("42P01: \"t{i}\" does not exist")),
                bytes_in: u64::MAX - i,
                bytes_out: i,
                partial: i % 2 == 1,
            };
            let mut ours = Vec::new();
            Pg::json_record(&mut json, &x, &mut ours);
            assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&x).unwrap(), "record {i}");
        }
    }
}
