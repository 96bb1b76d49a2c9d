//! The demo app: one app built on the gate, as any app would be. Its domain (records of a
//! workout tracker, SPEC §14's examples) lives here, not in the gate; so does its
//! **stand-in login**: `Authorization: Bearer <actor>.<session>` is read, not verified —
//! anyone can act as anyone. A real app puts its own authentication in [`User`]'s place.
//!
//! | route | what |
//! |---|---|
//! | `POST /api/records/{entity}` | create → `201 {serverId, revision}` |
//! | `PUT /api/records/{entity}/{id}` | update (shallow merge) → `200 {serverId, revision}` |
//! | `DELETE /api/records/{entity}/{id}` | delete → `200 {serverId, revision, deleted}` |
//! | `POST /api/records/{entity}/{id}/sets` | command: append the body to `sets` → `200 {serverId, revision, count}` |
//! | `GET /api/receipts/{opId}` | the answer of an operation (`findCreateReceipt`) |
//! | `GET /api/records` | the caller's records |
//!
//! | `POST /api/sessions/revoke` | revokes the caller's own stand-in session (the demo's "Expire session") |
//!
//! With [`DemoOptions::test_endpoints`] only (tests; never in a deployment): `GET /api/effects`
//! (every actor's applied effects with their counts, at most 10 000; `?actor=` for one actor's).

// Helpers return the `Response` to send on failure, as axum's rejections are; boxing it
// would only add noise.
#![allow(clippy::result_large_err)]

mod edge;
mod serve;
mod store;

pub use edge::{MAX_HEADERS, MAX_HEADER_BYTES};
pub use serve::{serve, Timeouts};

pub use store::{DemoStore, DomainOp};

use crate::answer::error;
use crate::gate::{now_ms, Gate};
use crate::request::{Idempotent, MAX_KEY_LEN};
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::Value;
use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_http::services::ServeDir;

/// Entity types the demo knows.
pub const ENTITIES: [&str; 3] = ["workout", "plan", "todo"];

/// Lists a command may append to (`POST /api/records/{entity}/{id}/{field}`).
pub const APPENDABLE: [&str; 1] = ["sets"];

/// The largest request body the demo accepts (`413` beyond).
pub const MAX_BODY: usize = 64 * 1024;

/// At most this many revoked sessions are remembered, and effects listed.
const TEST_LIST_CAP: usize = 10_000;

/// How the demo runs.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    /// Serve `/api/effects`, every actor's operation ids (tests only).
    pub test_endpoints: bool,
    /// Artificial work time inside the handler, to make `IN_PROGRESS` and crashes
    /// mid-request observable; zero by default.
    pub work_delay: Duration,
    /// The demo app's static files, served at `/`.
    pub www: Option<PathBuf>,
    /// The built npm package, served at `/pkg`.
    pub pkg: Option<PathBuf>,
}

/// The demo's state: the gate, its stand-in sessions and options.
pub struct Demo<DB: DemoStore> {
    /// The gate (and through it, the pool).
    pub gate: Gate<DB>,
    revoked: Mutex<(HashSet<String>, VecDeque<String>)>,
    options: DemoOptions,
}

/// The caller, from the demo's **stand-in login**: `Bearer <actor>.<session>` is read, not
/// verified. A real app replaces this extractor with its own authentication.
#[derive(Clone, Debug)]
pub struct User(pub String);

impl<DB: DemoStore> FromRequestParts<Arc<Demo<DB>>> for User {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, demo: &Arc<Demo<DB>>) -> Result<User, Response> {
        let token = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", "missing bearer token"))?;
        let actor = token.split('.').next().unwrap_or(token);
        if actor.is_empty() || actor.len() > MAX_KEY_LEN || token.len() > 2 * MAX_KEY_LEN {
            return Err(error(StatusCode::BAD_REQUEST, "INVALID_ACTOR", "the actor must be 1 to 255 characters"));
        }
        if demo.revoked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).0.contains(token) {
            return Err(error(StatusCode::UNAUTHORIZED, "SESSION_EXPIRED", "log in again"));
        }
        Ok(User(actor.to_owned()))
    }
}

