//! The app's own records, committed with the queue (`outbox_core::records`): with the
//! enqueue whatever it planned, with the ACK only while the claim is still this tab's, never
//! resurrecting a record the user deleted, the same after a replayed receipt.

mod sim;

use outbox_core::ack::{plan_ack, AckDecision, AckDraws};
use outbox_core::records::{
    parse_writes, patched, reconcile_for, rekeyed, set_at_path, Answer, Reconcile, RecordWrite, MAX_WRITES,
};
use outbox_core::retry::Backoff;
use outbox_core::{decode, Millis, Outcome, Ticket};
use serde_json::{json, Map, Value};
use sim::{create, delete, is_send, update, World, LEASE};

const TODOS: &str = "todos";

fn put_at_target(v: Value) -> Value {
    json!([{"store": TODOS, "put": v, "atTarget": true}])
}

fn rec(w: &World, key: &str) -> Option<Value> {
    w.store.record(TODOS, &json!(key)).cloned()
}

/// The demo's port: a created record moves to its server id, an edit marks the revision,
/// a refusal is noted on the record. Patches and rekeys change only a record that exists.
fn port(r: &Reconcile) -> Vec<RecordWrite> {
    let key = json!(r.row.target);
    match &r.answer {
        Answer::Success { receipt, .. } if r.row.kind.as_str() == "create" => {
            let mut set = Map::new();
            set.insert("revision".into(), receipt["revision"].clone());
            set.insert("synced".into(), json!(true));
            vec![RecordWrite::Rekey { store: TODOS.into(), from: key, to: receipt["serverId"].clone(), set }]
        }
        Answer::Success { receipt, .. } => {
            let mut set = Map::new();
            set.insert("revision".into(), receipt["revision"].clone());
            vec![RecordWrite::Patch { store: TODOS.into(), key, set }]
        }
        Answer::Blocked { code } => {
            let mut set = Map::new();
            set.insert("error".into(), json!(code));
            vec![RecordWrite::Patch { store: TODOS.into(), key, set }]
        }
        Answer::Conflict { .. } => vec![],
    }
}

/// A world of `tabs` tabs with the demo's port and one create of alice's, its record
/// written under the create's `pending:` target; returns that target.
fn with_create(tabs: usize) -> (World, String) {
    let mut w = World::new(tabs);
    w.reconcile = port;
    let p = w.enqueue_with(0, create("alice", json!({"title": "a"})), put_at_target(json!({"title": "a"})));
    let target = p.row.expect("a create is stored").target;
    (w, target)
}

/// Starts tab 0's flush and carries out its requests up to and including the first send,
/// answered by `answer`; the answer stays in the air.
fn send_first(w: &mut World, answer: &mut dyn FnMut(&mut sim::Server, &outbox_core::SendOp) -> Outcome) {
    w.start_flush(0, "alice");
    while let Some(i) = w.find(0, |r| !is_send(r)) {
        w.step(0, i, &mut |s, op| s.handle(op));
    }
    let i = w.find(0, is_send).expect("tab 0 sends");
    w.step(0, i, answer);
}

#[test]
fn records_commit_with_the_enqueue_also_when_it_merges_or_cancels() {
    let mut w = World::new(1);
    let p = w.enqueue_with(0, create("alice", json!({"title": "a"})), put_at_target(json!({"title": "a"})));
    let target = p.row.unwrap().target;
    assert!(target.starts_with("pending:"), "a create without a target is keyed by its pending: target");
    assert_eq!(rec(&w, &target).unwrap(), json!({"title": "a", "id": target}), "the put is keyed at `id`");

    // Merged into the unsent create: one row, and the record changed all the same.
    let writes = json!([{"store": TODOS, "patch": target, "set": {"title": "b"}}]);
    let p = w.enqueue_with(0, update("alice", &target, json!({"title": "b"})), writes);
    assert_eq!(p.row.unwrap().target, target, "the update merged into the create");
    assert_eq!(w.store.len(), 1);
    assert_eq!(rec(&w, &target).unwrap()["title"], "b");

    // A delete cancels the unsent create: no row is left, and the record is deleted with it.
    let p = w.enqueue_with(0, delete("alice", &target), json!([{"store": TODOS, "delete": target}]));
    assert!(p.row.is_none(), "the create was cancelled");
    assert!(w.store.is_empty());
    assert_eq!(rec(&w, &target), None);
}

