//! A PostgreSQL log with auto_explain's plans: a record per plan.

use evalbench_decode::explain::{ExplainSummary, Plan};

pub struct AutoExplain;

impl super::Decoder for AutoExplain {
    type Record = Plan;
    type Summary = ExplainSummary;
    type Text = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Plan)) -> anyhow::Result<ExplainSummary> {
        // The text view is the summary's: plans are kept only for --json.
        let json = a.json;
        Ok(evalbench_decode::explain::decode(&a.file, &mut |p| {
            if json {
                emit(p.clone())
            }
        })?)
    }

    fn text(&self, (): (), s: &ExplainSummary) -> Vec<u8> {
        evalbench_report::output::decode::auto_explain(s).into_bytes()
    }

    fn json_summary(&self, s: &ExplainSummary) -> serde_json::Value {
        serde_json::json!({ "plans": s.plans, "malformed": s.malformed, "by_statement": s.by_statement })
    }
}