/// Field checks: `422 INVALID` before anything is reserved.
fn validate(body: &Value) -> Result<(), Response> {
    let invalid = |m: &str| Err(error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID", m));
    if !body.is_object() {
        return invalid("the body must be a JSON object");
    }
    if let Some(w) = body.get("weight") {
        if !w.as_f64().is_some_and(|w| (0.0..=1000.0).contains(&w)) {
            return invalid("weight must be a number from 0 to 1000");
        }
    }
    if body.get("title").is_some_and(|t| t.as_str().is_some_and(str::is_empty)) {
        return invalid("title must not be empty");
    }
    Ok(())
}

/// The body of a create, update or append: a JSON object, never empty.
fn object_body(req: &Idempotent) -> Result<Value, Response> {
    let body = req.json::<Value>()?.unwrap_or(Value::Null);
    validate(&body)?;
    Ok(body)
}

fn record_id(id: &str) -> Result<i64, Response> {
    id.parse::<i64>().map_err(|_| error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such record"))
}

fn entity_ok(entity: &str) -> Result<(), Response> {
    if ENTITIES.contains(&entity) {
        Ok(())
    } else {
        Err(error(StatusCode::NOT_FOUND, "NOT_FOUND", "unknown entity type"))
    }
}

/// The base revision an `If-Match` names. One that is not a revision number — also one
/// that is not text at all (bytes above 0x7f) — is refused, never read as "no revision",
/// which would apply a stale edit unconditionally.
fn base_revision(if_match: Option<&axum::http::HeaderValue>) -> Result<Option<i64>, Response> {
    if_match
        .map(|v| v.to_str().ok().and_then(|s| s.trim().trim_matches('"').parse().ok()).ok_or(()))
        .transpose()
        .map_err(|()| error(StatusCode::BAD_REQUEST, "INVALID", "If-Match must be a revision number"))
}

impl<DB: DemoStore> Demo<DB> {
    async fn execute(&self, user: &User, req: Idempotent, op: DomainOp) -> Response {
        // `GET /api/receipts/.` and `/..` cannot be asked for: every URL parser removes
        // such a segment (`%2e` too), so the receipt of an operation with such an id would
        // be `404`, "never happened". Refused before anything is reserved.
        if matches!(req.key(), "." | "..") {
            return error(
                StatusCode::BAD_REQUEST,
                "INVALID_IDEMPOTENCY_KEY",
                "an Idempotency-Key of only dots cannot name a receipt's URL",
            );
        }
        let (actor, key, delay) = (user.0.clone(), req.key().to_owned(), self.options.work_delay);
        self.gate
            .run(&user.0, req, move |tx| {
                Box::pin(async move {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    DB::apply(tx, &actor, &key, &op, now_ms()).await
                })
            })
            .await
    }
}

type Shared<DB> = State<Arc<Demo<DB>>>;

async fn create<DB: DemoStore>(
    State(d): Shared<DB>,
    user: User,
    Path(entity): Path<String>,
    req: Idempotent,
) -> Response {
    if let Err(r) = entity_ok(&entity) {
        return r;
    }
    match object_body(&req) {
        Ok(body) => d.execute(&user, req, DomainOp::Create { entity, body }).await,
        Err(r) => r,
    }
}

async fn change<DB: DemoStore>(
    State(d): Shared<DB>,
    user: User,
    method: Method,
    headers: axum::http::HeaderMap,
    Path((entity, id)): Path<(String, String)>,
    req: Idempotent,
) -> Response {
    let parts = entity_ok(&entity).and_then(|()| {
        let id = record_id(&id)?;
        let revision = base_revision(headers.get("if-match"))?;
        Ok((id, revision))
    });
    let (id, revision) = match parts {
        Ok(p) => p,
        Err(r) => return r,
    };
    let op = if method == Method::DELETE {
        DomainOp::Delete { entity, id, revision }
    } else {
        match object_body(&req) {
            Ok(body) => DomainOp::Update { entity, id, revision, body },
            Err(r) => return r,
        }
    };
    d.execute(&user, req, op).await
}

/// A command: `POST /api/records/{entity}/{id}/{field}` appends the body to that record's
/// list `field`. Each key appends once however often it is resent; two keys append twice.
async fn append<DB: DemoStore>(
    State(d): Shared<DB>,
    user: User,
    headers: axum::http::HeaderMap,
    Path((entity, id, field)): Path<(String, String, String)>,
    req: Idempotent,
) -> Response {
    if !APPENDABLE.contains(&field.as_str()) {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such list");
    }
    let parts = entity_ok(&entity).and_then(|()| {
        let id = record_id(&id)?;
        let revision = base_revision(headers.get("if-match"))?;
        Ok((id, revision, object_body(&req)?))
    });
    match parts {
        Ok((id, revision, item)) => d.execute(&user, req, DomainOp::Append { entity, id, revision, field, item }).await,
        Err(r) => r,
    }
}

async fn receipt<DB: DemoStore>(State(d): Shared<DB>, user: User, Path(op_id): Path<String>) -> Response {
    if op_id.len() > MAX_KEY_LEN {
        return error(StatusCode::BAD_REQUEST, "INVALID_IDEMPOTENCY_KEY", "operation ids are at most 255 characters");
    }
    d.gate.receipt(&user.0, &op_id).await
}

async fn records<DB: DemoStore>(State(d): Shared<DB>, user: User) -> Response {
    match DB::records(d.gate.pool(), &user.0).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => db_failure(&e),
    }
}

/// `?actor=…` lists one actor's effects: a long soak's other actors would fill the cap.
async fn effects<DB: DemoStore>(
    State(d): Shared<DB>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    match DB::effects(d.gate.pool(), q.get("actor").map(String::as_str), TEST_LIST_CAP as i64).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => db_failure(&e),
    }
}

