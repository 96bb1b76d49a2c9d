//! The gate's conformance suite (SPEC §14), one body per rule, run on SQLite and on
//! PostgreSQL. The PostgreSQL runs are built with the `postgres-tests` feature only; run them
//! with a throwaway cluster: `scripts/pg.sh cargo test -p outbox-gate --features postgres-tests`.

mod common;

use common::{call, effects_of, request, start, Reply, Setup, TestDb};
use outbox_gate::demo::{DemoOptions, DomainOp};
use outbox_gate::gate::now_ms;
use outbox_gate::ledger::{NewRecord, Purged, RecordKey, Reservation};
use outbox_gate::request::fingerprint;
use outbox_gate::Config;
use serde_json::{json, Value};
use std::time::Duration;

/// Fifty concurrent requests with one key: one effect, one fresh answer; every other one is
/// the same answer replayed or `409 IN_PROGRESS` with `Retry-After`.
async fn s14_fifty_concurrent_requests_with_one_key_make_one_effect<DB: TestDb>(name: &str) {
    let options = DemoOptions { test_endpoints: true, work_delay: Duration::from_millis(50), ..Default::default() };
    let s = start::<DB>(name, Setup { options, ..Setup::default() }).await;
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let base = s.base.clone();
            tokio::spawn(async move {
                call(&base, "POST", "/api/records/workout", "alice", "op-1", json!({"weight": 80})).await
            })
        })
        .collect();
    let mut replies = Vec::new();
    for c in calls {
        replies.push(c.await.unwrap());
    }
    assert_eq!(effects_of(&s.pool, "op-1").await, 1);
    let fresh: Vec<&Reply> = replies.iter().filter(|r| r.status == 201 && !r.replayed).collect();
    assert_eq!(fresh.len(), 1, "{replies:?}");
    let answer = fresh[0].body.clone();
    for r in &replies {
        match r.status {
            201 => assert_eq!(r.body, answer),
            409 => assert_eq!((r.body["code"].as_str(), r.retry_after.is_some()), (Some("IN_PROGRESS"), true)),
            s => panic!("unexpected status {s}: {r:?}"),
        }
    }
    let again = call(&s.base, "POST", "/api/records/workout", "alice", "op-1", json!({"weight": 80})).await;
    assert_eq!((again.status, again.replayed, again.body), (201, true, answer));
}

/// The same key with another body: `422 PAYLOAD_CONFLICT`, never a second effect; keys are
/// per actor.
async fn s14_payload_reuse_is_refused<DB: TestDb>(name: &str) {
    let s = start::<DB>(name, Setup::default()).await;
    let first = call(&s.base, "POST", "/api/records/workout", "alice", "op-2", json!({"weight": 80})).await;
    assert_eq!(first.status, 201);
    let reuse = call(&s.base, "POST", "/api/records/workout", "alice", "op-2", json!({"weight": 81})).await;
    assert_eq!((reuse.status, reuse.body["code"].as_str()), (422, Some("PAYLOAD_CONFLICT")));
    let other_path = call(&s.base, "POST", "/api/records/plan", "alice", "op-2", json!({"weight": 80})).await;
    assert_eq!(other_path.status, 422);
    assert_eq!(effects_of(&s.pool, "op-2").await, 1);
    let bob = call(&s.base, "POST", "/api/records/workout", "bob", "op-2", json!({"weight": 81})).await;
    assert_eq!((bob.status, bob.replayed), (201, false));
}

