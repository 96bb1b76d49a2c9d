//! §7 enqueue details the other tests left open: what merges into an unsent create never
//! includes a row in flight, and coalesced updates keep a base revision.

use outbox_core::enqueue::plan_enqueue;
use outbox_core::input::NewOperation;
use outbox_core::{Millis, Tab};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);

fn op(v: Value) -> NewOperation {
    NewOperation::from_json(&v).unwrap()
}

#[test]
fn s7_merging_into_an_unsent_create_leaves_rows_in_flight_alone() {
    // A delete of note:1 is in flight; the app re-creates note:1 (it waits behind the
    // delete), then edits it: the edit merges into the create, the delete stays.
    let deleting = json!({"id": "d", "owner": "alice", "target": "note:1", "kind": "delete", "body": null,
                          "savedAt": 1, "state": "sending", "sentAt": NOW.0 - 10,
                          "claim": {"tabId": "tab-a", "expiresAt": NOW.0 + 5_000, "fence": 1},
                          "writer": {"bundle": "b", "at": NOW.0 - 10}});
    let create = json!({"id": "c", "owner": "alice", "target": "note:1", "kind": "create", "body": {"t": 1},
                        "savedAt": 2, "state": "queued", "successorOf": "d"});
    let edit = op(json!({"owner": "alice", "target": "note:1", "kind": "update", "body": {"t": 2}}));
    let p = plan_enqueue(&edit, "u", "re", &[deleting, create], &Tab::new("tab-b"), NOW);
    let merged = p.row.expect("merged into the create");
    assert_eq!((merged.id.as_str(), merged.body.clone()), ("c", json!({"t": 2})));
    assert_eq!(merged.successor_of.as_deref(), Some("d"));
    assert!(p.absorbed.is_empty(), "{:?}", p.absorbed);
    assert!(p.plan.deletes.is_empty(), "the delete in flight is kept: {:?}", p.plan.deletes);
}

#[test]
fn s7_coalesced_updates_keep_the_newest_base_revision_given() {
    let queued = |id: &str, revision: Value| {
        json!({"id": id, "owner": "alice", "target": "doc:1", "kind": "update", "body": {id: 1},
               "savedAt": 1, "state": "queued", "revision": revision})
    };
    let update = |revision: Value| {
        op(json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"n": 1}, "revision": revision}))
    };
    let tab = Tab::new("tab-a");
    let p = plan_enqueue(&update(json!(5)), "u", "re", &[queued("a", Value::Null)], &tab, NOW);
    assert_eq!(p.row.unwrap().revision, Some(json!(5)), "the new operation's own revision");
    let p = plan_enqueue(&update(json!(5)), "u", "re", &[queued("a", json!(3))], &tab, NOW);
    assert_eq!(p.row.unwrap().revision, Some(json!(5)));
    let p = plan_enqueue(&update(Value::Null), "u", "re", &[queued("a", json!("e3"))], &tab, NOW);
    assert_eq!(p.row.unwrap().revision, Some(json!("e3")), "without one, the absorbed row's base revision");
}

#[test]
fn s8_a_new_edit_waits_for_a_kept_successor_even_when_its_saved_at_is_earlier_than_the_row_in_flight() {
    // F is in flight, sent by a tab whose clock is ahead; K, a JSON Patch from a tab whose
    // clock is behind, waits for F with an earlier `savedAt`. K cannot be merged, so it is
    // kept, and the new edit must wait for K — the chain is F, K, then the edit — or it would
    // be claimable as soon as F is answered, beside K.
    let f = json!({"id": "f", "owner": "alice", "target": "rec:1", "kind": "update", "body": {"w": 1},
                   "savedAt": NOW.0 + 100_000, "state": "sending", "sentAt": NOW.0 + 100_000,
                   "claim": {"tabId": "tab-a", "expiresAt": NOW.0 + 200_000, "fence": 1},
                   "writer": {"bundle": "b", "at": NOW.0 + 100_000}});
    let k = json!({"id": "k", "owner": "alice", "target": "rec:1", "kind": "update",
                   "body": [{"op": "replace", "path": "/w", "value": 2}],
                   "savedAt": NOW.0 - 10, "state": "queued", "successorOf": "f"});
    let edit = op(json!({"owner": "alice", "target": "rec:1", "kind": "update", "body": {"w": 3}}));
    let p = plan_enqueue(&edit, "u", "re", &[f.clone(), k.clone()], &Tab::new("tab-b"), NOW);
    assert_eq!(p.row.expect("a new row").successor_of.as_deref(), Some("k"));
    assert!(p.plan.deletes.is_empty(), "K is kept");
    // Without skew (K saved after F) the chain is the same.
    let mut k_later = k;
    k_later["savedAt"] = json!(NOW.0 + 100_001);
    let p = plan_enqueue(&edit, "u", "re", &[f.clone(), k_later], &Tab::new("tab-b"), NOW);
    assert_eq!(p.row.unwrap().successor_of.as_deref(), Some("k"));
    // A row in flight that K does not wait for and that was sent after K was written is the
    // later one: the edit waits for it.
    let k_alone = json!({"id": "k", "owner": "alice", "target": "rec:1", "kind": "update",
                         "body": [{"op": "replace", "path": "/w", "value": 2}], "savedAt": 1, "state": "queued"});
    let mut f_after = f;
    f_after["savedAt"] = json!(2);
    let p = plan_enqueue(&edit, "u", "re", &[f_after, k_alone], &Tab::new("tab-b"), NOW);
    assert_eq!(p.row.unwrap().successor_of.as_deref(), Some("f"));
}

