//! A key reused by another request after its record was deleted (an orphan purged, or a
//! reservation released by a holder that took it over): the new record starts at fence 1
//! again, and a holder that outlived its lease, also at fence 1, must not complete it with
//! its own effect and answer under the other request's fingerprint (SPEC §14: another
//! payload under a key is refused, never answered with someone else's receipt).
#![cfg(feature = "postgres-tests")]

mod common;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use common::{Reply, TestDb};
use outbox_gate::{Answer, Config, Gate, Idempotent};
use serde_json::{json, Value};
use sqlx::Postgres;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

struct App {
    gate: Gate<Postgres>,
    /// A's first attempt waits here (holding the domain row lock) until the test says go.
    go_a: Notify,
    a_first: AtomicBool,
}

async fn op(State(app): State<Arc<App>>, req: Idempotent) -> Response {
    let who = req.json::<Value>().ok().flatten().and_then(|v| v["who"].as_str().map(str::to_owned)).unwrap();
    let wait = who == "A" && app.a_first.swap(false, Ordering::SeqCst);
    let app2 = app.clone();
    app.gate
        .run("ada", req, move |tx| {
            Box::pin(async move {
                // An ordinary read-then-write handler: lock the domain row first.
                sqlx::query("SELECT n FROM counter WHERE id = 1 FOR UPDATE").execute(&mut **tx).await?;
                if wait {
                    app2.go_a.notified().await;
                }
                sqlx::query("INSERT INTO things (who) VALUES ($1)").bind(&who).execute(&mut **tx).await?;
                Ok(Answer::new(StatusCode::OK, json!({"appliedBy": who})))
            })
        })
        .await
}

async fn setup(name: &str, lease_ms: u64, lock_timeout_ms: u64) -> (String, Arc<App>, sqlx::PgPool) {
    let pool = Postgres::fresh(name, Duration::from_millis(lock_timeout_ms)).await;
    sqlx::query("CREATE TABLE things (who TEXT)").execute(&pool).await.unwrap();
    sqlx::query("CREATE TABLE counter (id INT PRIMARY KEY, n INT)").execute(&pool).await.unwrap();
    sqlx::query("INSERT INTO counter VALUES (1, 0)").execute(&pool).await.unwrap();
    let config = Config { lease: Duration::from_millis(lease_ms), ..Config::default() };
    let gate = Gate::new(pool.clone(), config).await.unwrap();
    let app = Arc::new(App { gate, go_a: Notify::new(), a_first: AtomicBool::new(true) });
    let router = Router::new().route("/op", post(op)).with_state(app.clone());
    let base = common::serve(router).await;
    (base, app, pool)
}

async fn send(base: &str, who: &str) -> Reply {
    Reply::of(
        reqwest::Client::new()
            .post(format!("{base}/op"))
            .header("Idempotency-Key", "k")
            .json(&json!({"who": who}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn applied(pool: &sqlx::PgPool) -> Vec<String> {
    sqlx::query_scalar("SELECT who FROM things ORDER BY who").fetch_all(pool).await.unwrap()
}

/// A's stale attempt rolls back (its fence and key now name C's record); C, the request
/// that holds the key, is applied and answered with its own answer, then replayed; A under
/// the key C used is refused. Without the fingerprint check A was applied under C's record
/// and C's resend was told it had succeeded, with A's answer.
async fn assert_outcome(a: &Reply, c: &Reply, c2: &Reply, a2: &Reply, pool: &sqlx::PgPool) {
    assert_eq!(applied(pool).await, vec!["C".to_owned()], "only the request holding the key was applied");
    assert_eq!(a.status, 409, "A's stale attempt is not a success: {a:?}");
    assert_eq!((c.status, &c.body["appliedBy"]), (200, &json!("C")), "{c:?}");
    assert_eq!((c2.status, c2.replayed, &c2.body["appliedBy"]), (200, true, &json!("C")), "{c2:?}");
    assert_eq!(a2.status, 422, "{a2:?}");
}

/// C reuses the key (reserved at fence 1 and waiting `wait_ms` on A's row lock), then A,
/// whose lease ended, finishes; each is sent again.
async fn reuse_while_a_is_late(
    base: &str,
    app: &App,
    a: tokio::task::JoinHandle<Reply>,
    wait_ms: u64,
    pool: &sqlx::PgPool,
) {
    let b = base.to_owned();
    let c = tokio::spawn(async move { send(&b, "C").await });
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    app.go_a.notify_one();
    let a = a.await.unwrap();
    let c = c.await.unwrap();
    println!("A first: {a:?}\nC first: {c:?}");
    let c2 = send(base, "C").await;
    let a2 = send(base, "A").await;
    println!("C resend: {c2:?}\nA resend: {a2:?}\napplied: {:?}", applied(pool).await);
    assert_outcome(&a, &c, &c2, &a2, pool).await;
}

/// Variant 1: the periodic purge removes A's reservation (lease ended, A still working).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_whose_record_was_purged_does_not_complete_the_next_request_under_its_key() {
    let (base, app, pool) = setup("attack_purge", 300, 5_000).await;
    let b = base.clone();
    let a = tokio::spawn(async move { send(&b, "A").await });
    tokio::time::sleep(Duration::from_millis(500)).await; // A's lease is over; A still runs
    let purged = app.gate.purge(outbox_gate::gate::now_ms()).await.unwrap();
    assert_eq!(purged.orphaned, 1, "A's live reservation was purged");
    // C: another request under the same key, reserved at fence 1 again.
    reuse_while_a_is_late(&base, &app, a, 300, &pool).await;
}

/// Variant 2, no purge: B (same request as A) takes A's expired reservation over (fence 2),
/// waits for A's row lock, hits lock_timeout and releases (DELETE) the record; C reuses the
/// key and inserts fence 1 again; A's completion (fence 1) lands on C's record.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_holder_whose_record_was_released_does_not_complete_the_next_request_under_its_key() {
    let (base, app, pool) = setup("attack_release", 300, 700).await;
    let b = base.clone();
    let a = tokio::spawn(async move { send(&b, "A").await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let b_reply = send(&base, "A").await; // the same operation resent: takeover, then lock timeout
    println!("B (resend of A): {b_reply:?}");
    assert_eq!(b_reply.status, 503, "B took over, timed out on A's lock, released the key");
    reuse_while_a_is_late(&base, &app, a, 200, &pool).await;
}