/// A holder crashed mid-handler (its reservation committed, its transaction never did).
/// Within its lease others get `409` (and the receipt says `409`, not "unknown"); after it,
/// a resend takes over and completes; the old holder's late completion is refused by the
/// database and its domain write rolls back with it.
async fn s14_takeover_after_a_crash_refuses_the_old_holders_completion<DB: TestDb>(name: &str) {
    let s = start::<DB>(name, Setup::default()).await;
    let body = json!({"weight": 80});
    let bytes = serde_json::to_vec(&body).unwrap();
    let fp = fingerprint("POST", "/api/records/workout", None, &bytes);
    let record = |key, now_ms, lease_ms| NewRecord {
        scope: "",
        actor: "alice",
        key,
        operation: "POST /api/records/workout",
        fingerprint: &fp,
        now_ms,
        lease_ms,
    };
    // Still within its lease.
    let live = DB::reserve(&s.pool, record("op-live", now_ms(), 60_000)).await.unwrap();
    assert_eq!(live, Reservation::Reserved { fence: 1, recovered: false });
    let busy = call(&s.base, "POST", "/api/records/workout", "alice", "op-live", body.clone()).await;
    assert_eq!((busy.status, busy.body["code"].as_str()), (409, Some("IN_PROGRESS")));
    assert_eq!(busy.retry_after.as_deref(), Some("1"), "retry soon, not after the whole 60 s lease");
    let receipt = reqwest::Client::new()
        .get(format!("{}/api/receipts/op-live", s.base))
        .header("Authorization", "Bearer alice.s1")
        .send()
        .await
        .unwrap();
    assert_eq!(receipt.status(), 409);
    // Crashed: its lease ended a while ago.
    let crashed = DB::reserve(&s.pool, record("op-crash", now_ms() - 5_000, 1_000)).await.unwrap();
    assert_eq!(crashed, Reservation::Reserved { fence: 1, recovered: false });
    let taken = call(&s.base, "POST", "/api/records/workout", "alice", "op-crash", body.clone()).await;
    assert_eq!((taken.status, taken.replayed), (201, false));
    assert_eq!(effects_of(&s.pool, "op-crash").await, 1);
    // The crashed holder comes back and tries to finish its work under its old fence.
    let mut tx = DB::begin(&s.pool).await.unwrap();
    let op = DomainOp::Create { entity: "workout".into(), body: body.clone() };
    let late = DB::apply(&mut tx, "alice", "op-crash", &op, now_ms()).await.unwrap();
    let completed =
        DB::complete(&mut tx, RecordKey::new("alice", "op-crash"), &fp, 1, &late, now_ms(), now_ms() + 60_000)
            .await
            .unwrap();
    assert!(!completed, "a stale fence must not complete");
    tx.rollback().await.unwrap();
    assert_eq!(effects_of(&s.pool, "op-crash").await, 1);
    assert_eq!(DB::records(&s.pool, "alice").await.unwrap().len(), 1);
    let again = call(&s.base, "POST", "/api/records/workout", "alice", "op-crash", body.clone()).await;
    assert_eq!((again.status, again.replayed, again.body), (201, true, taken.body));

    // The same race with the new holder still working: only the fence tells the two apart.
    let old = DB::reserve(&s.pool, record("op-race", now_ms() - 5_000, 1_000)).await.unwrap();
    assert_eq!(old, Reservation::Reserved { fence: 1, recovered: false });
    let new = DB::reserve(&s.pool, record("op-race", now_ms(), 60_000)).await.unwrap();
    assert_eq!(new, Reservation::Reserved { fence: 2, recovered: true });
    let mut tx = DB::begin(&s.pool).await.unwrap();
    let late = DB::apply(&mut tx, "alice", "op-race", &op, now_ms()).await.unwrap();
    let completed =
        DB::complete(&mut tx, RecordKey::new("alice", "op-race"), &fp, 1, &late, now_ms(), now_ms() + 60_000)
            .await
            .unwrap();
    assert!(!completed, "the old holder's fence is stale while the new holder works");
    tx.rollback().await.unwrap();
    let mut tx = DB::begin(&s.pool).await.unwrap();
    let answer = DB::apply(&mut tx, "alice", "op-race", &op, now_ms()).await.unwrap();
    assert!(DB::complete(&mut tx, RecordKey::new("alice", "op-race"), &fp, 2, &answer, now_ms(), now_ms() + 60_000)
        .await
        .unwrap());
    tx.commit().await.unwrap();
    assert_eq!(effects_of(&s.pool, "op-race").await, 1);
    let replay = call(&s.base, "POST", "/api/records/workout", "alice", "op-race", body).await;
    assert_eq!((replay.status, replay.replayed, replay.body), (201, true, answer.body));
}

/// A client that gives up mid-request (the connection closes while the handler runs) leaves
/// no key stuck beyond its lease: a resend afterwards gets an answer, with one effect.
async fn s14_a_client_gone_mid_request_leaves_no_key_stuck<DB: TestDb>(name: &str) {
    let options = DemoOptions { test_endpoints: true, work_delay: Duration::from_millis(400), ..Default::default() };
    let config = Config { lease: Duration::from_millis(1_000), ..Config::default() };
    let s = start::<DB>(name, Setup { config, options, ..Setup::default() }).await;
    let impatient = reqwest::Client::builder().timeout(Duration::from_millis(100)).build().unwrap();
    let body = json!({"weight": 5});
    let gone =
        request(&impatient, &s.base, "POST", "/api/records/workout", "alice", "op-gone", Some(&body)).send().await;
    assert!(gone.is_err(), "the client gave up before the answer");
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    // Past its lease. On a slow machine the first attempt may still be finishing: a few
    // more leases, then a key still held is stuck.
    let mut resend = call(&s.base, "POST", "/api/records/workout", "alice", "op-gone", body.clone()).await;
    for _ in 0..3 {
        if resend.status != 409 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        resend = call(&s.base, "POST", "/api/records/workout", "alice", "op-gone", body.clone()).await;
    }
    assert_eq!(resend.status, 201, "{resend:?}");
    assert_eq!(effects_of(&s.pool, "op-gone").await, 1);
}