#[test]
fn a_success_reconciles_in_the_acks_transaction() {
    let (mut w, target) = with_create(1);
    let report = w.flush(0, "alice");
    assert_eq!(report.succeeded, 1);
    assert!(w.store.is_empty(), "the row is acknowledged");
    assert_eq!(rec(&w, &target), None, "the pending: record moved");
    assert_eq!(rec(&w, "rec:1").unwrap(), json!({"title": "a", "id": "rec:1", "revision": 1, "synced": true}));
    assert_eq!(w.reconciled.len(), 1);
    assert!(matches!(w.reconciled[0].answer, Answer::Success { replayed: false, .. }));
}

#[test]
fn a_refusal_is_reconciled_and_the_row_stays_blocked() {
    let mut w = World::new(1);
    w.reconcile = port;
    let writes = json!([{"store": TODOS, "put": {"id": "t1", "title": "x"}}]);
    let _ = w.enqueue_with(0, update("alice", "t1", json!({"title": "x"})), writes);
    w.start_flush(0, "alice");
    w.drain(0, &mut |_, _| Outcome::Permanent { code: "TOO_LONG".into() });
    assert_eq!(rec(&w, "t1").unwrap()["error"], "TOO_LONG");
    assert_eq!(w.store.len(), 1, "the row is kept for the user");
}

#[test]
fn a_stale_answer_changes_neither_the_row_nor_the_records() {
    let mut w = World::new(2);
    w.reconcile = port;
    w.server.seed_record("t1", 1);
    let _ = w.enqueue_with(
        0,
        update("alice", "t1", json!({"n": 1})),
        json!([{"store": TODOS, "put": {"id": "t1", "n": 1}}]),
    );
    // Tab 0 sends; its answer is delayed past the lease, and tab 1 takes the row over.
    send_first(&mut w, &mut |_, _| Outcome::success(json!({"serverId": "t1", "revision": 7})));
    w.advance_all(LEASE + 1);
    let before = w.reconciled.len();
    let report = w.flush(1, "alice");
    assert_eq!(report.succeeded, 1);
    assert_eq!(w.reconciled.len(), before + 1, "tab 1's answer is reconciled");
    let after_tab1 = rec(&w, "t1");
    w.deliver(0, 0);
    assert_eq!(w.reconciled.len(), before + 1, "the stale answer is never handed to the port");
    assert_eq!(rec(&w, "t1"), after_tab1, "nor does it change the record");
}

#[test]
fn a_late_success_of_the_create_never_resurrects_a_record_deleted_meanwhile() {
    let (mut w, target) = with_create(1);
    send_first(&mut w, &mut |s, op| s.handle(op));
    // While the create is in flight the user deletes the record: an intent, and the record
    // is gone locally at once.
    let _ = w.enqueue_with(0, delete("alice", &target), json!([{"store": TODOS, "delete": target}]));
    assert_eq!(rec(&w, &target), None);
    w.deliver(0, 0);
    w.drain(0, &mut |s, op| s.handle(op));
    assert_eq!(w.store.records(TODOS).count(), 0, "the create's success did not bring the record back");
    assert!(w.store.is_empty(), "the delete was sent after the create");
    assert!(w.server.records["rec:1"].deleted);
}

#[test]
fn a_replayed_receipt_after_a_crash_reconciles_to_the_same_records() {
    let run = |crash: bool| {
        let (mut w, _) = with_create(2);
        send_first(&mut w, &mut |s, op| s.handle(op)); // the server commits
        if crash {
            w.kill(0); // the answer is lost with the tab
            w.advance_all(LEASE + 1);
            w.flush(1, "alice");
        } else {
            w.deliver(0, 0);
            w.drain(0, &mut |s, op| s.handle(op));
        }
        assert_eq!(w.server.applied.len(), 1, "one effect");
        assert!(w.store.is_empty());
        (w.store.records(TODOS).cloned().collect::<Vec<_>>(), w.reconciled.last().cloned().unwrap())
    };
    let (clean, _) = run(false);
    let (replayed, last) = run(true);
    assert!(matches!(last.answer, Answer::Success { replayed: true, .. }), "the gate replayed the receipt");
    assert_eq!(replayed, clean);
}

