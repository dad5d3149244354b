//! Typed readers for the Postgres files of a bundle, tolerant of extra
//! columns and of the column names PostgreSQL 13 to 17 use (13 renamed
//! `total_time` to `total_exec_time`; 17 renamed the block timing columns),
//! and of the shapes Gradient's benchmark writes (docs/GRADIENT-FORMAT.md):
//! statements with `total_ms`/`mean_ms`, wait samples as a flat array of
//! backends, job phases with smallint codes and milliseconds from the
//! job's acceptance.

use crate::error::DecodeError;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Statement {
    #[serde(default)]
    pub queryid: Option<i64>,
    #[serde(default)]
    pub query: String,
    #[serde(default)]
    pub calls: i64,
    #[serde(default)]
    pub rows: i64,
    /// Milliseconds executing (`total_exec_time`; `total_time` before 13;
    /// `total_ms` in Gradient's file, read by [`statements`]).
    #[serde(default, alias = "total_time")]
    pub total_exec_time: f64,
    #[serde(default, alias = "mean_time")]
    pub mean_exec_time: f64,
    #[serde(default, alias = "max_time")]
    pub max_exec_time: f64,
    /// Milliseconds planning (13 and later, with track_planning).
    #[serde(default)]
    pub total_plan_time: Option<f64>,
    #[serde(default)]
    pub plans: Option<i64>,
    #[serde(default)]
    pub shared_blks_hit: Option<i64>,
    #[serde(default)]
    pub shared_blks_read: Option<i64>,
    /// `blk_read_time` before 17, `shared_blk_read_time` from 17.
    #[serde(default, alias = "blk_read_time")]
    pub shared_blk_read_time: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Backend {
    #[serde(default)]
    pub pid: Option<i64>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub wait_event_type: Option<String>,
    #[serde(default)]
    pub wait_event: Option<String>,
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub backend_type: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WaitSample {
    pub ts_us: i64,
    #[serde(default)]
    pub backends: Vec<Backend>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WaitSamples {
    #[serde(default)]
    pub interval_ms: Option<u64>,
    #[serde(default)]
    pub samples: Vec<WaitSample>,
}

/// One job phase, as read from either shape: evalbench's older rows (`job`,
/// `worker`, `phase` by name, `started_us`/`ended_us` on the server's
/// clock) or Gradient's (`kind`, `seq`, `parent_seq`, `phase` as a code,
/// `start_ms`/`end_ms` from the job's acceptance on the worker).
#[derive(Debug, Clone, Default, Serialize)]
pub struct JobPhase {
    /// The job the phase is of; for Gradient's rows, which name none, the
    /// job's number in the file (a `seq` of 0 starts the next job).
    pub job: String,
    pub worker: Option<String>,
    /// The phase's name (Gradient's code named as its inspector names it).
    pub phase: String,
    /// `eval` or `build` (Gradient's `dispatched_job.kind`), where given.
    pub kind: Option<String>,
    pub seq: Option<i64>,
    pub parent_seq: Option<i64>,
    /// Start and end in µs: Unix time for evalbench's older rows, from the
    /// job's acceptance for Gradient's ([`JobPhase::relative`]).
    pub started_us: Option<i64>,
    pub ended_us: Option<i64>,
    /// The times count from the job's acceptance, not from the epoch.
    pub relative: bool,
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, DecodeError> {
    let text = std::fs::read_to_string(path).map_err(DecodeError::io(path))?;
    serde_json::from_str(&text).map_err(|e| {
        DecodeError::format(
            path.display().to_string(),
            format!("line {}, column {}: ", e.line(), e.column()),
            e.to_string(),
        )
    })
}

/// pg_stat_statements rows: PostgreSQL's columns, or Gradient's `total_ms`
/// and `mean_ms` where a row has no `total_exec_time` (the lab's rows have
/// both, with one meaning; a serde alias would refuse the pair).
pub fn statements(path: &Path) -> Result<Vec<Statement>, DecodeError> {
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = read(path)?;
    rows.into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            for (ours, older, gradient_s) in
                [("total_exec_time", "total_time", "total_ms"), ("mean_exec_time", "mean_time", "mean_ms")]
            {
                if !r.contains_key(ours) && !r.contains_key(older) {
                    if let Some(v) = r.get(gradient_s).cloned() {
                        r.insert(ours.to_string(), v);
                    }
                }
            }
            serde_json::from_value(serde_json::Value::Object(r))
                .map_err(|e| DecodeError::format(path.display().to_string(), format!("row {i}: "), e.to_string()))
        })
        .collect()
}

/// Gradient's flat rows (one backend a row, `ts_us` on each) grouped by
/// time into samples, or evalbench's older `{interval_ms, samples}`.
pub fn wait_samples(path: &Path) -> Result<WaitSamples, DecodeError> {
    let v: serde_json::Value = read(path)?;
    wait_samples_of(&v, &path.display().to_string())
}

/// [`wait_samples`] of a JSON value already read; `name` is where it came from.
pub fn wait_samples_of(v: &serde_json::Value, name: &str) -> Result<WaitSamples, DecodeError> {
    #[derive(Deserialize)]
    struct Row {
        ts_us: i64,
        #[serde(flatten)]
        backend: Backend,
    }
    match v {
        serde_json::Value::Array(rows) => {
            let mut out = WaitSamples { interval_ms: None, samples: Vec::new() };
            for (i, r) in rows.iter().enumerate() {
                let row: Row = serde_json::from_value(r.clone()).map_err(|e| {
                    let expected = "Gradient's {ts_us, pid, state, wait_event_type, wait_event, query}";
                    DecodeError::format(name, format!("row {i}: "), format!("{e} (expected {expected})"))
                })?;
                match out.samples.last_mut() {
                    Some(last) if last.ts_us == row.ts_us => last.backends.push(row.backend),
                    _ => out.samples.push(WaitSample { ts_us: row.ts_us, backends: vec![row.backend] }),
                }
            }
            Ok(out)
        }
        serde_json::Value::Object(_) => serde_json::from_value(v.clone()).map_err(|e| {
            DecodeError::format(name, "", format!("{e} (expected {{interval_ms, samples: [{{ts_us, backends}}]}})"))
        }),
        other => Err(DecodeError::format(name, "", format!("a JSON {}, not an array of wait samples", kind_of(other)))),
    }
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

pub fn job_phases(path: &Path) -> Result<Vec<JobPhase>, DecodeError> {
    let v: serde_json::Value = read(path)?;
    job_phases_of(&v, &path.display().to_string())
}

/// [`job_phases`] of a JSON value already read: each row in either shape;
/// `name` is where it came from.
pub fn job_phases_of(v: &serde_json::Value, name: &str) -> Result<Vec<JobPhase>, DecodeError> {
    let rows = v
        .as_array()
        .ok_or_else(|| DecodeError::format(name, "", format!("a JSON {}, not an array of job phases", kind_of(v))))?;
    let mut out = Vec::with_capacity(rows.len());
    let mut job = 0usize;
    for (i, r) in rows.iter().enumerate() {
        let int = |k: &str| r.get(k).and_then(|x| x.as_i64());
        let text = |k: &str| r.get(k).and_then(|x| x.as_str()).map(String::from);
        let phase = match r.get("phase") {
            Some(serde_json::Value::Number(n)) => n.as_i64().map(evalbench_bundle::contract::job_phase_name),
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            _ => None,
        }
        .ok_or_else(|| DecodeError::format(name, format!("row {i}: "), "no phase (a code or a name)"))?;
        if r.get("start_ms").is_some() {
            // Gradient's rows: a job's phases come together, its first at seq 0.
            if int("seq") == Some(0) && i > 0 {
                job += 1;
            }
            let (Some(s), e) = (int("start_ms"), int("end_ms")) else {
                return Err(DecodeError::format(name, format!("row {i}: "), "start_ms is not a whole number"));
            };
            out.push(JobPhase {
                job: text("job").unwrap_or_else(|| format!("job {}", job + 1)),
                worker: text("worker"),
                phase,
                kind: int("kind").map(evalbench_bundle::contract::job_kind_name).or_else(|| text("kind")),
                seq: int("seq"),
                parent_seq: int("parent_seq"),
                started_us: Some(s.saturating_mul(1000)),
                ended_us: e.map(|e| e.saturating_mul(1000)),
                relative: true,
            });
        } else {
            out.push(JobPhase {
                job: text("job").unwrap_or_else(|| "?".into()),
                worker: text("worker"),
                phase,
                kind: None,
                seq: None,
                parent_seq: None,
                started_us: int("started_us"),
                ended_us: int("ended_us"),
                relative: false,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn gradient_s_shapes_read_as_ours() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.json");
        std::fs::write(
            &f,
            r#"[{"calls":3,"total_ms":12.5,"mean_ms":4.167,"rows":3,"shared_blks_hit":9,"shared_blks_read":0,
                "query":"SELECT 1"},
            {"calls":1,"total_ms":2.0,"mean_ms":2.0,"total_exec_time":2.0001,"mean_exec_time":2.0001,
                "total_plan_time":0.1,"query":"SELECT 2"}]"#,
        )
        .unwrap();
        let s = super::statements(&f).unwrap();
        assert_eq!((s[0].total_exec_time, s[0].mean_exec_time, s[0].total_plan_time), (12.5, 4.167, None));
        assert_eq!(
            (s[1].total_exec_time, s[1].total_plan_time),
            (2.0001, Some(0.1)),
            "PostgreSQL's own column where both are there"
        );
        let w = super::wait_samples_of(
            &serde_json::json!([
                {"ts_us": 10, "pid": 1, "state": "active", "wait_event_type": "Lock", "wait_event": "tuple",
                    "query": "UPDATE x"},
                {"ts_us": 10, "pid": 2, "state": "active", "wait_event_type": null, "wait_event": null,
                    "query": "SELECT 1"},
                {"ts_us": 110, "pid": 1, "state": "idle in transaction",
                    "wait_event_type": "Client", "wait_event": "ClientRead", "query": "COMMIT"}
            ]),
            "w.json",
        )
        .unwrap();
        assert_eq!(w.samples.len(), 2);
        assert_eq!(w.samples[0].backends.len(), 2);
        assert_eq!(w.samples[1].backends[0].wait_event.as_deref(), Some("ClientRead"));
        let p = super::job_phases_of(
            &serde_json::json!([
                {"kind": 0, "seq": 0, "parent_seq": null, "phase": 0, "start_ms": 0, "end_ms": 40},
                {"kind": 0, "seq": 1, "parent_seq": null, "phase": 3, "start_ms": 40, "end_ms": 900},
                {"kind": 0, "seq": 2, "parent_seq": 1, "phase": 6, "start_ms": 100, "end_ms": 130},
                {"kind": 1, "seq": 0, "parent_seq": null, "phase": 15, "start_ms": 0, "end_ms": 5}
            ]),
            "p.json",
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|x| x.phase.as_str()).collect();
        assert_eq!(names, ["fetch", "eval_derivations", "known_derivations_wait", "download"]);
        assert_eq!((p[2].parent_seq, p[2].started_us, p[2].relative), (Some(1), Some(100_000), true));
        assert_eq!((p[0].job.as_str(), p[3].job.as_str(), p[3].kind.as_deref()), ("job 1", "job 2", Some("build")));
        assert!(super::wait_samples_of(&serde_json::json!("x"), "w.json").unwrap_err().to_string().contains("string"));
        let e = super::job_phases_of(&serde_json::json!([{"seq": 0}]), "p.json").unwrap_err().to_string();
        assert!(e.starts_with("p.json: row 0: "), "{e}");
    }

    #[test]
    fn old_and_new_column_names_read_alike() {
        let v12: Vec<super::Statement> = serde_json::from_str(
            r#"[{"query":"SELECT 1","calls":2,"total_time":1.5,"mean_time":0.75,"blk_read_time":0.1,"extra":true}]"#,
        )
        .unwrap();
        let v17: Vec<super::Statement> = serde_json::from_str(
            r#"[{"query":"SELECT 1","calls":2,"total_exec_time":1.5,"mean_exec_time":0.75,"shared_blk_read_time":0.1,
                "total_plan_time":0.2}]"#,
        )
        .unwrap();
        assert_eq!(v12[0].total_exec_time, v17[0].total_exec_time);
        assert_eq!(v12[0].shared_blk_read_time, v17[0].shared_blk_read_time);
        assert_eq!(v17[0].total_plan_time, Some(0.2));
    }
}
