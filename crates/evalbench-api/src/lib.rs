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

/// Base URL, credentials, and what to evaluate. Gradient's current API
/// evaluates `tasks/{project}/{task}`, older versions
/// `projects/{organization}/{project}`: `organization` is the first part of
/// either (today's project), `project` the second (today's task).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub url: String,
    /// A Bearer key; empty where `login` gives one.
    #[serde(default)]
    pub api_key: String,
    pub organization: String,
    pub project: String,
    /// A user to log in as (`POST auth/basic/login`), for a token instead
    /// of an API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<Login>,
}

/// `POST /api/v1/auth/basic/login`'s body, as Gradient takes it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Login {
    pub loginname: String,
    pub password: String,
}

use evalbench_bundle::contract::Status;

/// Statuses at and after which the evaluation has left EvaluatingDerivation
/// (the contract's [`Status::left_evaluation`]); a status Gradient does not
/// have is neither.
pub fn left_evaluation(status: &str) -> bool {
    Status::parse(status).is_some_and(Status::left_evaluation)
}

/// Statuses an evaluation ends in.
pub fn terminal(status: &str) -> bool {
    Status::parse(status).is_some_and(Status::terminal)
}

/// When the server's own timeline says the evaluation left
/// EvaluatingDerivation: the time of the status after it.
pub fn left_evaluation_us(server_statuses: &[Value]) -> Option<i64> {
    server_statuses
        .iter()
        .position(|s| s["status"] == Status::EvaluatingDerivation.as_str())
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
    /// The token a login gave, once asked.
    token: std::sync::OnceLock<String>,
}