#[test]
fn only_answers_that_end_the_attempt_ask_for_reconciliation_and_the_ack_carries_it() {
    let raw = json!({"id": "r", "owner": "alice", "target": "t1", "kind": "update", "body": {}, "savedAt": 1,
                     "state": "sending", "sentAt": 5, "claim": {"tabId": "a", "expiresAt": 100, "fence": 2},
                     "revision": 3});
    let row = decode(&raw).unwrap();
    let ok = Outcome::success(json!({"revision": 4}));
    assert!(matches!(reconcile_for(&row, &ok).unwrap().answer, Answer::Success { .. }));
    let refused = Outcome::Permanent { code: "BAD".into() };
    assert_eq!(reconcile_for(&row, &refused).unwrap().answer, Answer::Blocked { code: "BAD".into() });
    let blind = Outcome::Conflict { actual_revision: Value::Null };
    assert_eq!(reconcile_for(&row, &blind).unwrap().answer, Answer::Blocked { code: "REVISION_UNKNOWN".into() });
    let conflict = Outcome::Conflict { actual_revision: json!(9) };
    assert_eq!(reconcile_for(&row, &conflict).unwrap().answer, Answer::Conflict { actual_revision: json!(9) });
    assert_eq!(reconcile_for(&row, &Outcome::transient("OFFLINE")), None);
    assert_eq!(reconcile_for(&row, &Outcome::Auth), None);

    let ticket = Ticket { tab_id: "a".into(), fence: 2 };
    let draws = AckDraws { random: 0.5, new_id: "n".into() };
    for (outcome, asks) in [(ok, true), (refused, true), (conflict, true), (Outcome::transient("X"), false)] {
        let d = plan_ack(
            "alice",
            "r",
            std::slice::from_ref(&raw),
            &ticket,
            &outcome,
            Millis(10),
            &Backoff::default(),
            &draws,
        );
        let AckDecision::Apply { plan, .. } = d else { panic!("the claim is mine") };
        assert_eq!(plan.reconcile.is_some(), asks, "{outcome:?}");
        if let Some(r) = plan.reconcile {
            assert_eq!(r.row.id, "r");
        }
    }
}

#[test]
fn writes_are_checked_before_anything_is_written() {
    let ok = json!([
        {"store": TODOS, "put": {"id": 1}},
        {"store": TODOS, "put": {"t": 1}, "key": ["a", 2]},
        {"store": TODOS, "put": {}, "atTarget": true},
        {"store": TODOS, "delete": "k"},
        {"store": TODOS, "patch": 3, "set": {"x": 1}},
        {"store": TODOS, "rekey": "pending:1", "to": "42"},
    ]);
    assert_eq!(parse_writes(&ok, "writes").unwrap().len(), 6);
    assert!(parse_writes(&Value::Null, "writes").unwrap().is_empty());
    let bad = [
        (json!({"store": TODOS}), "must be an array"),
        (json!([1]), "`writes[0]` must be an object"),
        (json!([{"put": {}}]), "`writes[0].store` must be the name"),
        (json!([{"store": "", "put": {}}]), "`writes[0].store` must be the name"),
        (json!([{"store": "outbox", "put": {}}]), "the queue's own store"),
        (json!([{"store": TODOS}]), "exactly one of"),
        (json!([{"store": TODOS, "put": {}, "delete": "k"}]), "exactly one of"),
        (json!([{"store": TODOS, "delete": {"a": 1}}]), "`writes[0].delete` must be a key"),
        (json!([{"store": TODOS, "delete": true}]), "must be a key"),
        (json!([{"store": TODOS, "delete": [1, [null]]}]), "must be a key"),
        (json!([{"store": TODOS, "put": {}, "key": {}}]), "`writes[0].key` must be a key"),
        (json!([{"store": TODOS, "patch": "k"}]), "`writes[0].set` must be an object"),
        (json!([{"store": TODOS, "patch": "k", "set": [1]}]), "`writes[0].set` must be an object"),
        (json!([{"store": TODOS, "rekey": "k", "to": "j", "set": 1}]), "`writes[0].set` must be an object"),
        (json!([{"store": TODOS, "rekey": "k"}]), "`writes[0].to` must be a key"),
        (json!([{"store": TODOS, "delete": "k", "atTarget": true}]), "goes only with put"),
        (json!([{"store": TODOS, "put": {}, "atTarget": "yes"}]), "must be a boolean"),
        (json!([{"store": TODOS, "put": {}, "key": "k", "atTarget": true}]), "both `key` and `atTarget`"),
        (json!([{"store": TODOS, "put": {"$outboxMovedTo": "k"}}]), "`writes[0].put` uses the reserved field"),
        (
            json!([{"store": TODOS, "patch": "k", "set": {"$outboxMovedTo": "j"}}]),
            "`writes[0].set` uses the reserved field",
        ),
    ];
    for (v, want) in bad {
        let e = parse_writes(&v, "writes").expect_err(&v.to_string());
        assert!(e.0.contains(want), "{v}: {e}");
    }
    let nested = |n: usize| (0..n).fold(json!("k"), |k, _| json!([k]));
    assert!(parse_writes(&json!([{"store": TODOS, "delete": nested(8)}]), "w").is_ok(), "8 arrays deep is a key");
    let e = parse_writes(&json!([{"store": TODOS, "delete": nested(9)}]), "w").unwrap_err();
    assert_eq!(e.to_string(), "`w[0].delete` must be a key: a string, a number or an array of them");
    let many = Value::Array(vec![json!({"store": TODOS, "delete": 1}); MAX_WRITES + 1]);
    assert_eq!(
        parse_writes(&many, "writes").unwrap_err().0,
        format!("`writes` holds more than {MAX_WRITES} record writes")
    );
    let just_enough = Value::Array(vec![json!({"store": TODOS, "delete": 1}); MAX_WRITES]);
    assert!(parse_writes(&just_enough, "writes").is_ok());
}