/// A busy database (a lock held elsewhere past the lock timeout) is `503` + `Retry-After`
/// with the gate's own words, nothing applied and no reservation left: the resend is
/// carried out once.
async fn s14_busy_database_is_503_retry_after_and_nothing_applied<DB: TestDb>(name: &str) {
    let s = start::<DB>(name, Setup { lock_timeout: Duration::from_millis(200), ..Setup::default() }).await;
    let body = json!({"weight": 7});
    let blocker = DB::hold_write_lock(&s.pool).await;
    let busy = call(&s.base, "POST", "/api/records/workout", "alice", "op-busy", body.clone()).await;
    blocker.rollback().await.unwrap();
    assert_eq!(busy.status, 503, "{busy:?}");
    assert!(busy.retry_after.is_some());
    assert_eq!(busy.body, json!({"code": "BUSY", "message": "the server is busy; retry later"}));
    let resend = call(&s.base, "POST", "/api/records/workout", "alice", "op-busy", body).await;
    assert_eq!((resend.status, resend.replayed), (201, false));
    assert_eq!(effects_of(&s.pool, "op-busy").await, 1);
}

/// Retention: a completed record is kept for the window, then purged; a processing record
/// is never purged within its lease, and purged as orphaned after it.
async fn s14_retention_purges_completed_after_the_window_and_orphans_after_their_lease<DB: TestDb>(name: &str) {
    let config = Config { lease: Duration::from_secs(3600), retention: Duration::from_secs(600) };
    let s = start::<DB>(name, Setup { config, ..Setup::default() }).await;
    let t0 = now_ms();
    let done = call(&s.base, "POST", "/api/records/plan", "alice", "done", json!({"title": "x"})).await;
    assert_eq!(done.status, 201);
    let orphan = NewRecord {
        scope: "",
        actor: "alice",
        key: "orphan",
        operation: "POST /api/records/plan",
        fingerprint: "fp",
        now_ms: t0,
        lease_ms: 3_600_000,
    };
    assert!(matches!(DB::reserve(&s.pool, orphan).await.unwrap(), Reservation::Reserved { .. }));
    assert_eq!(s.gate.purge(t0 + 60_000).await.unwrap(), Purged::default(), "within retention and lease");
    assert_eq!(s.gate.purge(t0 + 1_200_000).await.unwrap(), Purged { completed: 1, orphaned: 0 });
    let receipt = |key: &'static str| {
        reqwest::Client::new()
            .get(format!("{}/api/receipts/{key}", s.base))
            .header("Authorization", "Bearer alice.s")
            .send()
    };
    assert_eq!(receipt("done").await.unwrap().status(), 404);
    assert_eq!(receipt("orphan").await.unwrap().status(), 409, "still within its lease");
    assert_eq!(s.gate.purge(t0 + 7_200_000).await.unwrap(), Purged { completed: 0, orphaned: 1 });
    assert_eq!(receipt("orphan").await.unwrap().status(), 404);
}

