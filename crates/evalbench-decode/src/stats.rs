//! Typed readers for the Postgres files of a bundle, tolerant of extra
//! columns and of the column names PostgreSQL 13 to 17 use (13 renamed
//! `total_time` to `total_exec_time`; 17 renamed the block timing columns).

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
    /// Milliseconds executing (`total_exec_time`; `total_time` before 13).
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

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct JobPhase {
    #[serde(default)]
    pub job: String,
    #[serde(default)]
    pub worker: Option<String>,
    #[serde(default)]
    pub phase: String,
    #[serde(default)]
    pub started_us: Option<i64>,
    #[serde(default)]
    pub ended_us: Option<i64>,
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, DecodeError> {
    let text = std::fs::read_to_string(path).map_err(DecodeError::io(path))?;
    serde_json::from_str(&text)
        .map_err(|e| DecodeError::format(path.display().to_string(), format!("line {}, column {}: ", e.line(), e.column()), e.to_string()))
}

pub fn statements(path: &Path) -> Result<Vec<Statement>, DecodeError> {
    read(path)
}
pub fn wait_samples(path: &Path) -> Result<WaitSamples, DecodeError> {
    read(path)
}
pub fn job_phases(path: &Path) -> Result<Vec<JobPhase>, DecodeError> {
    read(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn old_and_new_column_names_read_alike() {
        let v12: Vec<super::Statement> =
            serde_json::from_str(r#"[{"query":"SELECT 1","calls":2,"total_time":1.5,"mean_time":0.75,"blk_read_time":0.1,"extra":true}]"#).unwrap();
        let v17: Vec<super::Statement> = serde_json::from_str(
            r#"[{"query":"SELECT 1","calls":2,"total_exec_time":1.5,"mean_exec_time":0.75,"shared_blk_read_time":0.1,"total_plan_time":0.2}]"#,
        )
        .unwrap();
        assert_eq!(v12[0].total_exec_time, v17[0].total_exec_time);
        assert_eq!(v12[0].shared_blk_read_time, v17[0].shared_blk_read_time);
        assert_eq!(v17[0].total_plan_time, Some(0.2));
    }
}
