//! The gate's rules (SPEC §14), over HTTP on loopback and on the ledger directly.

use outbox_gate::http::Gate;
use outbox_gate::ledger::{DomainOp, Ledger, Reservation};
use outbox_gate::sqlite::{Retention, SqliteLedger};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn start(work_delay_ms: u64) -> (String, Arc<dyn Ledger>) {
    let ledger: Arc<dyn Ledger> = Arc::new(SqliteLedger::open(":memory:", Retention::default()).unwrap());
    let gate = Arc::new(Gate {
        ledger: ledger.clone(),
        revoked: Mutex::new(HashSet::new()),
        work_delay: Duration::from_millis(work_delay_ms),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, outbox_gate::app(gate, None, None)).await.unwrap() });
    (format!("http://{addr}"), ledger)
}

struct Reply {
    status: u16,
    replayed: bool,
    body: Value,
}

async fn call(
    base: &str,
    method: &str,
    path: &str,
    actor: &str,
    key: &str,
    body: Value,
    if_match: Option<i64>,
) -> Reply {
    let client = reqwest::Client::new();
    let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = client
        .request(m, format!("{base}{path}"))
        .header("Authorization", format!("Bearer {actor}.s1"))
        .header("Idempotency-Key", key)
        .json(&body);
    if let Some(r) = if_match {
        req = req.header("If-Match", r.to_string());
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let replayed = resp.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
    let body = resp.json().await.unwrap_or(Value::Null);
    Reply { status, replayed, body }
}

fn effects_of(ledger: &Arc<dyn Ledger>, op: &str) -> i64 {
    ledger.effects().unwrap().iter().filter(|e| e["opId"] == op).map(|e| e["count"].as_i64().unwrap()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_requests_with_one_key_make_one_effect() {
    let (base, ledger) = start(30).await;
    let calls = (0..50).map(|_| {
        let base = base.clone();
        tokio::spawn(async move {
            call(&base, "POST", "/api/records/workout", "alice", "op-1", json!({"weight": 80}), None).await
        })
    });
    let replies: Vec<Reply> = futures_join(calls).await;
    assert_eq!(effects_of(&ledger, "op-1"), 1);
    let fresh = replies.iter().filter(|r| r.status == 201 && !r.replayed).count();
    assert_eq!(fresh, 1);
    for r in &replies {
        match r.status {
            201 => assert_eq!(r.body, json!({"serverId": "workout:1", "revision": 1})),
            409 => assert_eq!(r.body["code"], "IN_PROGRESS"),
            s => panic!("unexpected status {s}"),
        }
    }
    assert!(replies.iter().any(|r| r.status == 409), "the work delay makes some requests see it in progress");
    let again = call(&base, "POST", "/api/records/workout", "alice", "op-1", json!({"weight": 80}), None).await;
    assert_eq!((again.status, again.replayed), (201, true));
    assert_eq!(again.body, json!({"serverId": "workout:1", "revision": 1}));
}

async fn futures_join<T: Send + 'static>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles.collect::<Vec<_>>() {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn same_key_with_another_body_is_refused_with_payload_conflict() {
    let (base, ledger) = start(0).await;
    let first = call(&base, "POST", "/api/records/workout", "alice", "op-2", json!({"weight": 80}), None).await;
    assert_eq!(first.status, 201);
    let reuse = call(&base, "POST", "/api/records/workout", "alice", "op-2", json!({"weight": 81}), None).await;
    assert_eq!((reuse.status, reuse.body["code"].as_str()), (422, Some("PAYLOAD_CONFLICT")));
    assert_eq!(effects_of(&ledger, "op-2"), 1);
    // Keys are per actor: bob may use the same key for his own request.
    let bob = call(&base, "POST", "/api/records/workout", "bob", "op-2", json!({"weight": 81}), None).await;
    assert_eq!(bob.status, 201);
}

#[tokio::test]
async fn revision_conflicts_carry_the_actual_revision_and_foreign_records_are_refused() {
    let (base, _) = start(0).await;
    call(&base, "POST", "/api/records/workout", "alice", "c", json!({"weight": 1}), None).await;
    let ok = call(&base, "PUT", "/api/records/workout/1", "alice", "u1", json!({"weight": 2}), Some(1)).await;
    assert_eq!((ok.status, ok.body["revision"].as_i64()), (200, Some(2)));
    let stale = call(&base, "PUT", "/api/records/workout/1", "alice", "u2", json!({"weight": 3}), Some(1)).await;
    assert_eq!(stale.status, 412);
    assert_eq!(stale.body, json!({"code": "REVISION_CONFLICT", "actualRevision": 2}));
    let foreign = call(&base, "DELETE", "/api/records/workout/1", "bob", "d1", Value::Null, None).await;
    assert_eq!((foreign.status, foreign.body["code"].as_str()), (403, Some("FORBIDDEN")));
    let invalid = call(&base, "PUT", "/api/records/workout/1", "alice", "u3", json!({"weight": -5}), None).await;
    assert_eq!((invalid.status, invalid.body["code"].as_str()), (422, Some("INVALID")));
    let gone = call(&base, "PUT", "/api/records/workout/99", "alice", "u4", json!({}), None).await;
    assert_eq!(gone.status, 404);
}

#[tokio::test]
async fn receipts_are_found_by_operation_id_for_their_actor_only() {
    let (base, _) = start(0).await;
    call(&base, "POST", "/api/records/plan", "alice", "create-1", json!({"title": "x"}), None).await;
    let client = reqwest::Client::new();
    let get = |actor: &'static str| {
        client.get(format!("{base}/api/receipts/create-1")).header("Authorization", format!("Bearer {actor}.s")).send()
    };
    let mine = get("alice").await.unwrap();
    assert_eq!(mine.status(), 200);
    assert_eq!(mine.json::<Value>().await.unwrap(), json!({"serverId": "plan:1", "revision": 1}));
    assert_eq!(get("bob").await.unwrap().status(), 404);
    let anon = client.get(format!("{base}/api/receipts/create-1")).send().await.unwrap();
    assert_eq!(anon.status(), 401);
}

#[test]
fn a_processing_record_abandoned_by_a_crashed_worker_is_recovered() {
    let retention = Retention { completed_ms: 1_000_000, processing_lease_ms: 5_000 };
    let ledger = SqliteLedger::open(":memory:", retention).unwrap();
    let op = DomainOp::Create { entity: "workout".into(), body: json!({"weight": 1}) };
    let Reservation::Reserved { holder: crashed, recovered: false } =
        ledger.reserve("a", "k", "create", "fp", 0).unwrap()
    else {
        panic!("first reservation")
    };
    // The worker crashed before completing. While its lease lasts, others are told to wait.
    assert_eq!(ledger.reserve("a", "k", "create", "fp", 4_999).unwrap(), Reservation::InProgress);
    let Reservation::Reserved { holder, recovered: true } = ledger.reserve("a", "k", "create", "fp", 5_000).unwrap()
    else {
        panic!("taken over after the lease")
    };
    let answer = ledger.complete("a", "k", &holder, &op, 5_001).unwrap();
    assert_eq!(answer.status, 201);
    // The crashed worker coming back cannot complete a second time.
    assert!(ledger.complete("a", "k", &crashed, &op, 5_002).is_err());
    let effects = ledger.effects().unwrap();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0]["count"], 1);
    let Reservation::Replay(replay) = ledger.reserve("a", "k", "create", "fp", 6_000).unwrap() else {
        panic!("replay")
    };
    assert_eq!((replay.status, replay.replayed, replay.body), (201, true, answer.body));
}

