//! The gate's HTTP face (SPEC §14): the operation id travels in `Idempotency-Key`, the actor
//! comes from `Authorization: Bearer <actor>.<session>`, the base revision in `If-Match`.
//!
//! | route | what |
//! |---|---|
//! | `POST /api/records/{entity}` | create → `201 {serverId, revision}` |
//! | `PUT /api/records/{entity}/{id}` | update (shallow merge) → `200 {serverId, revision}` |
//! | `DELETE /api/records/{entity}/{id}` | delete → `200 {serverId, revision, deleted}` |
//! | `POST /api/records/{entity}/{id}/sets` | command: append the body to the record's `sets` → `200 {serverId, revision, count}` |
//! | `GET /api/receipts/{opId}` | the stored answer of a completed operation (`findCreateReceipt`) |
//! | `GET /api/records` | the actor's records |
//! | `GET /api/effects` | every applied effect with its count (tests, demo) |
//! | `POST /api/sessions/revoke` | revokes the caller's session (the demo's "session expired") |

// Handler helpers return the `Response` to send on failure; boxing it would only add noise.
#![allow(clippy::result_large_err)]

use crate::ledger::{Answer, DomainOp, Ledger, Reservation};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Entity types the gate knows.
pub const ENTITIES: [&str; 2] = ["workout", "plan"];

/// Lists a command may append to (`POST /api/records/{entity}/{id}/{field}`).
pub const APPENDABLE: [&str; 1] = ["sets"];

/// Shared state of the gate.
pub struct Gate {
    /// The ledger and domain records.
    pub ledger: Arc<dyn Ledger>,
    /// Revoked session tokens (answered `401`).
    pub revoked: Mutex<HashSet<String>>,
    /// Artificial work time between reservation and completion (to make `IN_PROGRESS`
    /// observable in tests and the demo); zero by default.
    pub work_delay: Duration,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn reply(answer: &Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, Json(answer.body.clone())).into_response();
    if answer.replayed {
        resp.headers_mut().insert("Idempotent-Replayed", "true".parse().expect("static header"));
    }
    resp
}

fn error(status: u16, code: &str, message: &str) -> Response {
    reply(&Answer::new(status, json!({"code": code, "message": message})))
}

fn actor_of(gate: &Gate, headers: &HeaderMap) -> Result<String, Response> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| error(401, "UNAUTHENTICATED", "missing bearer token"))?;
    if gate.revoked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(token) {
        return Err(error(401, "SESSION_EXPIRED", "log in again"));
    }
    Ok(token.split('.').next().unwrap_or(token).to_owned())
}

/// The gate's own request fingerprint: SHA-256 of the canonical JSON of method, path, base
/// revision and body. It does not trust the client's.
fn fingerprint(method: &Method, path: &str, if_match: Option<i64>, body: &Value) -> String {
    let canon = outbox_core::fingerprint::canonical_json(
        &json!({"method": method.as_str(), "path": path, "ifMatch": if_match, "body": body}),
    );
    Sha256::digest(canon.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Field checks of the demo's entities: `422 INVALID` before anything is reserved.
fn validate(body: &Value) -> Result<(), Response> {
    if !body.is_object() && !body.is_null() {
        return Err(error(422, "INVALID", "body must be a JSON object"));
    }
    if let Some(w) = body.get("weight") {
        if !w.as_f64().is_some_and(|w| (0.0..=1000.0).contains(&w)) {
            return Err(error(422, "INVALID", "weight must be a number from 0 to 1000"));
        }
    }
    if body.get("title").is_some_and(|t| t.as_str().is_some_and(str::is_empty)) {
        return Err(error(422, "INVALID", "title must not be empty"));
    }
    Ok(())
}

async fn mutate(
    gate: Arc<Gate>,
    method: Method,
    path: String,
    headers: HeaderMap,
    op: DomainOp,
    body: Value,
) -> Response {
    let actor = match actor_of(&gate, &headers) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let Some(key) = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).filter(|k| !k.is_empty()) else {
        return error(400, "MISSING_IDEMPOTENCY_KEY", "send the operation id in Idempotency-Key");
    };
    if let Err(r) = validate(&body) {
        return r;
    }
    let fp = fingerprint(&method, &path, op.base_revision(), &body);
    let holder = match gate.ledger.reserve(&actor, key, op.op_type(), &fp, now_ms()) {
        Ok(Reservation::Reserved { holder, .. }) => holder,
        Ok(Reservation::Replay(answer)) => return reply(&answer),
        Ok(Reservation::PayloadConflict) => {
            return error(422, "PAYLOAD_CONFLICT", "this Idempotency-Key was used with another request")
        }
        Ok(Reservation::InProgress) => return error(409, "IN_PROGRESS", "the first request with this key is running"),
        Err(e) => return error(503, "LEDGER", &e.to_string()),
    };
    if !gate.work_delay.is_zero() {
        tokio::time::sleep(gate.work_delay).await;
    }
    match gate.ledger.complete(&actor, key, &holder, &op, now_ms()) {
        Ok(answer) => reply(&answer),
        Err(e) => {
            let _ = gate.ledger.release(&actor, key, &holder);
            error(503, "LEDGER", &e.to_string())
        }
    }
}

fn parse_body(bytes: &Bytes) -> Result<Value, Response> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|_| error(400, "INVALID", "body is not JSON"))
}