async fn revoke<DB: DemoStore>(State(d): Shared<DB>, _user: User, headers: axum::http::HeaderMap) -> Response {
    if let Some(token) =
        headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
    {
        let mut revoked = d.revoked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let token = token.trim().to_owned();
        if revoked.0.insert(token.clone()) {
            revoked.1.push_back(token);
        }
        while revoked.1.len() > TEST_LIST_CAP {
            if let Some(oldest) = revoked.1.pop_front() {
                revoked.0.remove(&oldest);
            }
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

fn db_failure(e: &sqlx::Error) -> Response {
    eprintln!("outbox-gate demo: database: {e}");
    error(StatusCode::SERVICE_UNAVAILABLE, "BUSY", "the server is busy; retry later")
}

/// The demo server: its API over `gate`, and the static files of `options`. Creates the
/// demo's tables if missing.
///
/// # Errors
/// The database refused the migration.
pub async fn app<DB: DemoStore>(gate: Gate<DB>, options: DemoOptions) -> Result<Router, sqlx::Error> {
    DB::migrate_domain(gate.pool()).await?;
    let (www, pkg, test_endpoints) = (options.www.clone(), options.pkg.clone(), options.test_endpoints);
    let demo = Arc::new(Demo { gate, revoked: Mutex::new((HashSet::new(), VecDeque::new())), options });
    let mut api = Router::new()
        .route("/api/records", get(records::<DB>))
        .route("/api/records/{entity}", post(create::<DB>))
        .route("/api/records/{entity}/{id}", put(change::<DB>).delete(change::<DB>))
        .route("/api/records/{entity}/{id}/{field}", post(append::<DB>))
        .route("/api/receipts/{op_id}", get(receipt::<DB>))
        // The demo's "Expire session" button: revokes the caller's own stand-in session.
        .route("/api/sessions/revoke", post(revoke::<DB>));
    if test_endpoints {
        api = api.route("/api/effects", get(effects::<DB>));
    }
    // Static files, behind the dotfile filter; the API's routes are not files and are not
    // filtered (an operation id may start with a dot).
    let mut files = Router::new();
    if let Some(pkg) = pkg {
        files = files.nest_service("/pkg", ServeDir::new(pkg));
    }
    if let Some(www) = www {
        files = files.fallback_service(ServeDir::new(www));
    }
    let files = files.layer(axum::middleware::from_fn(edge::no_dotfiles));
    let router = api.layer(DefaultBodyLimit::max(MAX_BODY)).with_state(demo).fallback_service(files);
    Ok(router
        .layer(axum::middleware::from_fn(edge::json_errors))
        .layer(axum::middleware::from_fn(edge::bounded_headers)))
}
