//! strace -ff output: the slowest calls as records, time by call in text.

use evalbench_decode::strace::{Call, StraceSummary};

pub struct Strace;

impl super::Decoder for Strace {
    type Record = Call;
    type Summary = StraceSummary;
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Call)) -> anyhow::Result<StraceSummary> {
        let s = evalbench_decode::strace::decode(&a.file)?;
        // The slowest calls are known only at the end of the file.
        s.slowest.iter().for_each(|c| emit(c.clone()));
        Ok(s)
    }

    fn detect(&self, a: &super::Args, s: &StraceSummary) -> anyhow::Result<()> {
        // A directory with no file in it (or only empty ones) is empty input, as an empty file is.
        if a.file.is_dir() && s.calls == 0 && s.signals == 0 && s.exits == 0 && s.unparsed_lines == 0 {
            anyhow::bail!("{}: no strace output in it (expected strace -ff's worker.<pid> files)", a.file.display());
        }
        if s.calls == 0 && s.signals == 0 && s.exits == 0 && s.unparsed_lines > 0 {
            let what = if a.file.is_file() {
                evalbench_decode::sniff::looks_like(&evalbench_decode::sniff::head(&a.file, 4096)?)
            } else {
                "a directory of files with no strace line in them"
            };
            anyhow::bail!(
                "{}: expected strace -ff output (`12:00:01.000001 read(3, ...) = 5 <0.000010>`), but none of its {} \
                    lines is a call; it looks like {what}",
                a.file.display(),
                s.unparsed_lines
            );
        }
        Ok(())
    }

    fn text(&self, (): (), s: &StraceSummary) -> Vec<u8> {
        evalbench_report::output::decode::strace(s).into_bytes()
    }

    fn json_summary(&self, s: &StraceSummary) -> serde_json::Value {
        super::to_json(s)
    }
}
