//! §7: an intent is converted once. A conversion planned from the intent as it was read is
//! refused when the stored row changed since (already converted by another task, or a newer
//! edit coalesced into it): writing it would convert the converted row again, or bring the
//! old body back over the newer one. Planted as `tests/planted/09-intent-converted-twice.patch`,
//! which no other test caught.

use outbox_core::intent::{plan_convert, IntentSkip, Prepared};
use serde_json::json;

#[test]
fn s7_an_intent_changed_since_it_was_read_is_not_converted() {
    let read = json!({"id": "i", "owner": "alice", "target": "pending:c", "kind": "update", "body": {"a": 1},
                      "savedAt": 1, "state": "queued", "successorOf": "c"});
    let prepared = Prepared { target: "rec:1".into(), body: json!({"a": 1}), revision: None };
    // Another task converted it first: the stored row is the real request now.
    let first = plan_convert(&read, None, std::slice::from_ref(&read), &prepared).expect("the first conversion");
    let converted = first.puts[0].clone();
    assert_eq!(converted["target"], "rec:1");
    assert_eq!(
        plan_convert(&read, None, std::slice::from_ref(&converted), &prepared),
        Err(IntentSkip::IntentChanged),
        "an intent already converted is not converted again"
    );
    // A newer edit coalesced into it: its body is no longer the one read.
    let mut merged = read.clone();
    merged["body"] = json!({"a": 2});
    assert_eq!(
        plan_convert(&read, None, std::slice::from_ref(&merged), &prepared),
        Err(IntentSkip::IntentChanged),
        "an intent changed since it was read is not converted from the old read"
    );
}
