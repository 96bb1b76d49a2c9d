//! Row details the other tests left open (found by cargo-mutants): what "never attempted"
//! means (§7), the enqueue input checks (§3 rule 4), quarantining an intent (§7), the
//! `nextAttemptAt` boundary (§8), the `(savedAt, id)` order of `rows()` (§8, §15) and the
//! readable forms of rows and times.

use outbox_core::enqueue::plan_enqueue;
use outbox_core::input::{InputError, NewOperation};
use outbox_core::intent::plan_block_intent;
use outbox_core::memstore::MemStore;
use outbox_core::select::select_sendable;
use outbox_core::{decode, Millis, Stored, Tab};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);

fn create(extra: Value) -> Value {
    let mut v = json!({"id": "c", "owner": "alice", "target": "pending:c", "kind": "create", "body": {"a": 1},
                       "savedAt": 1, "state": "queued"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn s7_a_create_with_any_trace_of_an_attempt_is_not_merged_into() {
    let edit =
        NewOperation::from_json(&json!({"owner": "alice", "target": "pending:c", "kind": "update", "body": {"b": 2}}))
            .unwrap();
    let tab = Tab::new("tab-a");
    let merged = plan_enqueue(&edit, "u", "re", &[create(json!({}))], &tab, NOW).row.unwrap();
    assert_eq!(merged.id, "c", "never attempted: merged");
    // Each of these says the create may have reached the server: the edit is an intent.
    for trace in [
        json!({"sentAt": 5}),
        json!({"deferredAt": 5}),
        json!({"heldAt": 5}),
        json!({"evidence": {"attemptCount": 1}}),
        json!({"claim": {"tabId": "t", "expiresAt": 6, "fence": 1}}),
        json!({"state": "held"}),
    ] {
        let row = create(trace.clone());
        assert!(!decode(&row).unwrap().never_attempted(), "{trace}");
        let p = plan_enqueue(&edit, "u", "re", &[row], &tab, NOW);
        let intent = p.row.unwrap();
        assert!(intent.is_intent() && intent.id == "u", "{trace}: {intent:?}");
    }
}

#[test]
fn s3_enqueue_refuses_an_empty_target_and_a_pending_target_for_a_create() {
    let bad = [
        json!({"owner": "a", "kind": "update", "target": "", "body": {}}),
        json!({"owner": "a", "kind": "create", "target": "", "body": {}}),
        json!({"owner": "a", "kind": "create", "target": "pending:x", "body": {}}),
        json!({"owner": "a", "kind": "delete", "target": 7}),
    ];
    for op in bad {
        assert!(matches!(NewOperation::from_json(&op), Err(InputError::BadTarget(_))), "{op}");
    }
    let edit_of_pending = json!({"owner": "a", "kind": "update", "target": "pending:x", "body": {}});
    assert!(NewOperation::from_json(&edit_of_pending).is_ok(), "an edit of a pending record is an intent");
}

#[test]
fn s7_quarantining_an_intent_writes_once_per_code() {
    let intent = |extra: Value| {
        let mut v = json!({"id": "i", "owner": "alice", "target": "pending:c", "kind": "update", "body": {},
                           "savedAt": 2, "state": "queued", "successorOf": "c"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let block = |raw: &Value, code: &str| plan_block_intent(raw, std::slice::from_ref(raw), code, NOW);
    let queued = intent(json!({}));
    let plan = block(&queued, "SUCCESSOR_UNPREPARED").unwrap();
    assert_eq!(plan.puts[0]["state"], "blocked");
    assert_eq!(plan.puts[0]["blockedCode"], "SUCCESSOR_UNPREPARED");
    assert_eq!(plan.puts[0]["blockedAt"], NOW.0);
    let blocked = intent(json!({"state": "blocked", "blockedCode": "PREDECESSOR_RECEIPT_UNKNOWN", "blockedAt": 1}));
    assert!(block(&blocked, "PREDECESSOR_RECEIPT_UNKNOWN").is_none(), "already so: nothing to write");
    let recoded = block(&blocked, "SUCCESSOR_UNPREPARED").unwrap();
    assert_eq!(recoded.puts[0]["blockedCode"], "SUCCESSOR_UNPREPARED");
    // A queued intent that once carried the code (re-queued) is blocked again.
    let requeued = intent(json!({"blockedCode": "SUCCESSOR_UNPREPARED"}));
    assert!(block(&requeued, "SUCCESSOR_UNPREPARED").is_some());
    // Changed since it was read: nothing.
    assert!(plan_block_intent(&queued, &[intent(json!({"body": {"x": 1}}))], "SUCCESSOR_UNPREPARED", NOW).is_none());
}

#[test]
fn s8_a_row_is_sendable_again_at_its_next_attempt_instant() {
    let row = |next: i64| {
        Stored::from_value(&json!({"id": "r", "owner": "o", "target": "t", "kind": "update", "body": {},
                                   "savedAt": 1, "state": "queued", "nextAttemptAt": next}))
    };
    assert_eq!(select_sendable(&[row(NOW.0)], "tab", NOW, 10_000, None).len(), 1, "not before: at it, it goes");
    assert!(select_sendable(&[row(NOW.0 + 1)], "tab", NOW, 10_000, None).is_empty());
}

#[test]
fn s8_rows_of_an_owner_are_listed_by_saved_at_then_id() {
    let mut store = MemStore::new();
    for (id, saved) in [("b", json!(2)), ("a!", json!(2)), ("a", json!(2)), ("z", json!(1)), ("late", json!(3.0))] {
        store.seed(json!({"id": id, "owner": "alice", "target": "t", "kind": "update", "body": {}, "savedAt": saved,
                          "state": "queued"}));
    }
    store.seed(json!({"id": "broken", "owner": "alice"})); // no savedAt: listed first
    store.seed(json!({"id": "bob", "owner": "bob", "savedAt": 0}));
    let ids: Vec<Value> = store.read_owner("alice").iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!("broken"), json!("z"), json!("a"), json!("a!"), json!("b"), json!("late")]);
}

#[test]
fn rows_and_times_read_well_in_messages() {
    let row = decode(&create(json!({}))).unwrap();
    assert_eq!(row.to_string(), "create pending:c c (queued)");
    assert_eq!(Millis(1_500).to_string(), "1500ms");
}