#[test]
fn patch_and_rekey_change_only_a_record_that_exists() {
    let mut set = Map::new();
    set.insert("synced".into(), json!(true));
    assert_eq!(patched(None, &set), None);
    assert_eq!(patched(Some(&json!({"a": 1, "synced": false})), &set), Some(json!({"a": 1, "synced": true})));
    assert_eq!(rekeyed(None, Some("id"), &json!("9"), &set), None);
    assert_eq!(
        rekeyed(Some(&json!({"id": "pending:1", "a": 1})), Some("id"), &json!("9"), &set),
        Some(json!({"id": "9", "a": 1, "synced": true}))
    );
    assert_eq!(rekeyed(Some(&json!({"a": 1})), None, &json!("9"), &Map::new()), Some(json!({"a": 1})));
    let mut v = json!({"meta": 1});
    set_at_path(&mut v, "meta.key.id", json!(5));
    assert_eq!(v, json!({"meta": {"key": {"id": 5}}}));
}

#[test]
fn an_edit_made_against_the_pending_key_after_the_record_moved_reaches_the_moved_record() {
    let (mut w, target) = with_create(2);
    w.flush(0, "alice"); // the create is answered: its record moves to rec:1
    assert_eq!(rec(&w, &target), None);
    // Tab 1 still shows the record under its pending: key and edits it there: the queue row
    // is an intent converted later; the record write follows the stub to rec:1.
    let edit = json!([{"store": TODOS, "patch": target, "set": {"title": "b"}}]);
    let _ = w.enqueue_with(1, update("alice", &target, json!({"title": "b"})), edit);
    assert_eq!(rec(&w, "rec:1").unwrap()["title"], "b");
    assert_eq!(w.store.records(TODOS).count(), 1, "the stub is no record");
    w.flush(1, "alice");
    assert_eq!(w.server.records["rec:1"].body["title"], "b", "the edit reached the server too");
    // A put by the old key (the pattern a create uses) lands on the moved record too.
    let put = json!([{"store": TODOS, "put": {"title": "c"}, "atTarget": true}]);
    let _ = w.enqueue_with(1, update("alice", &target, json!({"title": "c"})), put);
    assert_eq!(rec(&w, "rec:1").unwrap(), json!({"title": "c", "id": "rec:1"}));
    assert_eq!(w.store.records(TODOS).count(), 1, "no second copy under the old key");
    let _ = w.enqueue_with(1, delete("alice", &target), json!([{"store": TODOS, "delete": target}]));
    assert_eq!(rec(&w, "rec:1"), None, "a delete by the old key deletes the moved record");
}

