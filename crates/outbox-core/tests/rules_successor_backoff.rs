//! Two rules the rest of the suite let break unnoticed, stated with exact values:
//! §7 a successor follows the in-flight row sent last; §6/§10 a transient answer defers
//! the row by `backoff(attempt, random)`, floored by `Retry-After`.

use outbox_core::ack::{plan_ack, AckDecision, AckDraws};
use outbox_core::enqueue::plan_enqueue;
use outbox_core::input::NewOperation;
use outbox_core::retry::Backoff;
use outbox_core::{Millis, Outcome, Tab, Ticket};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);

/// A row of `alice`/`doc:1` in flight at [`NOW`]: claimed by another tab (`claimed`) or sent
/// by an older writer (no claim, `sentAt` within the lease).
fn flying(id: &str, saved_at: i64, sent_at: i64, claimed: bool) -> Value {
    let mut v = json!({"id": id, "owner": "alice", "target": "doc:1", "kind": "update", "body": {"n": id},
                       "savedAt": saved_at, "state": "sending", "sentAt": sent_at});
    if claimed {
        v["claim"] = json!({"tabId": format!("tab-{id}"), "expiresAt": NOW.0 + 5_000, "fence": 1});
        v["writer"] = json!({"bundle": "test", "at": sent_at});
    }
    v
}

fn enqueue_update(rows: &[Value]) -> Option<String> {
    let op = NewOperation::from_json(&json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"x": 1}}))
        .unwrap();
    let p = plan_enqueue(&op, "new", "re", rows, &Tab::new("tab-z"), NOW);
    assert!(p.absorbed.is_empty(), "rows in flight are kept");
    p.row.unwrap().successor_of
}

#[test]
fn s7_a_successor_follows_the_in_flight_row_with_the_latest_sent_at() {
    // Send order and savedAt order disagree, so neither the first nor the last row of the
    // scope is the right predecessor: only the one sent last is.
    let rows = [
        flying("a", NOW.0 - 900, NOW.0 - 300, true),
        flying("b", NOW.0 - 800, NOW.0 - 100, true),
        flying("c", NOW.0 - 700, NOW.0 - 200, false),
    ];
    assert_eq!(enqueue_update(&rows).as_deref(), Some("b"));
    // An older writer's row sent last counts the same (§5 rule 2).
    let rows = [flying("a", NOW.0 - 900, NOW.0 - 300, true), flying("c", NOW.0 - 800, NOW.0 - 50, false)];
    assert_eq!(enqueue_update(&rows).as_deref(), Some("c"));
    // Sent at the same instant: the one saved later.
    let rows = [
        flying("a", NOW.0 - 900, NOW.0 - 100, true),
        flying("b", NOW.0 - 700, NOW.0 - 100, true),
        flying("c", NOW.0 - 800, NOW.0 - 100, true),
    ];
    assert_eq!(enqueue_update(&rows).as_deref(), Some("b"));
}

/// A row claimed by `tab-a` (fence 4), `attempts` claims so far.
fn claimed(attempts: Option<u64>) -> Value {
    let mut v = json!({"id": "r", "owner": "alice", "target": "doc:1", "kind": "update", "body": {},
                       "savedAt": 1, "state": "sending", "sentAt": NOW.0 - 10,
                       "claim": {"tabId": "tab-a", "expiresAt": NOW.0 + 9_990, "fence": 4},
                       "writer": {"bundle": "test", "at": NOW.0 - 10}});
    if let Some(n) = attempts {
        v["evidence"] = json!({"attemptCount": n, "lastAttemptAt": NOW.0 - 10});
    }
    v
}

/// Applies a transient answer with `retry_after_ms` and the jitter draw `random`; returns
/// the row as it would be written.
fn transient(row: Value, backoff: &Backoff, random: f64, retry_after_ms: Option<i64>) -> Value {
    let draws = AckDraws { random, new_id: "unused".into() };
    let outcome = Outcome::Transient { code: Some("HTTP_503".into()), retry_after_ms };
    let ticket = Ticket { tab_id: "tab-a".into(), fence: 4 };
    match plan_ack("alice", "r", &[row], &ticket, &outcome, NOW, backoff, &draws) {
        AckDecision::Apply { mut plan, successor: None } => {
            assert!(plan.deletes.is_empty());
            assert_eq!(plan.puts.len(), 1);
            plan.puts.remove(0)
        }
        other => panic!("a transient answer to my claim defers the row: {other:?}"),
    }
}

#[test]
fn s10_a_transient_ack_defers_by_jittered_backoff_of_the_attempt_floored_by_retry_after() {
    let default = Backoff::default(); // base 1 s, cap 5 min
    let next =
        |row: Value, b: &Backoff, random: f64, ra: Option<i64>| transient(row, b, random, ra)["nextAttemptAt"].clone();

    // Third attempt: ceiling min(cap, base × 2^2) = 4 000 ms; jitter 0.25 → 1 000 ms.
    let deferred = transient(claimed(Some(3)), &default, 0.25, None);
    assert_eq!(deferred["nextAttemptAt"], NOW.0 + 1_000);
    assert_eq!(deferred["state"], "queued");
    assert_eq!(deferred["deferredAt"], NOW.0);
    assert!(deferred.get("sentAt").is_none());
    assert_eq!(deferred["claim"]["expiresAt"], NOW.0, "claim expired now");
    assert_eq!(deferred["claim"]["fence"], 4, "fence kept");
    assert_eq!(deferred["evidence"]["lastErrorCode"], "HTTP_503");
    assert_eq!(deferred["evidence"]["attemptCount"], 3, "an answer is not an attempt");

    // The draw scales the ceiling, rounded down.
    assert_eq!(next(claimed(Some(3)), &default, 0.999, None), NOW.0 + 3_996);
    assert_eq!(next(claimed(Some(3)), &default, 0.0, None), NOW.0);
    // The attempt number sets the ceiling: 1st → base; no evidence or a count of 0 → 1st.
    assert_eq!(next(claimed(Some(1)), &default, 0.5, None), NOW.0 + 500);
    assert_eq!(next(claimed(Some(2)), &default, 0.5, None), NOW.0 + 1_000);
    assert_eq!(next(claimed(None), &default, 0.5, None), NOW.0 + 500);
    assert_eq!(next(claimed(Some(0)), &default, 0.5, None), NOW.0 + 500);
    // Capped.
    assert_eq!(next(claimed(Some(30)), &default, 0.5, None), NOW.0 + 150_000);
    let small = Backoff { base_ms: 100, cap_ms: 250 };
    assert_eq!(next(claimed(Some(3)), &small, 0.5, None), NOW.0 + 125);

    // Retry-After is a floor under the jittered delay, never a ceiling.
    assert_eq!(next(claimed(Some(3)), &default, 0.25, Some(5_000)), NOW.0 + 5_000);
    assert_eq!(next(claimed(Some(3)), &default, 0.25, Some(500)), NOW.0 + 1_000);
    assert_eq!(next(claimed(Some(3)), &default, 0.25, Some(1_000)), NOW.0 + 1_000);
    assert_eq!(next(claimed(Some(3)), &default, 0.25, Some(-7)), NOW.0 + 1_000, "a negative floor is no floor");
}