impl Client {
    /// A client whose every request gives up after `timeout`.
    pub fn new(ep: Endpoint, timeout: Duration) -> Client {
        let agent =
            ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(timeout)).build().into();
        Client { agent, ep, token: std::sync::OnceLock::new() }
    }

    /// The Bearer header: the API key, or the token of a login (made once).
    fn auth(&self) -> Result<String, ApiError> {
        if !self.ep.api_key.is_empty() {
            return Ok(format!("Bearer {}", self.ep.api_key));
        }
        if let Some(t) = self.token.get() {
            return Ok(format!("Bearer {t}"));
        }
        let Some(login) = &self.ep.login else {
            return Err(ApiError::Refused {
                request: "authorization".into(),
                message: "neither api_key nor login is given".into(),
            });
        };
        let url = format!("{}/api/v1/auth/basic/login", self.ep.url);
        let (code, body) =
            self.post(&url, None, serde_json::json!({"loginname": login.loginname, "password": login.password}))?;
        let token = answer(&url, code, &body)?.as_str().map(String::from).ok_or_else(|| ApiError::Refused {
            request: format!("POST {url}"),
            message: format!("no token in {body}"),
        })?;
        Ok(format!("Bearer {}", self.token.get_or_init(|| token)))
    }

    /// POSTs `body`, with `auth` where given: the HTTP code and the JSON answer.
    fn post(&self, url: &str, auth: Option<&str>, body: Value) -> Result<(u16, Value), ApiError> {
        let request = format!("POST {url}");
        let mut req = self.agent.post(url);
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        let mut r = req.send_json(body).map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        let code = r.status().as_u16();
        let body: Value = r.body_mut().read_json().map_err(|source| ApiError::NotJson { request, code, source })?;
        Ok((code, body))
    }

    /// POST `tasks/{project}/{task}/evaluate` (Gradient's route today), or
    /// on a 404 or 405 from a server without it the older
    /// `projects/{organization}/{project}/evaluate`: the evaluation's id.
    pub fn evaluate(&self) -> Result<String, ApiError> {
        let auth = self.auth()?;
        let (a, b) = (&self.ep.organization, &self.ep.project);
        let url = format!("{}/api/v1/tasks/{a}/{b}/evaluate", self.ep.url);
        let (url, code, body) = match self.post(&url, Some(&auth), serde_json::json!({})) {
            Ok((404 | 405, _)) | Err(ApiError::NotJson { code: 404 | 405, .. }) => {
                let older = format!("{}/api/v1/projects/{a}/{b}/evaluate", self.ep.url);
                let (code, body) = self.post(&older, Some(&auth), serde_json::json!({}))?;
                (older, code, body)
            }
            Ok((code, body)) => (url, code, body),
            Err(e) => return Err(e),
        };
        let id = answer(&url, code, &body)?;
        id.as_str().map(String::from).ok_or_else(|| ApiError::Refused {
            message: format!("no evaluation id in {body}"),
            request: format!("POST {url}"),
        })
    }

    /// GET /api/v1/evals/{id}: the whole `message` object.
    pub fn status(&self, id: &str) -> Result<Value, ApiError> {
        let url = format!("{}/api/v1/evals/{id}", self.ep.url);
        let request = format!("GET {url}");
        let mut r = self
            .agent
            .get(&url)
            .header("Authorization", &self.auth()?)
            .call()
            .map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        let code = r.status().as_u16();
        let body: Value =
            r.body_mut().read_json().map_err(|source| ApiError::NotJson { request: request.clone(), code, source })?;
        if body["error"] != false {
            return Err(ApiError::Refused { message: body["message"].to_string(), request });
        }
        Ok(body["message"].clone())
    }

    /// GET `url` with the Bearer header: the HTTP code and the body, at most `max_bytes` of it.
    fn get_bytes(&self, url: &str, max_bytes: u64) -> Result<(u16, Vec<u8>), ApiError> {
        let request = format!("GET {url}");
        let mut r = self
            .agent
            .get(url)
            .header("Authorization", &self.auth()?)
            .call()
            .map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        let code = r.status().as_u16();
        let body = r
            .body_mut()
            .with_config()
            .limit(max_bytes)
            .read_to_vec()
            .map_err(|source| ApiError::Transport { request: request.clone(), source })?;
        Ok((code, body))
    }

    /// GET `evals/{id}/report`: the evaluation's diagnostic report (a SQLite
    /// file's bytes, at most `max_bytes`). An answer that is not one (a JSON
    /// error) is refused with its message.
    pub fn report(&self, id: &str, max_bytes: u64) -> Result<Vec<u8>, ApiError> {
        let url = format!("{}/api/v1/evals/{id}/report", self.ep.url);
        let (code, body) = self.get_bytes(&url, max_bytes)?;
        if code != 200 || !body.starts_with(b"SQLite format 3\0") {
            let said = serde_json::from_slice::<Value>(&body).map_or_else(
                |_| format!("HTTP {code}, {} bytes that are not a SQLite file", body.len()),
                |v| format!("HTTP {code}: {}", v["message"]),
            );
            return Err(ApiError::Refused { request: format!("GET {url}"), message: said });
        }
        Ok(body)
    }

    /// GET `tasks/{project}/{task}/metrics` (the endpoint's organization and
    /// project): the task's completed evaluations, `{keep_evaluations, points}`.
    pub fn task_metrics(&self) -> Result<Value, ApiError> {
        let (a, b) = (&self.ep.organization, &self.ep.project);
        let url = format!("{}/api/v1/tasks/{a}/{b}/metrics", self.ep.url);
        let (code, body) = self.get_bytes(&url, 64 << 20)?;
        let v: Value = serde_json::from_slice(&body).map_err(|e| ApiError::Refused {
            request: format!("GET {url}"),
            message: format!("HTTP {code}, not JSON: {e}"),
        })?;
        answer(&url, code, &v).cloned()
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
                return Err(ApiError::Timeout {
                    id: id.into(),
                    status,
                    secs: f.timeout.as_secs(),
                    hint: f.timeout_hint.into(),
                });
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
            // A health check is one small request: every cold and warm run
            // starts the server and waits here, so the wait is kept short.
            std::thread::sleep(Duration::from_millis(10));
        }
        Err(None)
    }
}

/// Gradient's `{error, message}`: the message, or the refusal with its code.
fn answer<'a>(url: &str, code: u16, body: &'a Value) -> Result<&'a Value, ApiError> {
    if body["error"] != false {
        return Err(ApiError::Refused {
            message: format!("HTTP {code}: {}", body["message"]),
            request: format!("POST {url}"),
        });
    }
    Ok(&body["message"])
}

/// For callers that still carry errors as text.
impl From<ApiError> for String {
    fn from(e: ApiError) -> String {
        e.to_string()
    }
}