/// A body of `n` values: `{ "<key>": [0, 0, ...] }` (the object and the list are two).
fn wide(key: &str, n: usize) -> Value {
    json!({ key: vec![0; n - 2] })
}

/// §3 rule 4 / §7: merging never makes a body larger than the app may give (it would read
/// back partly opaque and the row would be stuck): past the bound, the new edit waits
/// after the rows it would have absorbed, unmerged.
#[test]
fn s7_updates_whose_merged_body_would_be_too_large_wait_instead_of_merging() {
    use outbox_core::body_size::{fits, MAX_BODY_VALUES};
    let third = MAX_BODY_VALUES * 2 / 5; // two fit merged, three do not
    let stored = |id: &str, prefix: &str| {
        json!({"id": id, "owner": "alice", "target": "doc:1", "kind": "update", "body": wide(prefix, third),
               "savedAt": 1, "state": "queued"})
    };
    // Two queued edits merged already would be fine; a second merges into the first.
    let one = stored("a", "a");
    let p = plan_enqueue(
        &op(json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": wide("b", third)})),
        "b",
        "re",
        std::slice::from_ref(&one),
        &Tab::new("t"),
        NOW,
    );
    assert_eq!(p.absorbed, vec!["a"], "merged");
    let merged = p.row.unwrap();
    assert!(fits(&merged.body));
    // A third would pass the bound: it is a row of its own, after the merged one.
    let merged_json = outbox_core::codec::encode(&merged);
    let edit = op(json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": wide("c", third)}));
    let p = plan_enqueue(&edit, "c", "re", &[merged_json], &Tab::new("t"), NOW);
    assert!(p.absorbed.is_empty() && p.plan.deletes.is_empty(), "{:?}", p.absorbed);
    let row = p.row.unwrap();
    assert_eq!((row.successor_of.as_deref(), fits(&row.body)), (Some("b"), true));
    assert_eq!(row.body, wide("c", third), "its own body only");
}

/// The same for edits folded into a create never sent (§7): a fold past the bound does not
/// happen; the edit waits after the create.
#[test]
fn s7_an_edit_too_large_to_fold_into_its_create_waits_after_it() {
    use outbox_core::body_size::{fits, MAX_BODY_VALUES};
    let half = MAX_BODY_VALUES * 3 / 5;
    let create = json!({"id": "c", "owner": "alice", "target": "doc:1", "kind": "create", "body": wide("a", half),
                        "savedAt": 1, "state": "queued"});
    let edit = op(json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": wide("b", half)}));
    let p = plan_enqueue(&edit, "u", "re", &[create], &Tab::new("t"), NOW);
    let row = p.row.unwrap();
    assert_eq!((row.id.as_str(), row.successor_of.as_deref()), ("u", Some("c")), "not folded");
    assert!(fits(&row.body) && p.plan.deletes.is_empty());
    // A small edit still folds into it.
    let create = json!({"id": "c", "owner": "alice", "target": "doc:1", "kind": "create", "body": wide("a", half),
                        "savedAt": 1, "state": "queued"});
    let small = op(json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"z": 1}}));
    assert_eq!(plan_enqueue(&small, "u", "re", &[create], &Tab::new("t"), NOW).row.unwrap().id, "c");
}