/// The demo's domain on this engine: revision conflicts carry the actual revision, foreign
/// records are refused, a command appends once per key.
async fn s14_revisions_and_commands<DB: TestDb>(name: &str) {
    let s = start::<DB>(name, Setup::default()).await;
    let b = &s.base;
    let created = call(b, "POST", "/api/records/workout", "alice", "c", json!({"weight": 1})).await;
    let path = format!("/api/records/{}", created.body["serverId"].as_str().unwrap().replace(':', "/"));
    let put = |key: &'static str, rev: Option<i64>, body: Value| {
        let mut req = request(&reqwest::Client::new(), b, "PUT", &path, "alice", key, Some(&body)).build().unwrap();
        if let Some(rev) = rev {
            req.headers_mut().insert("if-match", rev.to_string().parse().unwrap());
        }
        async move { Reply::of(reqwest::Client::new().execute(req).await.unwrap()).await }
    };
    let ok = put("u1", Some(1), json!({"weight": 2})).await;
    assert_eq!((ok.status, ok.body["revision"].as_i64()), (200, Some(2)));
    let stale = put("u2", Some(1), json!({"weight": 3})).await;
    assert_eq!((stale.status, stale.body.clone()), (412, json!({"code": "REVISION_CONFLICT", "actualRevision": 2})));
    let foreign = call(b, "DELETE", &path, "bob", "d1", Value::Null).await;
    assert_eq!((foreign.status, foreign.body["code"].as_str()), (403, Some("FORBIDDEN")));
    let sets = format!("{path}/sets");
    let first = call(b, "POST", &sets, "alice", "s1", json!({"reps": 5})).await;
    assert_eq!((first.status, first.body["count"].as_i64(), first.body["revision"].as_i64()), (200, Some(1), Some(3)));
    let resent = call(b, "POST", &sets, "alice", "s1", json!({"reps": 5})).await;
    assert_eq!((resent.replayed, resent.body), (true, first.body));
    let second = call(b, "POST", &sets, "alice", "s2", json!({"reps": 5})).await;
    assert_eq!(second.body["count"].as_i64(), Some(2));
    let records = DB::records(&s.pool, "alice").await.unwrap();
    assert_eq!(records[0]["body"], json!({"weight": 2, "sets": [{"reps": 5}, {"reps": 5}]}));
    let deleted = call(b, "DELETE", &path, "alice", "d2", Value::Null).await;
    assert_eq!((deleted.status, deleted.body["deleted"].as_bool()), (200, Some(true)));
    assert!(DB::records(&s.pool, "alice").await.unwrap().is_empty());
}

/// A release that lands late (retried after the database refused it, or queued behind a
/// lock) never drops a later reservation of the same request: after a purge (or a release)
/// the key's next record starts again at fence 1 with the same fingerprint, and only its
/// lease end tells it from the first one. Dropping it let a third resend run the handler
/// beside the second holder.
async fn s14_a_late_release_never_drops_a_later_reservation_of_the_same_request<DB: TestDb>(name: &str) {
    let s = start::<DB>(name, Setup::default()).await;
    let at = |now_ms| NewRecord {
        scope: "",
        actor: "alice",
        key: "late",
        operation: "POST /api/records/plan",
        fingerprint: "fp",
        now_ms,
        lease_ms: 1_000,
    };
    let t0 = now_ms();
    assert!(matches!(DB::reserve(&s.pool, at(t0)).await.unwrap(), Reservation::Reserved { fence: 1, .. }));
    assert_eq!(s.gate.purge(t0 + 2_000).await.unwrap(), Purged { completed: 0, orphaned: 1 });
    assert!(matches!(DB::reserve(&s.pool, at(t0 + 3_000)).await.unwrap(), Reservation::Reserved { fence: 1, .. }));
    // The first holder's release, late: its fence and fingerprint match the new record.
    DB::release(&s.pool, RecordKey::new("alice", "late"), "fp", 1, t0 + 1_000).await.unwrap();
    assert!(
        matches!(DB::reserve(&s.pool, at(t0 + 3_500)).await.unwrap(), Reservation::InProgress { .. }),
        "the second holder still holds the key"
    );
    // Its own release frees it.
    DB::release(&s.pool, RecordKey::new("alice", "late"), "fp", 1, t0 + 4_000).await.unwrap();
    assert!(matches!(DB::reserve(&s.pool, at(t0 + 3_600)).await.unwrap(), Reservation::Reserved { fence: 1, .. }));
}

/// Each rule on SQLite (always) and PostgreSQL (through scripts/pg.sh).
macro_rules! on_both_engines {
    ($($rule:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $rule() {
                    super::$rule::<sqlx::Sqlite>(stringify!($rule)).await;
                }
            )*
        }
        #[cfg(feature = "postgres-tests")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $rule() {
                    super::$rule::<sqlx::Postgres>(stringify!($rule)).await;
                }
            )*
        }
    };
}

on_both_engines!(
    s14_fifty_concurrent_requests_with_one_key_make_one_effect,
    s14_payload_reuse_is_refused,
    s14_takeover_after_a_crash_refuses_the_old_holders_completion,
    s14_a_client_gone_mid_request_leaves_no_key_stuck,
    s14_busy_database_is_503_retry_after_and_nothing_applied,
    s14_a_late_release_never_drops_a_later_reservation_of_the_same_request,
    s14_retention_purges_completed_after_the_window_and_orphans_after_their_lease,
    s14_revisions_and_commands,
);
