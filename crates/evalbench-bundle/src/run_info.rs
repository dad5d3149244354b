//! `<run>/run.json`: what the runner knew about a pass. Every key is optional
//! to the reader, and unknown keys are kept in `raw`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{io, BundleError};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StatusChange {
    pub status: String,
    pub ts_us: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_id: Option<String>,
    /// Final status of the evaluation (Completed, Failed, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Status timeline as polled by the runner, on the runner's clock.
    #[serde(default)]
    pub statuses: Vec<StatusChange>,
    /// Seconds from the evaluate request until the evaluation left EvaluatingDerivation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluated_s: Option<f64>,
    /// Unix microseconds of the evaluate request, on the runner's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_us: Option<i64>,
    /// Which captures were on, as file or capture names.
    #[serde(default)]
    pub captures: Vec<String>,
    /// The `evaluation_metric` row of the CI, when the target has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_metric: Option<serde_json::Value>,
    /// Everything, as read.
    #[serde(skip)]
    pub raw: serde_json::Value,
}

impl RunInfo {
    pub fn read(path: &Path) -> Result<RunInfo, BundleError> {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let raw: serde_json::Value = serde_json::from_str(&text).map_err(|e| BundleError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("line {}, column {}: {e}", e.line(), e.column())),
        })?;
        let mut info: RunInfo = serde_json::from_value(raw.clone()).map_err(|e| BundleError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("unexpected run.json shape: {e}")),
        })?;
        info.raw = raw;
        Ok(info)
    }

    pub fn write(&self, path: &Path) -> Result<(), BundleError> {
        let text = serde_json::to_string_pretty(self).expect("run info serializes");
        crate::open::write_atomic(path, text.as_bytes())
    }
}
