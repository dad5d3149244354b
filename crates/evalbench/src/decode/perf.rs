//! perf.data (or `perf script` text): folded stacks, process first.

use evalbench_decode::perf::{Folded, PerfSummary};

pub struct Perf;

impl super::Decoder for Perf {
    type Record = serde_json::Value;
    type Summary = (Folded, PerfSummary);
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(serde_json::Value)) -> anyhow::Result<Self::Summary> {
        let folded = evalbench_decode::perf::fold(&a.file)?;
        let summary = evalbench_decode::perf::summarize(&folded);
        if a.json {
            // One record per folded stack (process first, leaf last).
            for line in String::from_utf8_lossy(&folded.stacks).lines() {
                if let Some((stack, n)) = line.rsplit_once(' ').and_then(|(s, n)| Some((s, n.parse::<u64>().ok()?))) {
                    emit(serde_json::json!({ "stack": stack.split(';').collect::<Vec<_>>(), "samples": n }));
                }
            }
        }
        Ok((folded, summary))
    }

    fn text(&self, (): (), (folded, _): &Self::Summary) -> Vec<u8> {
        folded.stacks.clone()
    }

    fn json_summary(&self, (_, summary): &Self::Summary) -> serde_json::Value {
        super::to_json(summary)
    }
}
