//! nix's evaluation profiles: nix 2.8's function trace, folded here into
//! self time per stack of call sites, or collapsed stacks already folded
//! (Nix 2.30's `--eval-profiler flamegraph`, a pass's nix-profile.folded).

use evalbench_bundle::inputs::Inputs;
use evalbench_bundle::layout::{file_name, NIX_INPUTS_JSON, NIX_PROFILE_FOLDED, NIX_PROFILE_JSON};
use evalbench_decode::nix_trace::{Fold, Profile, Stack};

pub struct NixTrace;

/// A stack as traced (self time and calls), or a line of stacks that were
/// folded before (a weight in the file's own unit).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum Record {
    Traced(Stack),
    Folded(serde_json::Value),
}

pub enum Summary {
    Traced(Box<Fold>),
    /// The stacks as the file gave them, what they are and in what unit.
    Folded {
        stacks: Vec<(Vec<String>, u64)>,
        lines: u64,
        key: &'static str,
        format: &'static str,
    },
}

/// The inputs that name a trace's positions: the flake's, asked of nix, or
/// those kept beside the file.
pub(super) fn trace_inputs(a: &super::Args) -> anyhow::Result<Option<Inputs>> {
    use anyhow::Context;
    let Some(flake) = &a.flake else {
        let beside = a.file.with_file_name(file_name(NIX_INPUTS_JSON));
        return Ok(std::fs::read(&beside).ok().and_then(|t| serde_json::from_slice::<Inputs>(&t).ok()));
    };
    let inputs = evalbench_lab::eval::flake_inputs(&flake.to_string_lossy())
        .with_context(|| format!("--flake {}", flake.display()))?;
    Ok(Some(inputs))
}

impl super::Decoder for NixTrace {
    type Record = Record;
    type Summary = Summary;
    type Text = ();
    type Json = ();

    fn decode(&self, a: &super::Args, emit: &mut dyn FnMut(Record)) -> anyhow::Result<Summary> {
        match evalbench_decode::nix_trace::read(&a.file, (a.max_depth > 0).then_some(a.max_depth), trace_inputs(a)?)? {
            Profile::Traced(fold) => {
                if a.json {
                    fold.stacks().into_iter().for_each(|s| emit(Record::Traced(s)));
                }
                Ok(Summary::Traced(fold))
            }
            Profile::Sampled { stacks, lines } => {
                // One format, two units: Nix's --eval-profiler counts samples;
                // evalbench's own nix-profile.folded (a pass's eval/) weighs
                // stacks in µs of self time.
                let ours = a.file.file_name().is_some_and(|n| n == file_name(NIX_PROFILE_FOLDED))
                    || a.file.with_file_name(file_name(NIX_PROFILE_JSON)).is_file();
                let (key, format) = if ours {
                    ("self_us", "evalbench nix-profile.folded (µs of self time)")
                } else {
                    ("samples", "nix eval-profiler flamegraph")
                };
                if a.json {
                    for (stack, n) in &stacks {
                        emit(Record::Folded(serde_json::json!({ "stack": stack, key: n })));
                    }
                }
                Ok(Summary::Folded { stacks, lines, key, format })
            }
        }
    }

    fn text(&self, (): (), s: &Summary) -> Vec<u8> {
        match s {
            Summary::Traced(fold) => fold.folded().into_bytes(),
            Summary::Folded { stacks, .. } => {
                stacks.iter().map(|(stack, n)| format!("{} {n}\n", stack.join(";"))).collect::<String>().into_bytes()
            }
        }
    }

    fn json_summary(&self, s: &Summary) -> serde_json::Value {
        match s {
            // The same record as a pass's nix-profile.json.
            Summary::Traced(fold) => super::to_json(&evalbench_decode::nix_profile::NixProfile::of(&[fold])),
            Summary::Folded { stacks, lines, key, format } => {
                let total: u64 = stacks.iter().map(|s| s.1).sum();
                serde_json::json!({ "lines": lines, *key: total, "format": format })
            }
        }
    }
}
