//! What the gate's tests share: a database of each engine per test, the demo app on
//! loopback, and an HTTP client.
#![allow(dead_code, unreachable_pub)]

use outbox_gate::demo::{self, DemoOptions, DemoStore};
use outbox_gate::{Config, Gate};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Pool, Postgres, Sqlite, Transaction};
use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

/// An engine the conformance suite runs on.
pub trait TestDb: DemoStore {
    /// A fresh, empty database (or schema) named after the test.
    fn fresh(name: &str, lock_timeout: Duration) -> impl Future<Output = Pool<Self>> + Send;
    /// Another connection takes and holds the lock the gate's next write needs.
    fn hold_write_lock(pool: &Pool<Self>) -> impl Future<Output = Transaction<'static, Self>> + Send;
}

impl TestDb for Sqlite {
    async fn fresh(name: &str, lock_timeout: Duration) -> Pool<Sqlite> {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gate-{name}.sqlite"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        // As outbox_gate::pools::sqlite_file, with the test's lock timeout.
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(lock_timeout);
        SqlitePoolOptions::new().max_connections(8).connect_with(options).await.unwrap()
    }

    async fn hold_write_lock(pool: &Pool<Sqlite>) -> Transaction<'static, Sqlite> {
        pool.begin_with("BEGIN IMMEDIATE").await.unwrap()
    }
}

impl TestDb for Postgres {
    async fn fresh(name: &str, lock_timeout: Duration) -> Pool<Postgres> {
        let url = std::env::var("DATABASE_URL")
            .expect("DATABASE_URL: run the PostgreSQL tests through scripts/pg.sh (see the README)");
        let schema = format!("t_{name}");
        let admin = PgPoolOptions::new().max_connections(1).connect(&url).await.unwrap();
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).execute(&admin).await.unwrap();
        sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap();
        admin.close().await;
        let options = PgConnectOptions::from_str(&url)
            .unwrap()
            .options([("search_path", schema), ("lock_timeout", format!("{}ms", lock_timeout.as_millis()))]);
        PgPoolOptions::new().max_connections(16).connect_with(options).await.unwrap()
    }

    async fn hold_write_lock(pool: &Pool<Postgres>) -> Transaction<'static, Postgres> {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("LOCK TABLE gate_idempotency IN ACCESS EXCLUSIVE MODE").execute(&mut *tx).await.unwrap();
        tx
    }
}

/// The demo app on a loopback port of its own.
pub struct Server<DB: TestDb> {
    pub base: String,
    pub pool: Pool<DB>,
    pub gate: std::sync::Arc<Gate<DB>>,
}

/// How a test's server runs.
pub struct Setup {
    pub config: Config,
    pub lock_timeout: Duration,
    pub options: DemoOptions,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            config: Config::default(),
            lock_timeout: Duration::from_secs(5),
            options: DemoOptions { test_endpoints: true, ..DemoOptions::default() },
        }
    }
}

pub async fn start<DB: TestDb>(name: &str, setup: Setup) -> Server<DB> {
    let pool = DB::fresh(name, setup.lock_timeout).await;
    let app = demo::app(Gate::new(pool.clone(), setup.config).await.unwrap(), setup.options).await.unwrap();
    // A second gate over the same pool, for the tests' direct calls (purge).
    let gate = std::sync::Arc::new(Gate::new(pool.clone(), setup.config).await.unwrap());
    Server { base: serve(app).await, pool, gate }
}

/// Serves `app` on a free loopback port for the rest of the test, as the demo server does
/// (`demo::serve`, its default timeouts); its base URL.
pub async fn serve(app: axum::Router) -> String {
    serve_with(app, demo::Timeouts::default()).await
}

/// [`serve`] with these timeouts.
pub async fn serve_with(app: axum::Router, timeouts: demo::Timeouts) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { demo::serve(listener, app, timeouts, std::future::pending()).await.unwrap() });
    base
}

/// An answer as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub replayed: bool,
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Reply {
    pub async fn of(resp: reqwest::Response) -> Reply {
        let status = resp.status().as_u16();
        let replayed = resp.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
        let retry_after = resp.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
        let body = resp.json().await.unwrap_or(Value::Null);
        Reply { status, replayed, retry_after, body }
    }
}

/// A request as the outbox sends it: `Bearer <actor>.<session>` (the demo's stand-in
/// login), `Idempotency-Key`, JSON body, optional `If-Match`.
pub fn request(
    client: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    actor: &str,
    key: &str,
    body: Option<&Value>,
) -> reqwest::RequestBuilder {
    let mut req = client
        .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{base}{path}"))
        .header("Authorization", format!("Bearer {actor}.s1"))
        .header("Idempotency-Key", key);
    if let Some(body) = body {
        req = req.json(body);
    }
    req
}

pub async fn call(base: &str, method: &str, path: &str, actor: &str, key: &str, body: Value) -> Reply {
    let body = (!body.is_null()).then_some(body);
    Reply::of(request(&reqwest::Client::new(), base, method, path, actor, key, body.as_ref()).send().await.unwrap())
        .await
}

/// How many times the operation `key` took effect.
pub async fn effects_of<DB: TestDb>(pool: &Pool<DB>, key: &str) -> i64 {
    DB::effects(pool, None, 100_000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e["opId"] == key)
        .map(|e| e["count"].as_i64().unwrap())
        .sum()
}
