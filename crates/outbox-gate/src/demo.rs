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
//! With [`DemoOptions::test_endpoints`] only (never in a deployment): `GET /api/effects`
//! (every applied effect with its count, at most 10 000) and `POST /api/sessions/revoke`
//! (revokes the caller's stand-in session: the demo's "session expired").

// Helpers return the `Response` to send on failure, as axum's rejections are; boxing it
// would only add noise.
#![allow(clippy::result_large_err)]

use crate::answer::{error, Answer};
use crate::gate::{now_ms, Gate, Tx};
use crate::ledger::Engine;
use crate::request::{Idempotent, MAX_KEY_LEN};
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use sqlx::{Pool, Postgres, Row, Sqlite};
use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower_http::services::ServeDir;

/// Entity types the demo knows.
pub const ENTITIES: [&str; 2] = ["workout", "plan"];

/// Lists a command may append to (`POST /api/records/{entity}/{id}/{field}`).
pub const APPENDABLE: [&str; 1] = ["sets"];

/// The largest request body the demo accepts (`413` beyond).
pub const MAX_BODY: usize = 64 * 1024;

/// At most this many revoked sessions are remembered, and effects listed.
const TEST_LIST_CAP: usize = 10_000;

/// How the demo runs.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    /// Serve `/api/effects` and `/api/sessions/revoke` (tests and the local demo only).
    pub test_endpoints: bool,
    /// Artificial work time inside the handler, to make `IN_PROGRESS` and crashes
    /// mid-request observable; zero by default.
    pub work_delay: Duration,
    /// The demo app's static files, served at `/`.
    pub www: Option<PathBuf>,
    /// The built npm package, served at `/pkg`.
    pub pkg: Option<PathBuf>,
}

/// One domain change, as the routes parsed it.
#[derive(Clone, Debug, PartialEq)]
pub enum DomainOp {
    /// Create a record of `entity`.
    Create {
        /// Entity type.
        entity: String,
        /// Its fields.
        body: Value,
    },
    /// Update a record (shallow merge); `revision` is the client's base revision (`If-Match`).
    Update {
        /// Entity type.
        entity: String,
        /// Record id.
        id: i64,
        /// Base revision, if any.
        revision: Option<i64>,
        /// Fields to set.
        body: Value,
    },
    /// Delete a record.
    Delete {
        /// Entity type.
        entity: String,
        /// Record id.
        id: i64,
        /// Base revision, if any.
        revision: Option<i64>,
    },
    /// A command: append `item` to the list `field` of a record (a set logged on a workout).
    /// Every occurrence counts, so clients send these with `merge: false`.
    Append {
        /// Entity type.
        entity: String,
        /// Record id.
        id: i64,
        /// Base revision, if any.
        revision: Option<i64>,
        /// The list.
        field: String,
        /// What to append.
        item: Value,
    },
}

impl DomainOp {
    fn kind(&self) -> &'static str {
        match self {
            DomainOp::Create { .. } => "create",
            DomainOp::Update { .. } => "update",
            DomainOp::Delete { .. } => "delete",
            DomainOp::Append { .. } => "append",
        }
    }
}

/// The demo's domain tables and statements, on either engine.
pub trait DemoStore: Engine {
    /// Creates the demo's tables if missing.
    fn migrate_domain(pool: &Pool<Self>) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
    /// Carries out `op` for `actor` inside the gate's transaction; a domain refusal is an
    /// `Ok` answer (stored and replayed).
    fn apply(
        tx: &mut Tx<Self>,
        actor: &str,
        key: &str,
        op: &DomainOp,
        now_ms: i64,
    ) -> impl Future<Output = Result<Answer, sqlx::Error>> + Send;
    /// The actor's live records, `{serverId, revision, body}`.
    fn records(pool: &Pool<Self>, actor: &str) -> impl Future<Output = Result<Vec<Value>, sqlx::Error>> + Send;
    /// Applied effects `{opId, actor, kind, target, count}`, oldest first, at most `limit`.
    fn effects(pool: &Pool<Self>, limit: i64) -> impl Future<Output = Result<Vec<Value>, sqlx::Error>> + Send;
}

const SQLITE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS demo_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT, entity TEXT NOT NULL, actor TEXT NOT NULL,
    revision INTEGER NOT NULL, body TEXT NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS demo_records_actor ON demo_records (actor);
CREATE TABLE IF NOT EXISTS demo_effects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, op_id TEXT NOT NULL, actor TEXT NOT NULL,
    kind TEXT NOT NULL, target TEXT NOT NULL, at INTEGER NOT NULL);";

