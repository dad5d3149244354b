//! What a pass must have written, and what it switched off.

use crate::error::HarnessError;
use std::path::Path;

use evalbench_bundle::layout;
use serde_json::Value;

use crate::capture::Captures;

/// run.json: a run's record, synced to disk (see `evalbench_bundle::write_record`).
pub(super) fn write_json(path: &Path, v: &Value) -> Result<(), HarnessError> {
    Ok(evalbench_bundle::write_record(path, serde_json::to_string_pretty(v).expect("serializes").as_bytes())?)
}

/// Files a pass must have, by what it captured (docs/decisions.md, "The bundle").
pub fn expected_files(c: &Captures) -> Vec<&'static str> {
    let mut v = vec![layout::RUN_JSON, layout::JOB_PHASES];
    if c.pcap {
        v.extend([layout::PROTO_PCAP, layout::PG_PCAP]);
    }
    if c.pg_stats {
        v.push(layout::PG_STAT_STATEMENTS);
    }
    if c.wait_samples {
        v.push(layout::WAIT_SAMPLES);
    }
    if c.perf {
        v.extend([layout::PERF_DATA, layout::FLAME_SVG, layout::WORKER_PERF_DATA, layout::WORKER_FLAME_SVG]);
    }
    if c.auto_explain {
        v.push(layout::AUTO_EXPLAIN);
    }
    v
}

pub(super) fn missing_files(dir: &Path, c: &Captures) -> Vec<String> {
    let mut missing: Vec<String> = expected_files(c)
        .into_iter()
        .filter(|f| std::fs::metadata(dir.join(f)).map(|m| m.len() == 0).unwrap_or(true))
        .map(String::from)
        .collect();
    let has_spans = std::fs::read_dir(dir.join(layout::TRACE_DIR))
        .map(|d| {
            d.flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "jsonl") && e.metadata().is_ok_and(|m| m.len() > 0))
        })
        .unwrap_or(false);
    if !has_spans {
        missing.push("trace/*.jsonl".into());
    }
    if c.instructions {
        let counted = |n: &str| n.starts_with(layout::CACHEGRIND_PREFIX) && n.ends_with(layout::CACHEGRIND_SUFFIX);
        let any = std::fs::read_dir(dir.join(layout::EVAL_DIR))
            .map(|d| d.flatten().any(|e| counted(&e.file_name().to_string_lossy())))
            .unwrap_or(false);
        if !any {
            missing.push(format!(
                "{}/{}<who>{}",
                layout::EVAL_DIR,
                layout::CACHEGRIND_PREFIX,
                layout::CACHEGRIND_SUFFIX
            ));
        }
    }
    if c.strace {
        let any = std::fs::read_dir(dir.join(layout::WORKER_STRACE_DIR))
            .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with(layout::STRACE_FILE_PREFIX)))
            .unwrap_or(false);
        if !any {
            missing.push(format!("{}/{}<pid>", layout::WORKER_STRACE_DIR, layout::STRACE_FILE_PREFIX));
        }
    }
    missing
}

/// Captures a pass of this kind would have had but that were switched off.
pub(super) fn off_list(c: &Captures, pass: &str) -> Vec<&'static str> {
    let mut v = Vec::new();
    if layout::is_counted(pass) {
        return v;
    }
    if layout::is_clean(pass) {
        if !c.pcap {
            v.push("pcap");
        }
        if !c.pg_stats {
            v.push("pg_stat_statements");
        }
        if !c.wait_samples {
            v.push("wait_samples");
        }
    } else {
        if !c.perf {
            v.push("perf");
        }
        if !c.strace {
            v.push("strace");
        }
        if !c.auto_explain {
            v.push("auto_explain");
        }
    }
    v
}
