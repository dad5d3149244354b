//! The Gradient HTTP API subset the runner uses.

use std::time::Duration;

use serde_json::Value;

use crate::target::Endpoint;

pub struct Api {
    agent: ureq::Agent,
    ep: Endpoint,
}

impl Api {
    pub fn new(ep: Endpoint) -> Api {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(30))).build().into();
        Api { agent, ep }
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.ep.api_key)
    }

    /// POST .../evaluate: the evaluation's id.
    pub fn evaluate(&self) -> Result<String, String> {
        let url = format!("{}/api/v1/projects/{}/{}/evaluate", self.ep.url, self.ep.organization, self.ep.project);
        let mut r =
            self.agent.post(&url).header("Authorization", &self.auth()).send_json(serde_json::json!({})).map_err(|e| format!("POST {url}: {e}"))?;
        let code = r.status();
        let body: Value = r.body_mut().read_json().map_err(|e| format!("POST {url}: HTTP {code}, not JSON: {e}"))?;
        if body["error"] != false {
            return Err(format!("POST {url}: HTTP {code}: {}", body["message"]));
        }
        body["message"].as_str().map(String::from).ok_or_else(|| format!("POST {url}: no evaluation id in {body}"))
    }

    /// GET /api/v1/evals/{id}: the whole `message` object.
    pub fn status(&self, id: &str) -> Result<Value, String> {
        let url = format!("{}/api/v1/evals/{id}", self.ep.url);
        let mut r = self.agent.get(&url).header("Authorization", &self.auth()).call().map_err(|e| format!("GET {url}: {e}"))?;
        let body: Value = r.body_mut().read_json().map_err(|e| format!("GET {url}: {e}"))?;
        if body["error"] != false {
            return Err(format!("GET {url}: {}", body["message"]));
        }
        Ok(body["message"].clone())
    }
}

/// Statuses at and after which the evaluation has left EvaluatingDerivation.
pub fn left_evaluation(status: &str) -> bool {
    matches!(status, "Building" | "Waiting" | "Completed" | "Failed" | "Aborted")
}

pub fn terminal(status: &str) -> bool {
    matches!(status, "Completed" | "Failed" | "Aborted")
}