#[test]
fn completed_records_are_kept_for_the_retention_then_purged() {
    let retention = Retention { completed_ms: 10_000, processing_lease_ms: 5_000 };
    let ledger = SqliteLedger::open(":memory:", retention).unwrap();
    let op = DomainOp::Create { entity: "plan".into(), body: json!({}) };
    let Reservation::Reserved { holder, .. } = ledger.reserve("a", "k", "create", "fp", 0).unwrap() else { panic!() };
    ledger.complete("a", "k", &holder, &op, 0).unwrap();
    assert_eq!(ledger.purge_expired(10_000).unwrap(), 0, "still within retention");
    assert!(matches!(ledger.reserve("a", "k", "create", "fp", 10_000).unwrap(), Reservation::Replay(_)));
    assert_eq!(ledger.purge_expired(10_001).unwrap(), 1);
    assert!(ledger.receipt("a", "k").unwrap().is_none());
}

#[tokio::test]
async fn a_command_appends_once_per_key_in_arrival_order_however_often_it_is_resent() {
    let (base, ledger) = start(0).await;
    call(&base, "POST", "/api/records/workout", "alice", "c", json!({"weight": 1}), None).await;
    let set = |n: i64| json!({"reps": n});
    let first = call(&base, "POST", "/api/records/workout/1/sets", "alice", "s1", set(5), None).await;
    assert_eq!((first.status, first.body["count"].as_i64(), first.body["revision"].as_i64()), (200, Some(1), Some(2)));
    // The answer was lost; the resend replays it and appends nothing.
    let resent = call(&base, "POST", "/api/records/workout/1/sets", "alice", "s1", set(5), None).await;
    assert!(resent.replayed);
    assert_eq!(resent.body, first.body);
    // A second command with the same payload is a second effect (never folded into the first).
    let second = call(&base, "POST", "/api/records/workout/1/sets", "alice", "s2", set(5), None).await;
    assert_eq!(second.body["count"].as_i64(), Some(2));
    let third = call(&base, "POST", "/api/records/workout/1/sets", "alice", "s3", set(8), None).await;
    assert_eq!(third.body["count"].as_i64(), Some(3));
    assert_eq!([effects_of(&ledger, "s1"), effects_of(&ledger, "s2"), effects_of(&ledger, "s3")], [1, 1, 1]);
    let records = ledger.records("alice").unwrap();
    assert_eq!(records[0]["body"]["sets"], json!([set(5), set(5), set(8)]));
    // Only declared lists; a record of someone else is refused.
    let unknown = call(&base, "POST", "/api/records/workout/1/notes", "alice", "n1", json!({}), None).await;
    assert_eq!(unknown.status, 404);
    let foreign = call(&base, "POST", "/api/records/workout/1/sets", "bob", "b1", set(1), None).await;
    assert_eq!(foreign.status, 403);
}
