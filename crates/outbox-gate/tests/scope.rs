//! The app's scope (issue 32 item 9): a tenant the app takes from `Host` (or any part of the
//! request it trusts) is part of the ledger's key, so one tenant is never answered with
//! another's receipt, on either engine; the API without a scope is unchanged; a ledger made
//! before scopes is migrated at start and its records still answer.

mod common;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use common::{Reply, TestDb};
use outbox_gate::{Answer, Caller, Config, Gate, Idempotent};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

fn host(headers: &HeaderMap) -> String {
    headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned()
}

/// The scopes' app, on each engine: `POST /op` and `GET /receipts/{key}` in the scope of
/// the request's `Host`, `POST /plain` and `GET /plain/{key}` through the API without one.
/// A write stores the scope it ran in: `201 {"tenant": ...}`.
macro_rules! app {
    ($db:ty) => {
        async fn write(gate: &Gate<$db>, caller: Caller<'_>, req: Idempotent) -> Response {
            let tenant = caller.scope.to_owned();
            gate.run(caller, req, move |tx| {
                Box::pin(async move {
                    sqlx::query("INSERT INTO things (tenant) VALUES ($1)").bind(&tenant).execute(&mut **tx).await?;
                    Ok(Answer::new(StatusCode::CREATED, json!({ "tenant": tenant })))
                })
            })
            .await
        }

        async fn op(State(gate): State<Arc<Gate<$db>>>, headers: HeaderMap, req: Idempotent) -> Response {
            let tenant = host(&headers);
            write(&gate, Caller::scoped(&tenant, "ada"), req).await
        }

        async fn receipt(State(gate): State<Arc<Gate<$db>>>, headers: HeaderMap, Path(key): Path<String>) -> Response {
            gate.receipt(Caller::scoped(&host(&headers), "ada"), &key).await
        }

        async fn plain(State(gate): State<Arc<Gate<$db>>>, req: Idempotent) -> Response {
            write(&gate, "ada".into(), req).await
        }

        async fn plain_receipt(State(gate): State<Arc<Gate<$db>>>, Path(key): Path<String>) -> Response {
            gate.receipt("ada", &key).await
        }

        async fn serve(pool: &sqlx::Pool<$db>) -> String {
            let gate = Arc::new(Gate::new(pool.clone(), Config::default()).await.unwrap());
            let app = Router::new()
                .route("/op", post(op))
                .route("/receipts/{key}", get(receipt))
                .route("/plain", post(plain))
                .route("/plain/{key}", get(plain_receipt))
                .with_state(gate);
            common::serve(app).await
        }

        async fn tenants(pool: &sqlx::Pool<$db>) -> Vec<String> {
            sqlx::query_scalar("SELECT tenant FROM things ORDER BY tenant").fetch_all(pool).await.unwrap()
        }
    };
}

async fn send(base: &str, path: &str, host: &str, key: &str) -> Reply {
    let req = reqwest::Client::new().post(format!("{base}{path}")).header("Host", host);
    Reply::of(req.header("Idempotency-Key", key).json(&json!({"x": 1})).send().await.unwrap()).await
}

