//! Nix's own sampled profile (Nix ≥ 2.30, `--eval-profiler flamegraph`):
//! its stacks summed as records, positions and functions ranked by samples
//! in text. Positions name the flake input they are in, as `nix-trace`'s do.

use std::fmt::Write;

use evalbench_decode::eval_profiler::{Ranked, Sampled};

pub struct EvalProfiler;

/// How many positions and functions the text and the summary list.
const TOP: usize = 20;

#[derive(serde::Serialize)]
pub struct Record {
    stack: Vec<String>,
    samples: u64,
}

impl super::Decoder for EvalProfiler {
    type Record = Record;
    type Summary = Sampled;
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Record)) -> anyhow::Result<Sampled> {
        let inputs = super::nix_trace::trace_inputs(a)?;
        let s = evalbench_decode::eval_profiler::read(&a.file, inputs.as_ref())?;
        if a.json {
            s.stacks.iter().for_each(|(stack, n)| emit(Record { stack: stack.clone(), samples: *n }));
        }
        Ok(s)
    }

    /// evalbench's own fold of nix's function trace (`eval/nix-profile.folded`,
    /// each stack under `(evaluator N: …)`, weighted in µs) reads as stacks
    /// too, and its µs would be counted as samples: refused, naming it.
    fn detect(&self, a: &super::Args, s: &Sampled) -> anyhow::Result<()> {
        if s.stacks.iter().any(|(stack, _)| stack.first().is_some_and(|f| f.starts_with("(evaluator "))) {
            anyhow::bail!(
                "{}: expected nix's sampled profile (--eval-profiler flamegraph: eval/nix-eval-profiler.folded), but \
                    this is evalbench's fold of nix's function trace, weighted in µs, not samples \
                    (eval/nix-profile.folded; its summary is eval/nix-profile.json)",
                a.file.display()
            );
        }
        Ok(())
    }

    fn text(&self, (): (), s: &Sampled) -> Vec<u8> {
        let mut t = String::new();
        let _ = writeln!(
            t,
            "nix's eval profiler: {} samples in {} distinct stacks ({} lines)",
            s.samples,
            s.stacks.len(),
            s.lines
        );
        let _ = writeln!(t, "self: samples where it is the innermost frame; total: where it is anywhere on the stack");
        let table = |t: &mut String, title: &str, rows: &[Ranked]| {
            let _ = writeln!(t, "\n{:>8} {:>6} {:>8} {:>6}  {title}", "self", "%", "total", "%");
            let pct = |n: u64| if s.samples == 0 { 0.0 } else { 100.0 * n as f64 / s.samples as f64 };
            for r in rows.iter().take(TOP) {
                let _ = writeln!(
                    t,
                    "{:>8} {:>6.1} {:>8} {:>6.1}  {}",
                    r.self_samples,
                    pct(r.self_samples),
                    r.total_samples,
                    pct(r.total_samples),
                    r.name
                );
            }
            if rows.len() > TOP {
                let _ = writeln!(t, "{:>8} more (--json lists every stack)", rows.len() - TOP);
            }
        };
        table(&mut t, "position (call site; a lambda's own where nix knows none)", &s.by_position());
        table(&mut t, "function", &s.by_function());
        t.into_bytes()
    }

    fn json_summary(&self, s: &Sampled) -> serde_json::Value {
        let top = |v: Vec<Ranked>| v.into_iter().take(TOP).collect::<Vec<_>>();
        serde_json::json!({
            "format": "nix eval-profiler flamegraph",
            "lines": s.lines,
            "stacks": s.stacks.len(),
            "samples": s.samples,
            "by_position": top(s.by_position()),
            "by_function": top(s.by_function()),
        })
    }
}
