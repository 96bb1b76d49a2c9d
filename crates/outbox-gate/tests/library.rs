//! The gate used directly by an app of its own (no demo): a handler that panics, a
//! serialization failure on PostgreSQL.

mod common;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use common::TestDb;
use outbox_gate::{Answer, Config, Gate, Idempotent};
use serde_json::json;
use sqlx::Sqlite;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

static PANIC: AtomicBool = AtomicBool::new(true);

async fn boom(State(gate): State<Arc<Gate<Sqlite>>>, req: Idempotent) -> Response {
    gate.run("ada", req, |tx| {
        Box::pin(async move {
            sqlx::query("INSERT INTO things (n) VALUES (1)").execute(&mut **tx).await?;
            assert!(!PANIC.load(Ordering::SeqCst), "the handler's bug");
            Ok(Answer::new(StatusCode::CREATED, json!({"ok": true})))
        })
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_panics_is_answered_500_rolled_back_and_its_key_released() {
    let pool = Sqlite::fresh("library_panic", Duration::from_secs(5)).await;
    sqlx::query("CREATE TABLE things (n INTEGER)").execute(&pool).await.unwrap();
    // A lease far longer than the test: only the release can free the key in time.
    let config = Config { lease: Duration::from_secs(3600), ..Config::default() };
    let gate = Arc::new(Gate::new(pool.clone(), config).await.unwrap());
    let app = Router::new().route("/boom", post(boom)).with_state(gate);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let send =
        || reqwest::Client::new().post(format!("{base}/boom")).header("Idempotency-Key", "k").json(&json!({})).send();

    let first = send().await.unwrap();
    assert_eq!(first.status(), 500);
    assert_eq!(first.json::<serde_json::Value>().await.unwrap()["code"], "INTERNAL");
    PANIC.store(false, Ordering::SeqCst);
    // The release runs in the background; give it a moment, never the lease.
    let mut status = 0;
    for _ in 0..50 {
        status = send().await.unwrap().status().as_u16();
        if status != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 201);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM things").fetch_one(&pool).await.unwrap();
    assert_eq!(rows, 1, "the panicked attempt's write rolled back");
}

/// Needs PostgreSQL: `scripts/pg.sh cargo test -p outbox-gate --features postgres-tests`.
#[cfg(feature = "postgres-tests")]
mod postgres {
    use super::*;

    static SERIALIZATION_FAILURE: AtomicBool = AtomicBool::new(true);

    async fn contended(State(gate): State<Arc<Gate<sqlx::Postgres>>>, req: Idempotent) -> Response {
        gate.run("ada", req, |tx| {
            Box::pin(async move {
                sqlx::query("INSERT INTO things (n) VALUES (1)").execute(&mut **tx).await?;
                if SERIALIZATION_FAILURE.load(Ordering::SeqCst) {
                    // What PostgreSQL raises when a SERIALIZABLE transaction loses a conflict.
                    sqlx::query(
                        "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$",
                    )
                    .execute(&mut **tx)
                    .await?;
                }
                Ok(Answer::new(StatusCode::CREATED, json!({"ok": true})))
            })
        })
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_serialization_failure_is_503_with_retry_after_rolled_back_and_the_key_free() {
        let pool = sqlx::Postgres::fresh("library_serialization", Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE things (n INTEGER)").execute(&pool).await.unwrap();
        let config = Config { lease: Duration::from_secs(3600), ..Config::default() };
        let gate = Arc::new(Gate::new(pool.clone(), config).await.unwrap());
        let app = Router::new().route("/contended", post(contended)).with_state(gate);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let send = || {
            reqwest::Client::new()
                .post(format!("{base}/contended"))
                .header("Idempotency-Key", "k")
                .json(&json!({}))
                .send()
        };

        let first = send().await.unwrap();
        assert_eq!(first.status(), 503);
        assert!(first.headers().contains_key("retry-after"));
        let body: serde_json::Value = first.json().await.unwrap();
        assert_eq!(body, json!({"code": "BUSY", "message": "the server is busy; retry later"}), "no database text");
        SERIALIZATION_FAILURE.store(false, Ordering::SeqCst);
        let retry = send().await.unwrap();
        assert_eq!(retry.status(), 201, "the key was released at once");
        assert!(!retry.headers().contains_key("idempotent-replayed"));
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM things").fetch_one(&pool).await.unwrap();
        assert_eq!(rows, 1, "the failed attempt's write rolled back");
    }
}