async fn receipt_of(base: &str, path: &str, host: &str) -> (u16, Value) {
    let resp = reqwest::Client::new().get(format!("{base}{path}")).header("Host", host).send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// The same request under one key in two tenants: two records, two effects, and each
/// tenant's receipt is its own. Without the scope, tenant b got `201` with tenant a's
/// answer (never applied) and b's receipt lookup returned a's.
async fn two_tenants_under_one_key_are_two_records(base: &str) {
    let a = send(base, "/op", "a.example", "k1").await;
    assert_eq!((a.status, a.replayed, a.body.clone()), (201, false, json!({"tenant": "a.example"})));
    let again = send(base, "/op", "a.example", "k1").await;
    assert_eq!((again.status, again.replayed, again.body), (201, true, a.body), "a's resend is replayed");
    let b = send(base, "/op", "b.example", "k1").await;
    assert_eq!((b.status, b.replayed, b.body), (201, false, json!({"tenant": "b.example"})), "b's own");
    assert_eq!(receipt_of(base, "/receipts/k1", "a.example").await, (200, json!({"tenant": "a.example"})));
    assert_eq!(receipt_of(base, "/receipts/k1", "b.example").await, (200, json!({"tenant": "b.example"})));
    assert_eq!(receipt_of(base, "/receipts/k1", "c.example").await.0, 404, "c has no record");
    assert_eq!(receipt_of(base, "/plain/k1", "a.example").await.0, 404, "nor the empty scope");
    // A scope beyond 255 bytes is refused, nothing reserved or applied.
    let long = format!("{}.example", "x".repeat(250));
    let r = send(base, "/op", &long, "k2").await;
    assert_eq!((r.status, r.body["code"].as_str()), (400, Some("INVALID_SCOPE")));
    assert_eq!(receipt_of(base, "/receipts/k2", &long).await.0, 400);
}

/// The tests, on one engine: the old ledger's statements (its table, its index and one
/// completed answer under key `old` for `POST /plain {"x":1}`, whose fingerprint is bound
/// to `$1`), and queries for the primary key's columns in order and the purge index.
macro_rules! scope_tests {
    ($db:ty, old: $old:expr, primary_key: $pk:expr, purge_index: $index:expr) => {
        app!($db);

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_tenant_never_gets_another_tenants_receipt() {
            let pool = <$db>::fresh("scope_tenants", Duration::from_secs(5)).await;
            sqlx::query("CREATE TABLE things (tenant TEXT)").execute(&pool).await.unwrap();
            let base = serve(&pool).await;
            two_tenants_under_one_key_are_two_records(&base).await;
            assert_eq!(tenants(&pool).await, ["a.example", "b.example"]);
        }

        /// A ledger made before scopes, `(actor, key)` its primary key, with one completed
        /// answer: migrated at start (SQLite: made again; PostgreSQL: a column added and
        /// the key replaced), the answer is still replayed through the API without a
        /// scope, and the same key is free in a tenant.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_ledger_made_before_scopes_is_migrated_and_still_answers() {
            let pool = <$db>::fresh("scope_migration", Duration::from_secs(5)).await;
            sqlx::query("CREATE TABLE things (tenant TEXT)").execute(&pool).await.unwrap();
            let fp = outbox_gate::request::fingerprint("POST", "/plain", None, br#"{"x":1}"#);
            for statement in $old {
                let query = sqlx::query(statement);
                let query = if statement.contains("$1") { query.bind(&fp) } else { query };
                query.execute(&pool).await.unwrap();
            }
            let base = serve(&pool).await;
            let old = send(&base, "/plain", "a.example", "old").await;
            assert_eq!((old.status, old.replayed, old.body), (201, true, json!({"tenant": "before"})));
            assert_eq!(receipt_of(&base, "/plain/old", "a.example").await, (200, json!({"tenant": "before"})));
            let scoped = send(&base, "/op", "a.example", "old").await;
            assert_eq!((scoped.status, scoped.replayed), (201, false), "another scope's record");
            assert_eq!(tenants(&pool).await, ["a.example"]);
            let key: Vec<String> = sqlx::query_scalar($pk).fetch_all(&pool).await.unwrap();
            assert_eq!(key, ["scope", "actor", "key"]);
            let index: i64 = sqlx::query_scalar($index).fetch_one(&pool).await.unwrap();
            assert_eq!(index, 1, "the purge index");
            // Started again, nothing is migrated twice.
            let again = serve(&pool).await;
            assert_eq!(receipt_of(&again, "/plain/old", "a.example").await.0, 200);
        }
    };
}

mod sqlite {
    use super::*;
    use sqlx::Sqlite;

    scope_tests!(
        Sqlite,
        old: [
            "CREATE TABLE gate_idempotency (actor TEXT NOT NULL, key TEXT NOT NULL, operation TEXT NOT NULL,
                fingerprint TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('processing', 'completed')),
                fence INTEGER NOT NULL, lease_until INTEGER NOT NULL, response_status INTEGER, response_body TEXT,
                created_at INTEGER NOT NULL, completed_at INTEGER, expires_at INTEGER, PRIMARY KEY (actor, key))",
            "CREATE INDEX gate_idempotency_purge ON gate_idempotency (status, expires_at)",
            "INSERT INTO gate_idempotency VALUES ('ada', 'old', 'POST /plain', $1, 'completed', 1, 0, 201,
                '{\"tenant\":\"before\"}', 0, 0, 9000000000000)",
        ],
        primary_key: "SELECT name FROM pragma_table_info('gate_idempotency') WHERE pk > 0 ORDER BY pk",
        purge_index: "SELECT COUNT(*) FROM sqlite_master
            WHERE name = 'gate_idempotency_purge' AND tbl_name = 'gate_idempotency'"
    );
}

/// Needs PostgreSQL: `scripts/pg.sh cargo test -p outbox-gate --features postgres-tests`.
#[cfg(feature = "postgres-tests")]
mod postgres {
    use super::*;
    use sqlx::Postgres;

    scope_tests!(
        Postgres,
        old: [
            "CREATE TABLE gate_idempotency (actor TEXT NOT NULL, key TEXT NOT NULL, operation TEXT NOT NULL,
                fingerprint TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('processing', 'completed')),
                fence BIGINT NOT NULL, lease_until TIMESTAMPTZ NOT NULL, response_status INTEGER,
                response_body TEXT, created_at TIMESTAMPTZ NOT NULL, completed_at TIMESTAMPTZ,
                expires_at TIMESTAMPTZ, PRIMARY KEY (actor, key))",
            "CREATE INDEX gate_idempotency_purge ON gate_idempotency (status, expires_at)",
            "INSERT INTO gate_idempotency VALUES ('ada', 'old', 'POST /plain', $1, 'completed', 1, now(), 201,
                '{\"tenant\":\"before\"}', now(), now(), now() + interval '1 day')",
        ],
        primary_key: "SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
              AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'gate_idempotency'::regclass AND i.indisprimary
            ORDER BY array_position(i.indkey::int2[], a.attnum)",
        purge_index: "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema()
            AND tablename = 'gate_idempotency' AND indexname = 'gate_idempotency_purge'"
    );
}
