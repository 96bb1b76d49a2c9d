//! The gate used directly by an app of its own (no demo): a handler that panics, answers
//! the client resends (not stored) and final ones (stored), a serialization failure on
//! PostgreSQL.

mod common;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use common::{Reply, TestDb};
use outbox_gate::{Answer, Config, Gate, Idempotent};
use serde_json::json;
use sqlx::Sqlite;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
    let base = common::serve(app).await;
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

/// A handler that writes a row, then answers `first` on its first run and `201` after.
struct Flaky {
    gate: Gate<Sqlite>,
    first: Answer,
    runs: Arc<AtomicUsize>,
}

async fn flaky(State(app): State<Arc<Flaky>>, req: Idempotent) -> Response {
    let (first, runs) = (app.first.clone(), app.runs.clone());
    app.gate
        .run("ada", req, move |tx| {
            Box::pin(async move {
                sqlx::query("INSERT INTO things (n) VALUES (1)").execute(&mut **tx).await?;
                let first_run = runs.fetch_add(1, Ordering::SeqCst) == 0;
                Ok(if first_run { first } else { Answer::new(StatusCode::CREATED, json!({"ok": true})) })
            })
        })
        .await
}

/// [`flaky`] on loopback.
struct FlakyServer {
    base: String,
    pool: sqlx::SqlitePool,
    runs: Arc<AtomicUsize>,
}

impl FlakyServer {
    /// With a lease far longer than the test: only a release can free the key in time.
    async fn start(name: &str, first: Answer) -> FlakyServer {
        FlakyServer::with_lease(name, first, Duration::from_secs(3600)).await
    }