#[test]
fn a_stub_forwards_only_to_a_key_and_a_patch_never_writes_into_one() {
    let compound = outbox_core::records::stub(&json!(["owner", "id"]), &json!(["al", "a"]), &json!(["al", "b"]));
    assert_eq!(compound, json!({"owner": "al", "id": "a", "$outboxMovedTo": ["al", "b"]}));
    let mut v = json!({});
    assert!(!outbox_core::records::set_key(&mut v, &json!(["a", "b"]), &json!("k")), "a key that does not fit");
    assert!(!outbox_core::records::set_key(&mut v, &json!(["a", "b"]), &json!(["x"])), "one part short");
    assert_eq!(v, json!({}), "nothing set when the key does not fit");
    assert!(outbox_core::records::set_key(&mut v, &Value::Null, &json!("k")), "out-of-line keys fit");
    assert_eq!(v, json!({}), "and set nothing in the value");
    let stub = outbox_core::records::stub(&json!("id"), &json!("a"), &json!("b"));
    assert_eq!(stub, json!({"id": "a", "$outboxMovedTo": "b"}));
    assert_eq!(outbox_core::records::forward(Some(&stub)), Some(&json!("b")));
    assert_eq!(outbox_core::records::forward(Some(&json!({"id": "a"}))), None);
    assert_eq!(outbox_core::records::forward(Some(&json!({"$outboxMovedTo": {"x": 1}}))), None, "not a key");
    assert_eq!(patched(Some(&stub), &Map::new()), None);
}

#[test]
fn writes_name_their_store_and_at_target_follows_the_row_given_with_them() {
    let inputs = parse_writes(
        &json!([
            {"store": "a", "put": {"x": 1}, "atTarget": true},
            {"store": "b", "delete": "k"},
            {"store": "c", "patch": "k", "set": {}},
            {"store": "d", "rekey": "k", "to": "j"},
        ]),
        "w",
    )
    .unwrap();
    let row = decode(&json!({"id": "r", "owner": "alice", "target": "todo:9", "kind": "update", "body": {},
                             "savedAt": 1, "state": "sending"}))
    .unwrap();
    let r = Reconcile { row, answer: Answer::Blocked { code: "X".into() } };
    for writes in
        [outbox_core::records::answer_records(&inputs, &r), outbox_core::records::row_records(&inputs, "todo:9")]
    {
        assert_eq!(writes.iter().map(RecordWrite::store).collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(
            writes[0],
            RecordWrite::Put { store: "a".into(), value: json!({"x": 1}), key: Some(json!("todo:9")) }
        );
        assert_eq!(writes[1], RecordWrite::Delete { store: "b".into(), key: json!("k") });
    }
}

#[test]
fn a_write_by_the_first_key_follows_every_stub_of_a_record_rekeyed_many_times() {
    let (mut w, target) = with_create(1);
    // Rekeyed twelve times, each time named by its first key: twelve stubs in a row.
    for n in 1..=12 {
        let rekey = json!([{"store": TODOS, "rekey": target, "to": format!("k{n}")}]);
        let _ = w.enqueue_with(0, update("alice", &target, json!({"n": n})), rekey);
    }
    assert!(rec(&w, "k12").is_some(), "the record reached k12");
    let edit = json!([{"store": TODOS, "patch": target, "set": {"title": "late"}}]);
    let _ = w.enqueue_with(0, update("alice", &target, json!({"title": "late"})), edit);
    assert_eq!(rec(&w, "k12").unwrap()["title"], "late", "the patch reached the record past twelve stubs");
    assert_eq!(w.store.records(TODOS).count(), 1);
}

#[test]
fn a_landing_follows_any_number_of_keys_and_refuses_one_it_passed() {
    use outbox_core::records::Landing;
    let mut l = Landing::new(json!("a"));
    assert_eq!(l.key(), &json!("a"));
    for n in 0..100 {
        assert!(l.follow(json!(n)));
    }
    assert_eq!(l.key(), &json!(99));
    assert!(!l.follow(json!(50)), "a key passed");
    assert!(!l.follow(json!("a")), "back to the first key");
    assert_eq!(l.key(), &json!(99), "a refused step goes nowhere");
    assert!(l.follow(json!([1, "a"])), "another key");
    assert_eq!(l.key(), &json!([1, "a"]));
}
