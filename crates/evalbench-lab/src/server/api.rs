//! The HTTP transport: the API subset the runner uses, in Gradient's
//! `{error, message}` shape. Requests are decoded and authorized here and
//! answered from the service; a store's failure is a 500 with its words.

use std::sync::Arc;

use axum::extract::{Path, Query, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::error::ServerError;
use super::{service, Shared};

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        // Gradient's route today, and the older one some deployments still have.
        .route("/api/v1/tasks/{project}/{task}/evaluate", post(evaluate))
        .route("/api/v1/projects/{org}/{project}/evaluate", post(evaluate))
        .route("/api/v1/auth/basic/login", post(login))
        .route("/api/v1/evals/{id}", get(eval_status))
        .route("/api/v1/evals/{id}/report", get(report))
        .route("/api/v1/tasks/{project}/{task}/metrics", get(task_metrics))
        .route("/api/v1/health", get(health))
        .route("/proto", get(proto))
        .with_state(shared)
}

fn reply(code: StatusCode, error: bool, message: serde_json::Value) -> Response {
    (code, Json(json!({ "error": error, "message": message }))).into_response()
}

/// A store's failure, as the API says it.
fn failed(e: ServerError) -> Response {
    reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string()))
}

/// The organization the Bearer key belongs to, or a 401.
async fn authorize(s: &Shared, headers: &HeaderMap) -> Result<i64, Response> {
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| reply(StatusCode::UNAUTHORIZED, true, json!("missing Bearer API key")))?;
    s.store
        .organization_of_key(key)
        .await
        .map_err(failed)?
        .ok_or_else(|| reply(StatusCode::UNAUTHORIZED, true, json!("unknown API key")))
}

/// `POST auth/basic/login {loginname, password}`, as Gradient's benchmark
/// logs in. The lab has one user, `admin`, whose password is the lab's API
/// key (lab.json): the token it gives is that key.
async fn login(State(s): State<Arc<Shared>>, body: Option<Json<serde_json::Value>>) -> Response {
    let Some(Json(body)) = body else {
        return reply(StatusCode::BAD_REQUEST, true, json!("expected {\"loginname\": …, \"password\": …}"));
    };
    let (Some(name), Some(password)) = (body["loginname"].as_str(), body["password"].as_str()) else {
        return reply(StatusCode::BAD_REQUEST, true, json!("expected {\"loginname\": …, \"password\": …}"));
    };
    match s.store.key_exists(password).await {
        Ok(true) if name == "admin" => reply(StatusCode::OK, false, json!(password)),
        Ok(_) => reply(StatusCode::UNAUTHORIZED, true, json!("wrong login name or password")),
        Err(e) => failed(e),
    }
}

async fn evaluate(
    State(s): State<Arc<Shared>>,
    Path((org, project)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let org_id = match authorize(&s, &headers).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    match service::queue_evaluation(&s, org_id, &org, &project).await {
        Ok(Some(id)) => reply(StatusCode::OK, false, json!(id.to_string())),
        Ok(None) => reply(StatusCode::NOT_FOUND, true, json!(format!("no project {org}/{project} for this key"))),
        Err(e) => failed(e),
    }
}

async fn eval_status(State(s): State<Arc<Shared>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = authorize(&s, &headers).await {
        return r;
    }
    let Ok(id) = uuid::Uuid::parse_str(&id) else {
        return reply(StatusCode::BAD_REQUEST, true, json!("not an evaluation id"));
    };
    match service::evaluation(&s, id).await {
        Ok(Some((r, timeline))) => reply(
            StatusCode::OK,
            false,
            json!({
                "id": id.to_string(),
                "status": r.status,
                "error": r.error,
                "created_at": r.created_at,
                "statuses": timeline.iter().map(|(status, ts_us)| json!({"status": status, "ts_us":
                    ts_us})).collect::<Vec<_>>(),
            }),
        ),
        Ok(None) => reply(StatusCode::NOT_FOUND, true, json!("no such evaluation")),
        Err(e) => failed(e),
    }
}

/// `GET evals/{id}/report`: Gradient's diagnostic report (a SQLite file of
/// schema 19), named as Gradient names its download.
async fn report(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(q): Query<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorize(&s, &headers).await {
        return r;
    }
    let Ok(id) = uuid::Uuid::parse_str(&id) else {
        return reply(StatusCode::BAD_REQUEST, true, json!("not an evaluation id"));
    };
    let opts = match super::report::Options::from_query(&q) {
        Ok(o) => o,
        Err(e) => return reply(StatusCode::BAD_REQUEST, true, json!(e)),
    };
    match service::report(&s, id, opts).await {
        Ok(Some(bytes)) => {
            let group = id.to_string().split('-').next().unwrap_or_default().to_string();
            let day = evalbench_diagnostic::time::format_us(evalbench_host::now_us());
            let name = format!("gradient-report-{group}-{}.db", &day[..10]);
            let disposition = format!("attachment; filename=\"{name}\"");
            ([("content-type", "application/vnd.sqlite3".to_string()), ("content-disposition", disposition)], bytes)
                .into_response()
        }
        Ok(None) => reply(StatusCode::NOT_FOUND, true, json!("no such evaluation")),
        Err(e) => failed(e),
    }
}

/// `GET tasks/{project}/{task}/metrics`: the task's completed evaluations, in
/// Gradient's `{keep_evaluations, points}` shape.
async fn task_metrics(
    State(s): State<Arc<Shared>>,
    Path((org, project)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorize(&s, &headers).await {
        return r;
    }
    match s.store.completed_evaluations(&org, &project).await {
        Ok(points) => {
            let points: Vec<_> = points
                .into_iter()
                .map(|mut p| {
                    p["build_time_total_ms"] = 0.into();
                    p["dependencies_count"] = 0.into();
                    for k in ["output_size_bytes", "closure_size_bytes", "runtime_closure_size_bytes"] {
                        p[k] = serde_json::Value::Null;
                    }
                    p
                })
                .collect();
            reply(StatusCode::OK, false, json!({"keep_evaluations": 0, "points": points}))
        }
        Err(e) => failed(e),
    }
}

async fn health(State(s): State<Arc<Shared>>) -> Response {
    let workers = s.workers.lock().await.len();
    // The version lets a bundle's provenance name the server it measured.
    reply(
        StatusCode::OK,
        false,
        json!({ "workers": workers, "version": concat!("evalbench-lab ", env!("CARGO_PKG_VERSION")) }),
    )
}

/// A worker's connection: only with the lab's token (every local user can
/// reach the port; a stranger must not take jobs or report results).
async fn proto(State(s): State<Arc<Shared>>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    let shown = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let token = &s.provision.proto_token;
    if !token.is_empty() && shown != Some(token.as_str()) {
        return reply(StatusCode::UNAUTHORIZED, true, json!("/proto needs the lab's worker token"));
    }
    ws.on_upgrade(move |socket| super::proto::handle(s, socket))
}
