//! A PostgreSQL log with auto_explain's plans: a record per plan.

use evalbench_decode::explain::{ExplainSummary, Plan};

pub struct AutoExplain;

impl super::Decoder for AutoExplain {
    type Record = Plan;
    type Summary = ExplainSummary;
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Plan)) -> anyhow::Result<ExplainSummary> {
        // The text view is the summary's: plans are kept only for --json.
        let json = a.json;
        Ok(evalbench_decode::explain::decode(&a.file, &mut |p| {
            if json {
                emit(p.clone())
            }
        })?)
    }

    /// A file without a plan is refused unless it is a PostgreSQL log (one
    /// that logged no plan decodes to 0 plans): a pcap, perf.data, JSON or
    /// random bytes said as what they look like.
    fn detect(&self, a: &super::Args, s: &ExplainSummary) -> anyhow::Result<()> {
        if s.plans > 0 || s.malformed > 0 || !a.file.is_file() {
            return Ok(());
        }
        let head = evalbench_decode::sniff::head(&a.file, 4096)?;
        let looks = evalbench_decode::sniff::looks_like(&head);
        if looks.starts_with("a PostgreSQL log") {
            return Ok(());
        }
        anyhow::bail!(
            "{}: expected a PostgreSQL log with auto_explain's plans (`LOG:  duration: 1.2 ms  plan:`), but this looks \
                like {looks}",
            a.file.display()
        )
    }

    fn text(&self, (): (), s: &ExplainSummary) -> Vec<u8> {
        evalbench_report::output::decode::auto_explain(s).into_bytes()
    }

    fn json_summary(&self, s: &ExplainSummary) -> serde_json::Value {
        serde_json::json!({ "plans": s.plans, "malformed": s.malformed, "by_statement": s.by_statement })
    }
}