    async fn with_lease(name: &str, first: Answer, lease: Duration) -> FlakyServer {
        let pool = Sqlite::fresh(name, Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE things (n INTEGER)").execute(&pool).await.unwrap();
        let config = Config { lease, ..Config::default() };
        let gate = Gate::new(pool.clone(), config).await.unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let app =
            Router::new().route("/flaky", post(flaky)).with_state(Arc::new(Flaky { gate, first, runs: runs.clone() }));
        let base = common::serve(app).await;
        FlakyServer { base, pool, runs }
    }

    /// The request, always with the key `k`.
    async fn send(&self) -> Reply {
        let req = reqwest::Client::new().post(format!("{}/flaky", self.base)).header("Idempotency-Key", "k");
        Reply::of(req.json(&json!({})).send().await.unwrap()).await
    }

    async fn rows(&self) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM things").fetch_one(&self.pool).await.unwrap()
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

/// An answer the client resends with the same key (§10) is given as is, not stored; its
/// writes roll back and the resend runs the handler again, which then completes once.
async fn not_stored(name: &str, first: Answer) {
    let s = FlakyServer::start(name, first.clone()).await;
    let reply = s.send().await;
    assert_eq!((reply.status, reply.replayed, reply.body), (first.status.as_u16(), false, first.body));
    let resend = s.send().await;
    assert_eq!((resend.status, resend.replayed), (201, false), "the handler ran again: {resend:?}");
    assert_eq!(s.runs(), 2);
    assert_eq!(s.rows().await, 1, "the first attempt's write rolled back");
    let again = s.send().await;
    assert_eq!((again.status, again.replayed, s.runs()), (201, true, 2), "the 201 is stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_answer_is_not_stored_its_writes_roll_back_and_the_resend_runs_the_handler() {
    not_stored("library_503", Answer::error(StatusCode::SERVICE_UNAVAILABLE, "DOWNSTREAM", "payments are down")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_answer_is_not_stored_its_writes_roll_back_and_the_resend_runs_the_handler() {
    not_stored("library_401", Answer::error(StatusCode::UNAUTHORIZED, "SESSION_EXPIRED", "log in again")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_409_in_progress_answer_is_not_stored_and_the_resend_runs_the_handler() {
    not_stored("library_409", Answer::error(StatusCode::CONFLICT, "IN_PROGRESS", "still running")).await;
}

/// A final answer (§10: 2xx, 4xx but 401, 408, 429 and 409 IN_PROGRESS) is stored with
/// the handler's writes and replayed to the resend, which does not run the handler again.
async fn stored(name: &str, first: Answer) {
    let s = FlakyServer::start(name, first.clone()).await;
    let reply = s.send().await;
    assert_eq!((reply.status, reply.replayed, reply.body), (first.status.as_u16(), false, first.body.clone()));
    let resend = s.send().await;
    assert_eq!((resend.status, resend.replayed, resend.body), (first.status.as_u16(), true, first.body));
    assert_eq!(s.runs(), 1, "replayed, not run again");
    assert_eq!(s.rows().await, 1, "committed with the stored answer");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_404_answer_is_final_stored_and_replayed_without_running_the_handler_again() {
    stored("library_404", Answer::error(StatusCode::NOT_FOUND, "NOT_FOUND", "no such record")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_409_answer_of_the_domain_is_final_stored_and_replayed() {
    stored("library_409_domain", Answer::error(StatusCode::CONFLICT, "ALREADY_BOOKED", "the slot is taken")).await;
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
        let base = common::serve(app).await;
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

    /// The ledger table as versions before 2026-12-03 made it (the answer as `JSONB`), with
    /// one completed answer under key `old` for the request `echo` tests send.
    fn old_jsonb_ledger() -> String {
        let fp = outbox_gate::request::fingerprint("POST", "/echo", None, br#"{"note":"a\u0000b"}"#);
        format!(
            "CREATE TABLE gate_idempotency (
                actor TEXT NOT NULL, key TEXT NOT NULL, operation TEXT NOT NULL, fingerprint TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('processing', 'completed')), fence BIGINT NOT NULL,
                lease_until TIMESTAMPTZ NOT NULL, response_status INTEGER, response_body JSONB,
                created_at TIMESTAMPTZ NOT NULL, completed_at TIMESTAMPTZ, expires_at TIMESTAMPTZ,
                PRIMARY KEY (actor, key));
            INSERT INTO gate_idempotency VALUES ('ada', 'old', 'POST /echo', '{fp}', 'completed', 1, now(), 201,
                '{{\"stored\": \"before\"}}', now(), now(), now() + interval '1 day')"
        )
    }

    async fn echo(State(gate): State<Arc<Gate<sqlx::Postgres>>>, req: Idempotent) -> Response {
        let note = req.json::<serde_json::Value>().ok().flatten().unwrap_or_default()["note"].clone();
        gate.run("ada", req, move |tx| {
            Box::pin(async move {
                sqlx::query("INSERT INTO things (n) VALUES (1)").execute(&mut **tx).await?;
                Ok(Answer::new(StatusCode::CREATED, json!({"note": note, "z": 1, "a": 2})))
            })
        })
        .await
    }

    /// An answer holding U+0000 (the app echoes user input) is stored and replayed. Kept as
    /// `JSONB` it was refused at commit (22P05): every attempt answered 500, nothing applied,
    /// the row sent again for ever. And a ledger an earlier version made with a `JSONB`
    /// column is turned into text at start, its stored answers still replayed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_with_u0000_is_stored_and_an_older_jsonb_ledger_is_migrated() {
        let pool = sqlx::Postgres::fresh("library_nul", Duration::from_secs(5)).await;
        sqlx::query("CREATE TABLE things (n INTEGER)").execute(&pool).await.unwrap();
        // The earlier version's table, with one completed answer in it.
        let old = old_jsonb_ledger();
        for statement in old.split(';').filter(|s| !s.trim().is_empty()) {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        let gate = Arc::new(Gate::new(pool.clone(), Config::default()).await.unwrap());
        let kind: String = sqlx::query_scalar(
            "SELECT data_type::text FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name = 'gate_idempotency' AND column_name = 'response_body'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(kind, "text", "migrated");
        let app = Router::new().route("/echo", post(echo)).with_state(gate);
        let base = common::serve(app).await;
        let send = |key: &str| {
            reqwest::Client::new()
                .post(format!("{base}/echo"))
                .header("Idempotency-Key", key)
                .json(&json!({"note": "a\u{0}b"}))
                .send()
        };
        let first = send("nul").await.unwrap();
        assert_eq!(first.status(), 201);
        let first_bytes = first.bytes().await.unwrap();
        let again = send("nul").await.unwrap();
        assert_eq!(again.status(), 201);
        assert!(again.headers().contains_key("idempotent-replayed"));
        assert_eq!(again.bytes().await.unwrap(), first_bytes, "the same bytes replayed");
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM things").fetch_one(&pool).await.unwrap();
        assert_eq!(rows, 1, "applied once");
        // The answer stored before the migration is still replayed.
        let old = send("old").await.unwrap();
        assert_eq!(old.status(), 201);
        assert!(old.headers().contains_key("idempotent-replayed"));
        assert_eq!(old.json::<serde_json::Value>().await.unwrap(), json!({"stored": "before"}));
    }
}

struct Tenants {
    gate: Gate<Sqlite>,
}

/// Applies `value` once per key: a row of `things` with it in `column`, answered
/// `201 {column: value}`.
async fn insert_one(gate: &Gate<Sqlite>, req: Idempotent, column: &'static str, value: String) -> Response {
    gate.run("ada", req, move |tx| {
        Box::pin(async move {
            sqlx::query(&format!("INSERT INTO things ({column}) VALUES ($1)")).bind(&value).execute(&mut **tx).await?;
            Ok(Answer::new(StatusCode::CREATED, json!({ column: value })))
        })
    })
    .await
}

async fn tenant_op(
    State(app): State<Arc<Tenants>>,
    axum::extract::Path(tenant): axum::extract::Path<String>,
    req: Idempotent,
) -> Response {
    insert_one(&app.gate, req, "tenant", tenant).await
}

/// SPEC §14 (another request under a key is refused with 422, never answered with someone
/// else's receipt): inside a nested router the path the handler sees has lost its prefix,
/// so `/t/a/op` and `/t/b/op` under one key used to share a fingerprint — tenant b got a 201
/// replay of tenant a's answer and was never applied. The gate fingerprints the URI the
/// client sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_router_fingerprints_the_full_path() {
    let pool = Sqlite::fresh("library_nested", Duration::from_secs(5)).await;
    sqlx::query("CREATE TABLE things (tenant TEXT)").execute(&pool).await.unwrap();
    let gate = Gate::new(pool.clone(), Config::default()).await.unwrap();
    let api = Router::new().route("/op", post(tenant_op));
    let app = Router::new().nest("/t/{tenant}", api).with_state(Arc::new(Tenants { gate }));
    let base = common::serve(app).await;
    let client = reqwest::Client::new();
    let send = |tenant: &str| {
        client.post(format!("{base}/t/{tenant}/op")).header("Idempotency-Key", "k1").json(&json!({"x": 1})).send()
    };
    let a = Reply::of(send("a").await.unwrap()).await;
    assert_eq!(a.status, 201, "{a:?}");
    let again = Reply::of(send("a").await.unwrap()).await;
    assert_eq!((again.status, again.body["tenant"].as_str()), (201, Some("a")), "a's resend is replayed");
    let b = Reply::of(send("b").await.unwrap()).await;
    assert_eq!(b.status, 422, "tenant b's request is another request under the key: {b:?}");
    let applied: Vec<String> = sqlx::query_scalar("SELECT tenant FROM things").fetch_all(&pool).await.unwrap();
    assert_eq!(applied, vec!["a".to_owned()]);
}

async fn store_body(State(gate): State<Arc<Gate<Sqlite>>>, req: Idempotent) -> Response {
    let body = String::from_utf8_lossy(req.body()).into_owned();
    insert_one(&gate, req, "body", body).await
}

/// SPEC §14 through the gate: bodies the fingerprint used to confuse (an integer beyond
/// 2^53 and its nearest double, a body that is not JSON and the JSON naming its hash, a key
/// named twice and the object with its last value) are other requests under a used key:
/// `422`, and only the first is applied. Fails with the fingerprint of before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_differ_only_where_json_loses_precision_are_two_requests() {
    use sha2::{Digest, Sha256};
    let pool = Sqlite::fresh("library_fingerprint", Duration::from_secs(5)).await;
    sqlx::query("CREATE TABLE things (body TEXT)").execute(&pool).await.unwrap();
    let gate = Arc::new(Gate::new(pool.clone(), Config::default()).await.unwrap());
    let base = common::serve(Router::new().route("/op", post(store_body)).with_state(gate));
    let base = base.await;
    let client = reqwest::Client::new();
    let send = |key: &'static str, body: String| {
        let req = client.post(format!("{base}/op")).header("Idempotency-Key", key).body(body);
        async move { Reply::of(req.send().await.unwrap()).await }
    };
    let not_json = "not json".to_owned();
    let its_hash = format!(
        r#"{{"bytes":"{}"}}"#,
        Sha256::digest(b"not json").iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let pairs = [
        ("big", r#"{"n":9007199254740993}"#.to_owned(), r#"{"n":9007199254740992}"#.to_owned()),
        ("raw", not_json, its_hash),
        ("twice", r#"{"a":1,"a":2}"#.to_owned(), r#"{"a":2}"#.to_owned()),
    ];
    for (key, first, second) in &pairs {
        let a = send(key, first.clone()).await;
        assert_eq!(a.status, 201, "{key}: {a:?}");
        let again = send(key, first.clone()).await;
        assert_eq!((again.status, &again.body["body"]), (201, &json!(first)), "{key}: the resend is replayed");
        let b = send(key, second.clone()).await;
        assert_eq!((b.status, b.body["code"].as_str()), (422, Some("PAYLOAD_CONFLICT")), "{key}: {b:?}");
    }
    let applied: Vec<String> = sqlx::query_scalar("SELECT body FROM things").fetch_all(&pool).await.unwrap();
    assert_eq!(applied, pairs.iter().map(|p| p.1.clone()).collect::<Vec<_>>(), "each first body once, no second");
}

/// A reservation whose request was not carried out is released; a release the database
/// refuses (busy: here a trigger refuses the delete for a while) is tried again in the
/// background, so the key is free long before its lease (an hour here) ends. Before,
/// every resend was answered `409` until the lease ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_the_database_refuses_is_tried_again_until_it_holds() {
    let first = Answer::new(StatusCode::SERVICE_UNAVAILABLE, json!({"code": "DOWNSTREAM"}));
    let s = FlakyServer::start("library_release_retry", first).await;
    for sql in [
        "CREATE TABLE refuse (active INTEGER)",
        "INSERT INTO refuse VALUES (1)",
        "CREATE TRIGGER refuse_release BEFORE DELETE ON gate_idempotency
         WHEN (SELECT active FROM refuse) = 1 BEGIN SELECT RAISE(ABORT, 'database is busy'); END",
    ] {
        sqlx::query(sql).execute(&s.pool).await.unwrap();
    }
    assert_eq!(s.send().await.status, 503, "not carried out");
    assert_eq!(s.send().await.status, 409, "its release was refused: the key is still held");
    sqlx::query("UPDATE refuse SET active = 0").execute(&s.pool).await.unwrap();
    let started = std::time::Instant::now();
    let mut last = s.send().await;
    while last.status == 409 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        last = s.send().await;
    }
    assert_eq!(last.status, 201, "{last:?}");
    assert_eq!(s.rows().await, 1, "the first run rolled back, the second applied");
}

/// The release is tried again with a doubling wait (0.1 s, 0.2, 0.4, … up to 5 s), not at a
/// steady pace — a database refusing it while busy is not asked again ten times a second
/// by every request it refused — and never once the reservation's lease has ended (another
/// request may hold the key by then). The trigger notes each refused attempt (`RAISE(FAIL)`
/// keeps the note: the statement is ended, not undone).
async fn refused_releases(name: &str, lease: Duration, after: Duration) -> i64 {
    let first = Answer::new(StatusCode::SERVICE_UNAVAILABLE, json!({"code": "DOWNSTREAM"}));
    let s = FlakyServer::with_lease(name, first, lease).await;
    for sql in [
        "CREATE TABLE attempts (n INTEGER)",
        "CREATE TRIGGER refuse_release BEFORE DELETE ON gate_idempotency
         BEGIN INSERT INTO attempts VALUES (1); SELECT RAISE(FAIL, 'database is busy'); END",
    ] {
        sqlx::query(sql).execute(&s.pool).await.unwrap();
    }
    assert_eq!(s.send().await.status, 503, "not carried out");
    tokio::time::sleep(after).await;
    sqlx::query_scalar("SELECT COUNT(*) FROM attempts").fetch_one(&s.pool).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_release_is_tried_again_less_and_less_often() {
    // 2.5 s of refusals: the release at once, then after 0.1, 0.3, 0.7 and 1.5 s (the next
    // at 3.1) — 5 attempts; a steady 0.1 s would make about 25.
    let attempts =
        refused_releases("library_release_backoff", Duration::from_secs(3600), Duration::from_millis(2_500)).await;
    assert!((3..=8).contains(&attempts), "{attempts} attempts in 2.5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_release_is_not_tried_after_the_lease() {
    // A 1 s lease: the release at once, then after 0.1, 0.3 and 0.7 s; the next (1.5 s)
    // would come after the lease. Waiting 3.5 s would see 2 more (1.5 and 3.1 s).
    let attempts =
        refused_releases("library_release_lease", Duration::from_secs(1), Duration::from_millis(3_500)).await;
    assert!((2..=4).contains(&attempts), "{attempts} attempts, some after the lease");
}
