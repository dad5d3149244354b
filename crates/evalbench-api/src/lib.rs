//! `evalbench-api`: the subset of Gradient's HTTP API evalbench speaks, in
//! one place. The lab's server answers the same subset, so the runner, the
//! lab's `evaluate` and the Gradient target all use this one client: request
//! an evaluation, read its status, follow it until a status, wait until the
//! server is healthy.

use std::time::{Duration, Instant};

use serde_json::Value;

/// What went wrong talking to the API; every message names the request.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No answer (refused, timed out, not HTTP).
    #[error("{request}: {source}")]
    Transport { request: String, source: ureq::Error },
    /// An answer that is not the JSON the API gives.
    #[error("{request}: HTTP {code}, not JSON: {source}")]
    NotJson { request: String, code: u16, source: ureq::Error },
    /// The API said no (`"error": true`), or left out what it must give.
    #[error("{request}: {message}")]
    Refused { request: String, message: String },
    /// Following an evaluation took longer than allowed.
    #[error("evaluation {id} still {status} after {secs} s{hint}")]
    Timeout { id: String, status: String, secs: u64, hint: String },
    /// Following stopped because the caller asked (an interrupt).
    #[error("{0}")]
    Stopped(String),
}

/// Base URL, Bearer key, organization and project.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub url: String,
    pub api_key: String,
    pub organization: String,
    pub project: String,
}

/// Statuses at and after which the evaluation has left EvaluatingDerivation.
pub fn left_evaluation(status: &str) -> bool {
    matches!(status, "Building" | "Waiting" | "Completed" | "Failed" | "Aborted")
}

/// Statuses an evaluation ends in.
pub fn terminal(status: &str) -> bool {
    matches!(status, "Completed" | "Failed" | "Aborted")
}

/// When the server's own timeline says the evaluation left
/// EvaluatingDerivation: the time of the status after it.
pub fn left_evaluation_us(server_statuses: &[Value]) -> Option<i64> {
    server_statuses
        .iter()
        .position(|s| s["status"] == "EvaluatingDerivation")
        .and_then(|i| server_statuses.get(i + 1))
        .and_then(|s| s["ts_us"].as_i64())
}

/// How to follow an evaluation.
pub struct Follow<'a> {
    /// Between two status requests. Every request is SQL the CI answers as
    /// its own role: poll gently where the measurement runs.
    pub poll: Duration,
    /// The timeout counts from here, across several `follow` calls.
    pub started: Instant,
    pub timeout: Duration,
    /// Added to the timeout's message: the option that changes it.
    pub timeout_hint: &'a str,
    /// Called at every poll with the status and whether it changed; an
    /// error stops following (an interrupt, say).
    pub on_poll: &'a mut dyn FnMut(&str, bool) -> Result<(), ApiError>,
}

pub struct Client {
    agent: ureq::Agent,
    ep: Endpoint,
}

impl Client {
    /// A client whose every request gives up after `timeout`.
    pub fn new(ep: Endpoint, timeout: Duration) -> Client {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into();
        Client { agent, ep }
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.ep.api_key)
    }

    /// POST .../evaluate: the evaluation's id.
    pub fn evaluate(&self) -> Result<String, ApiError> {
        let url = format!("{}/api/v1/projects/{}/{}/evaluate", self.ep.url, self.ep.organization, self.ep.project);
        let request = format!("POST {url}");
        let mut r = self
            .agent
            .post(&url)
            .header("Authorization", &self.auth())
            .send_json(serde_json::json!({}))
            .map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        let code = r.status().as_u16();
        let body: Value = r.body_mut().read_json().map_err(|source| ApiError::NotJson { request: request.clone(), code, source })?;
        if body["error"] != false {
            return Err(ApiError::Refused { message: format!("HTTP {code}: {}", body["message"]), request });
        }
        body["message"].as_str().map(String::from).ok_or_else(|| ApiError::Refused { message: format!("no evaluation id in {body}"), request })
    }

    /// GET /api/v1/evals/{id}: the whole `message` object.
    pub fn status(&self, id: &str) -> Result<Value, ApiError> {
        let url = format!("{}/api/v1/evals/{id}", self.ep.url);
        let request = format!("GET {url}");
        let mut r = self
            .agent
            .get(&url)
            .header("Authorization", &self.auth())
            .call()
            .map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        let code = r.status().as_u16();
        let body: Value = r.body_mut().read_json().map_err(|source| ApiError::NotJson { request: request.clone(), code, source })?;
        if body["error"] != false {
            return Err(ApiError::Refused { message: body["message"].to_string(), request });
        }
        Ok(body["message"].clone())
    }

    /// Polls evaluation `id` until `stop_when` holds for its status. Each
    /// change is appended to `seen` with the runner's clock; `last` holds the
    /// latest status object, also when following fails.
    pub fn follow(
        &self,
        id: &str,
        stop_when: &dyn Fn(&str) -> bool,
        seen: &mut Vec<(String, i64)>,
        last: &mut Value,
        f: &mut Follow<'_>,
    ) -> Result<(), ApiError> {
        loop {
            let v = self.status(id)?;
            let status = v["status"].as_str().unwrap_or("?").to_string();
            let changed = seen.last().map(|s| s.0.as_str()) != Some(status.as_str());
            if changed {
                seen.push((status.clone(), evalbench_host::now_us()));
            }
            *last = v;
            (f.on_poll)(&status, changed)?;
            if stop_when(&status) {
                return Ok(());
            }
            if f.started.elapsed() > f.timeout {
                return Err(ApiError::Timeout { id: id.into(), status, secs: f.timeout.as_secs(), hint: f.timeout_hint.into() });
            }
            std::thread::sleep(f.poll);
        }
    }

    /// GET /api/v1/health: the body (null when it is not JSON), or None
    /// while the server does not answer.
    pub fn health(&self) -> Option<Value> {
        let mut r = self.agent.get(format!("{}/api/v1/health", self.ep.url)).call().ok()?;
        Some(r.body_mut().read_json::<Value>().unwrap_or(Value::Null))
    }

    /// Polls health until `ready` holds, for at most `within`. `alive` is
    /// asked between polls and stops the wait with its error (a server that
    /// exited). Err(None) is the timeout, for the caller to word.
    pub fn wait_healthy<E>(
        &self,
        within: Duration,
        ready: &dyn Fn(Option<&Value>) -> bool,
        alive: &mut dyn FnMut() -> Result<(), E>,
    ) -> Result<(), Option<E>> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if ready(self.health().as_ref()) {
                return Ok(());
            }
            alive().map_err(Some)?;
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(None)
    }
}

/// For callers that still carry errors as text.
impl From<ApiError> for String {
    fn from(e: ApiError) -> String {
        e.to_string()
    }
}