fn if_match(headers: &HeaderMap) -> Result<Option<i64>, Response> {
    match headers.get("if-match").and_then(|v| v.to_str().ok()) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .trim_matches('"')
            .parse()
            .map(Some)
            .map_err(|_| error(400, "INVALID", "If-Match must be a revision number")),
    }
}

fn entity_ok(entity: &str) -> Result<(), Response> {
    if ENTITIES.contains(&entity) {
        Ok(())
    } else {
        Err(error(404, "NOT_FOUND", "unknown entity type"))
    }
}

/// The parts of a request on an existing record: its numeric id, the JSON body and the
/// base revision (`If-Match`).
fn record_request(id: &str, bytes: &Bytes, headers: &HeaderMap) -> Result<(i64, Value, Option<i64>), Response> {
    let Ok(num) = id.parse::<i64>() else { return Err(error(404, "NOT_FOUND", "no such record")) };
    Ok((num, parse_body(bytes)?, if_match(headers)?))
}

async fn create(
    State(g): State<Arc<Gate>>,
    Path(entity): Path<String>,
    method: Method,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    if let Err(r) = entity_ok(&entity) {
        return r;
    }
    let body = match parse_body(&bytes) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let path = format!("/api/records/{entity}");
    mutate(g, method, path, headers, DomainOp::Create { entity, body: body.clone() }, body).await
}

async fn change(
    State(g): State<Arc<Gate>>,
    Path((entity, id)): Path<(String, String)>,
    method: Method,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    if let Err(r) = entity_ok(&entity) {
        return r;
    }
    let (num, body, revision) = match record_request(&id, &bytes, &headers) {
        Ok(parts) => parts,
        Err(r) => return r,
    };
    let path = format!("/api/records/{entity}/{id}");
    let op = if method == Method::DELETE {
        DomainOp::Delete { entity, id: num, revision }
    } else {
        DomainOp::Update { entity, id: num, revision, body: body.clone() }
    };
    mutate(g, method, path, headers, op, body).await
}

/// A command: `POST /api/records/{entity}/{id}/{field}` appends the body to that record's
/// list `field` (the demo logs a set on a workout). Each key appends once, however often
/// it is resent; two keys append twice, in the order they arrive.
async fn append(
    State(g): State<Arc<Gate>>,
    Path((entity, id, field)): Path<(String, String, String)>,
    method: Method,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    if let Err(r) = entity_ok(&entity) {
        return r;
    }
    if !APPENDABLE.contains(&field.as_str()) {
        return error(404, "NOT_FOUND", "no such list");
    }
    let (num, item, revision) = match record_request(&id, &bytes, &headers) {
        Ok(parts) => parts,
        Err(r) => return r,
    };
    let path = format!("/api/records/{entity}/{id}/{field}");
    let op = DomainOp::Append { entity, id: num, revision, field, item: item.clone() };
    mutate(g, method, path, headers, op, item).await
}

async fn receipt(State(g): State<Arc<Gate>>, Path(op_id): Path<String>, headers: HeaderMap) -> Response {
    let actor = match actor_of(&g, &headers) {
        Ok(a) => a,
        Err(r) => return r,
    };
    match g.ledger.receipt(&actor, &op_id) {
        Ok(Some(a)) if (200..300).contains(&a.status) => (StatusCode::OK, Json(a.body)).into_response(),
        Ok(_) => error(404, "NOT_FOUND", "no completed operation with this id"),
        Err(e) => error(503, "LEDGER", &e.to_string()),
    }
}

async fn records(State(g): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    match actor_of(&g, &headers) {
        Ok(actor) => match g.ledger.records(&actor) {
            Ok(r) => Json(r).into_response(),
            Err(e) => error(503, "LEDGER", &e.to_string()),
        },
        Err(r) => r,
    }
}

async fn effects(State(g): State<Arc<Gate>>) -> Response {
    match g.ledger.effects() {
        Ok(r) => Json(r).into_response(),
        Err(e) => error(503, "LEDGER", &e.to_string()),
    }
}

async fn revoke(State(g): State<Arc<Gate>>, headers: HeaderMap) -> Response {
    if let Some(token) =
        headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
    {
        g.revoked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(token.trim().to_owned());
    }
    StatusCode::NO_CONTENT.into_response()
}

/// The API routes.
pub fn api(gate: Arc<Gate>) -> Router {
    Router::new()
        .route("/api/records", get(records))
        .route("/api/records/{entity}", post(create))
        .route("/api/records/{entity}/{id}", put(change).delete(change))
        .route("/api/records/{entity}/{id}/{field}", post(append))
        .route("/api/receipts/{op_id}", get(receipt))
        .route("/api/effects", get(effects))
        .route("/api/sessions/revoke", post(revoke))
        .with_state(gate)
}
