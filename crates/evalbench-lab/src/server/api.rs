//! The HTTP API subset the runner uses, in Gradient's `{error, message}` shape.

use std::sync::Arc;

use axum::extract::{Path, State, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use super::Shared;

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        // Gradient's route today, and the older one some deployments still have.
        .route("/api/v1/tasks/{project}/{task}/evaluate", post(evaluate))
        .route("/api/v1/projects/{org}/{project}/evaluate", post(evaluate))
        .route("/api/v1/auth/basic/login", post(login))
        .route("/api/v1/evals/{id}", get(eval_status))
        .route("/api/v1/health", get(health))
        .route("/proto", get(proto))
        .with_state(shared)
}

fn reply(code: StatusCode, error: bool, message: serde_json::Value) -> Response {
    (code, Json(json!({ "error": error, "message": message }))).into_response()
}

/// The organization the Bearer key belongs to, or a 401.
async fn authorize(s: &Shared, headers: &HeaderMap) -> Result<i64, Response> {
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| reply(StatusCode::UNAUTHORIZED, true, json!("missing Bearer API key")))?;
    let row =
        s.db.query_opt("SELECT organization FROM api_key WHERE key = $1", &[&key])
            .await
            .map_err(|e| reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string())))?;
    row.map(|r| r.get::<_, i64>(0)).ok_or_else(|| reply(StatusCode::UNAUTHORIZED, true, json!("unknown API key")))
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
    let known = s.db.query_opt("SELECT key FROM api_key WHERE key = $1", &[&password]).await;
    match known {
        Ok(Some(_)) if name == "admin" => reply(StatusCode::OK, false, json!(password)),
        Ok(_) => reply(StatusCode::UNAUTHORIZED, true, json!("wrong login name or password")),
        Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string())),
    }
}

async fn evaluate(State(s): State<Arc<Shared>>, Path((org, project)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let org_id = match authorize(&s, &headers).await {
        Ok(o) => o,
        Err(r) => return r,
    };
    let row = match s
        .db
        .query_opt(
            "SELECT p.id FROM project p JOIN organization o ON o.id = p.organization WHERE o.name = $1 AND p.name = $2 AND o.id = $3",
            &[&org, &project, &org_id],
        )
        .await
    {
        Ok(r) => r,
        Err(e) => return reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string())),
    };
    let Some(row) = row else {
        return reply(StatusCode::NOT_FOUND, true, json!(format!("no project {org}/{project} for this key")));
    };
    let project_id: i64 = row.get(0);
    let id = uuid::Uuid::new_v4();
    let inserted =
        s.db.execute("INSERT INTO evaluation (id, project, status) VALUES ($1, $2, 'Queued')", &[&id, &project_id])
            .await
            .and(s.db.execute("INSERT INTO evaluation_status (evaluation, status) VALUES ($1, 'Queued')", &[&id]).await);
    if let Err(e) = inserted {
        return reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string()));
    }
    s.wake.notify_one();
    reply(StatusCode::OK, false, json!(id.to_string()))
}

async fn eval_status(State(s): State<Arc<Shared>>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = authorize(&s, &headers).await {
        return r;
    }
    let Ok(id) = uuid::Uuid::parse_str(&id) else {
        return reply(StatusCode::BAD_REQUEST, true, json!("not an evaluation id"));
    };
    let row = s.db.query_opt("SELECT status, error, extract(epoch FROM created_at)::float8 FROM evaluation WHERE id = $1", &[&id]).await;
    match row {
        Ok(Some(r)) => {
            let timeline = s
                .db
                .query("SELECT status, (extract(epoch FROM at) * 1000000)::int8 FROM evaluation_status WHERE evaluation = $1 ORDER BY at", &[&id])
                .await
                .map(|rows| rows.iter().map(|t| json!({"status": t.get::<_, String>(0), "ts_us": t.get::<_, i64>(1)})).collect::<Vec<_>>())
                .unwrap_or_default();
            reply(
                StatusCode::OK,
                false,
                json!({
                    "id": id.to_string(),
                    "status": r.get::<_, String>(0),
                    "error": r.get::<_, Option<String>>(1),
                    "created_at": r.get::<_, f64>(2),
                    "statuses": timeline,
                }),
            )
        }
        Ok(None) => reply(StatusCode::NOT_FOUND, true, json!("no such evaluation")),
        Err(e) => reply(StatusCode::INTERNAL_SERVER_ERROR, true, json!(e.to_string())),
    }
}

async fn health(State(s): State<Arc<Shared>>) -> Response {
    let workers = s.workers.lock().await.len();
    // The version lets a bundle's provenance name the server it measured.
    reply(StatusCode::OK, false, json!({ "workers": workers, "version": concat!("evalbench-lab ", env!("CARGO_PKG_VERSION")) }))
}

async fn proto(State(s): State<Arc<Shared>>, ws: WebSocketUpgrade) -> Response {
    ws.on_upgrade(move |socket| super::proto::handle(s, socket))
}