const POSTGRES_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS demo_records (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, entity TEXT NOT NULL, actor TEXT NOT NULL,
    revision BIGINT NOT NULL, body TEXT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS demo_records_actor ON demo_records (actor);
CREATE TABLE IF NOT EXISTS demo_effects (
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, op_id TEXT NOT NULL, actor TEXT NOT NULL,
    kind TEXT NOT NULL, target TEXT NOT NULL, at BIGINT NOT NULL);";

/// One copy of the domain statements for both engines (they differ only in `FOR UPDATE`:
/// SQLite's `BEGIN IMMEDIATE` already serialises writers, PostgreSQL needs the row lock so
/// that two updates of one record cannot both pass the revision check).
macro_rules! demo_store {
    ($db:ty, $schema:expr, $lock:literal, $migrate:expr) => {
        impl DemoStore for $db {
            async fn migrate_domain(pool: &Pool<Self>) -> Result<(), sqlx::Error> {
                let mut tx = $migrate(pool).await?;
                for statement in $schema.split(';').filter(|s| !s.trim().is_empty()) {
                    sqlx::query(statement).execute(&mut *tx).await?;
                }
                tx.commit().await
            }

            async fn apply(
                tx: &mut Tx<Self>,
                actor: &str,
                key: &str,
                op: &DomainOp,
                now_ms: i64,
            ) -> Result<Answer, sqlx::Error> {
                let effect = |target: String| {
                    sqlx::query("INSERT INTO demo_effects (op_id, actor, kind, target, at) VALUES ($1, $2, $3, $4, $5)")
                        .bind(key.to_owned())
                        .bind(actor.to_owned())
                        .bind(op.kind())
                        .bind(target)
                        .bind(now_ms)
                };
                let (entity, id, revision) = match op {
                    DomainOp::Create { entity, body } => {
                        let row = sqlx::query(
                            "INSERT INTO demo_records (entity, actor, revision, body) VALUES ($1, $2, 1, $3) RETURNING id",
                        )
                        .bind(entity)
                        .bind(actor)
                        .bind(body.to_string())
                        .fetch_one(&mut **tx)
                        .await?;
                        let server_id = format!("{entity}:{}", row.try_get::<i64, _>(0)?);
                        effect(server_id.clone()).execute(&mut **tx).await?;
                        return Ok(Answer::new(StatusCode::CREATED, json!({"serverId": server_id, "revision": 1})));
                    }
                    DomainOp::Update { entity, id, revision, .. }
                    | DomainOp::Delete { entity, id, revision }
                    | DomainOp::Append { entity, id, revision, .. } => (entity, *id, *revision),
                };
                let server_id = format!("{entity}:{id}");
                let found = sqlx::query(concat!(
                    "SELECT entity, actor, revision, body FROM demo_records WHERE id = $1 AND deleted = 0",
                    $lock
                ))
                .bind(id)
                .fetch_optional(&mut **tx)
                .await?;
                let Some(row) = found.filter(|r| r.try_get::<String, _>(0).is_ok_and(|e| e == *entity)) else {
                    return Ok(Answer::new(StatusCode::NOT_FOUND, json!({"code": "NOT_FOUND", "serverId": server_id})));
                };
                let (owner, current, stored): (String, i64, String) = (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                let outcome = next_state(op, actor, &owner, current, revision, &stored);
                let (record, answer) = match outcome {
                    Change::Refuse(answer) => return Ok(answer),
                    Change::Write(record, answer) => (record, answer),
                };
                let next = current + 1;
                sqlx::query("UPDATE demo_records SET body = $1, revision = $2, deleted = $3 WHERE id = $4")
                    .bind(record.to_string())
                    .bind(next)
                    .bind(i64::from(matches!(op, DomainOp::Delete { .. })))
                    .bind(id)
                    .execute(&mut **tx)
                    .await?;
                effect(server_id.clone()).execute(&mut **tx).await?;
                let mut body = json!({"serverId": server_id, "revision": next});
                if let (Some(b), Some(extra)) = (body.as_object_mut(), answer.as_object()) {
                    b.extend(extra.clone());
                }
                Ok(Answer::new(StatusCode::OK, body))
            }

            async fn records(pool: &Pool<Self>, actor: &str) -> Result<Vec<Value>, sqlx::Error> {
                let rows = sqlx::query(
                    "SELECT entity, id, revision, body FROM demo_records WHERE actor = $1 AND deleted = 0 ORDER BY id LIMIT 10000",
                )
                .bind(actor)
                .fetch_all(pool)
                .await?;
                rows.iter()
                    .map(|r| {
                        let (entity, id, revision, body): (String, i64, i64, String) =
                            (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
                        Ok(json!({"serverId": format!("{entity}:{id}"), "revision": revision,
                                  "body": serde_json::from_str::<Value>(&body).unwrap_or(Value::Null)}))
                    })
                    .collect()
            }

            async fn effects(pool: &Pool<Self>, limit: i64) -> Result<Vec<Value>, sqlx::Error> {
                let rows = sqlx::query(
                    "SELECT op_id, actor, kind, target, COUNT(*) FROM demo_effects
                     GROUP BY op_id, actor, kind, target ORDER BY MIN(seq) LIMIT $1",
                )
                .bind(limit)
                .fetch_all(pool)
                .await?;
                rows.iter()
                    .map(|r| {
                        Ok(json!({"opId": r.try_get::<String, _>(0)?, "actor": r.try_get::<String, _>(1)?,
                                  "kind": r.try_get::<String, _>(2)?, "target": r.try_get::<String, _>(3)?,
                                  "count": r.try_get::<i64, _>(4)?}))
                    })
                    .collect()
            }
        }
    };
}

demo_store!(Sqlite, SQLITE_SCHEMA, "", sqlite_migration);
demo_store!(Postgres, POSTGRES_SCHEMA, " FOR UPDATE", postgres_migration);

async fn sqlite_migration(pool: &Pool<Sqlite>) -> Result<Tx<Sqlite>, sqlx::Error> {
    pool.begin_with("BEGIN IMMEDIATE").await
}

async fn postgres_migration(pool: &Pool<Postgres>) -> Result<Tx<Postgres>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    // Several processes may start at once (see the ledger's migration).
    sqlx::query("SELECT pg_advisory_xact_lock(7262960342)").execute(&mut *tx).await?;
    Ok(tx)
}

/// What an update, delete or append does to an existing record.
enum Change {
    /// Refused: this answer, nothing written.
    Refuse(Answer),
    /// The record's new body, and fields to add to the answer.
    Write(Value, Value),
}

fn next_state(op: &DomainOp, actor: &str, owner: &str, current: i64, base: Option<i64>, stored: &str) -> Change {
    if owner != actor {
        return Change::Refuse(Answer::new(StatusCode::FORBIDDEN, json!({"code": "FORBIDDEN"})));
    }
    if base.is_some_and(|r| r != current) {
        return Change::Refuse(Answer::new(
            StatusCode::PRECONDITION_FAILED,
            json!({"code": "REVISION_CONFLICT", "actualRevision": current}),
        ));
    }
    let mut record: Value = serde_json::from_str(stored).unwrap_or(json!({}));
    match op {
        DomainOp::Delete { .. } => Change::Write(record, json!({"deleted": true})),
        DomainOp::Update { body, .. } => {
            if let (Some(m), Some(b)) = (record.as_object_mut(), body.as_object()) {
                m.extend(b.clone());
            }
            Change::Write(record, json!({}))
        }
        DomainOp::Append { field, item, .. } => {
            let Some(list) = record.as_object_mut().map(|m| m.entry(field.clone()).or_insert_with(|| json!([]))) else {
                return Change::Refuse(Answer::error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "INVALID",
                    "record is not an object",
                ));
            };
            let Some(list) = list.as_array_mut() else {
                return Change::Refuse(Answer::error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID", "not a list"));
            };
            list.push(item.clone());
            let count = list.len();
            Change::Write(record, json!({"count": count}))
        }
        DomainOp::Create { .. } => Change::Refuse(Answer::error(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "")),
    }
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

fn base_revision(parts_if_match: Option<&str>) -> Result<Option<i64>, Response> {
    parts_if_match
        .map(|v| v.trim().trim_matches('"').parse())
        .transpose()
        .map_err(|_| error(StatusCode::BAD_REQUEST, "INVALID", "If-Match must be a revision number"))
}

impl<DB: DemoStore> Demo<DB> {
    async fn execute(&self, user: &User, req: Idempotent, op: DomainOp) -> Response {
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
        let revision = base_revision(headers.get("if-match").and_then(|v| v.to_str().ok()))?;
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
        let revision = base_revision(headers.get("if-match").and_then(|v| v.to_str().ok()))?;
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

async fn effects<DB: DemoStore>(State(d): Shared<DB>) -> Response {
    match DB::effects(d.gate.pool(), TEST_LIST_CAP as i64).await {
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

/// Answers `404` for any path with a segment starting with a dot (`.git`, `.env`, also
/// percent-encoded), before the static files are looked up.
async fn no_dotfiles(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_ascii_lowercase();
    if path.split('/').any(|s| s.starts_with('.') || s.starts_with("%2e")) {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "not found");
    }
    next.run(req).await
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
        .route("/api/receipts/{op_id}", get(receipt::<DB>));
    if test_endpoints {
        api = api.route("/api/effects", get(effects::<DB>)).route("/api/sessions/revoke", post(revoke::<DB>));
    }
    let mut router = api.layer(DefaultBodyLimit::max(MAX_BODY)).with_state(demo);
    if let Some(pkg) = pkg {
        router = router.nest_service("/pkg", ServeDir::new(pkg));
    }
    if let Some(www) = www {
        router = router.fallback_service(ServeDir::new(www));
    }
    Ok(router.layer(axum::middleware::from_fn(no_dotfiles)))
}
