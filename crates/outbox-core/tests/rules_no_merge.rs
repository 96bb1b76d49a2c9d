//! §7 "Operations that must never be merged": every create / update / delete pairing with
//! and without `noMerge` (`merge: false`), showing what merges, what chains and that a
//! `noMerge` row is never cancelled, plus the field's codec (§3) and the chain's send order.

mod sim;

use outbox_core::admin::{plan_discard, plan_retry_blocked};
use outbox_core::codec::{decode, encode, DecodeError, Stored};
use outbox_core::conflict::conflict_successor;
use outbox_core::enqueue::{plan_enqueue, EnqueuePlan};
use outbox_core::input::{InputError, NewOperation};
use outbox_core::intent::{converted, Prepared};
use outbox_core::reissue::reissued;
use outbox_core::row::RowState;
use outbox_core::{Millis, Outcome, ReplaceOutcome, Scope, Tab};
use serde_json::{json, Value};
use sim::*;

const NOW: Millis = Millis(1_000_000);

/// An operation of alice on `target` (`None`: a create without one); `no_merge` gives `merge: false`.
fn op(kind: &str, target: Option<&str>, body: Value, no_merge: bool) -> NewOperation {
    let mut v = json!({"owner": "alice", "kind": kind, "body": body});
    if let Some(t) = target {
        v["target"] = json!(t);
    }
    if no_merge {
        v["merge"] = json!(false);
    }
    NewOperation::from_json(&v).unwrap()
}

/// A queued, never attempted stored row.
fn queued(id: &str, kind: &str, target: &str, body: Value, saved_at: i64, no_merge: bool) -> Value {
    let mut v = json!({"id": id, "owner": "alice", "target": target, "kind": kind, "body": body,
                       "savedAt": saved_at, "state": "queued"});
    if no_merge {
        v["noMerge"] = json!(true);
    }
    v
}

fn after(mut row: Value, predecessor: &str) -> Value {
    row["successorOf"] = json!(predecessor);
    row
}

fn enqueue(op: &NewOperation, rows: &[Value]) -> EnqueuePlan {
    plan_enqueue(op, "new", "re", rows, &Tab::new("tab-a"), NOW)
}

/// The plan wrote the new operation as given, after `predecessor`, and removed nothing.
fn assert_chained(p: &EnqueuePlan, predecessor: &str, body: Value) {
    let row = p.row.as_ref().expect("a row is written");
    assert_eq!(row.id, "new", "a new row, not merged into another: {row}");
    assert_eq!(row.body, body, "its own body, nothing folded into it");
    assert_eq!(row.successor_of.as_deref(), Some(predecessor));
    assert!(p.absorbed.is_empty(), "nothing absorbed: {:?}", p.absorbed);
    assert!(p.plan.deletes.is_empty(), "nothing deleted: {:?}", p.plan.deletes);
}

// --- update after update ---------------------------------------------------------------

#[test]
fn s7_no_merge_update_after_an_update_is_chained_not_absorbing() {
    let rows = [queued("u1", "update", "doc:1", json!({"a": 1}), 1, false)];
    let p = enqueue(&op("update", Some("doc:1"), json!({"b": 2}), true), &rows);
    assert_chained(&p, "u1", json!({"b": 2}));
    assert!(p.row.unwrap().no_merge, "stored as noMerge: true");
}

#[test]
fn s7_update_after_a_no_merge_update_is_its_successor() {
    let rows = [queued("u1", "update", "doc:1", json!({"a": 1}), 1, true)];
    let p = enqueue(&op("update", Some("doc:1"), json!({"b": 2}), false), &rows);
    assert_chained(&p, "u1", json!({"b": 2}));
    assert!(!p.row.unwrap().no_merge);
}

#[test]
fn s7_two_no_merge_updates_are_two_rows_chained() {
    let rows = [queued("u1", "update", "doc:1", json!({"inc": 1}), 1, true)];
    let p = enqueue(&op("update", Some("doc:1"), json!({"inc": 1}), true), &rows);
    assert_chained(&p, "u1", json!({"inc": 1}));
}

#[test]
fn s7_ordinary_updates_coalesce_after_a_no_merge_row_but_never_across_it() {
    // u0 (ordinary) · u1 (noMerge) · u2 (ordinary, after u1): a new update absorbs u2 only.
    let rows = [
        queued("u0", "update", "doc:1", json!({"a": 0}), 1, false),
        after(queued("u1", "update", "doc:1", json!({"inc": 1}), 2, true), "u0"),
        after(queued("u2", "update", "doc:1", json!({"a": 2}), 3, false), "u1"),
    ];
    let p = enqueue(&op("update", Some("doc:1"), json!({"b": 3}), false), &rows);
    assert_eq!(p.absorbed, vec!["u2".to_owned()], "u2 coalesces, u0 and u1 stay");
    let row = p.row.unwrap();
    assert_eq!(row.body, json!({"a": 2, "b": 3}), "u2's fields carried, none of u0's");
    assert_eq!(row.successor_of.as_deref(), Some("u1"), "it waits for the noMerge row");
}

// --- delete after update / update after delete -----------------------------------------

#[test]
fn s7_delete_after_a_no_merge_update_does_not_delete_it() {
    let rows = [queued("u1", "update", "doc:1", json!({"inc": 1}), 1, true)];
    let p = enqueue(&op("delete", Some("doc:1"), Value::Null, false), &rows);
    assert_chained(&p, "u1", Value::Null);
}

#[test]
fn s7_no_merge_delete_after_an_update_keeps_the_update() {
    let rows = [queued("u1", "update", "doc:1", json!({"a": 1}), 1, false)];
    let p = enqueue(&op("delete", Some("doc:1"), Value::Null, true), &rows);
    assert_chained(&p, "u1", Value::Null);
}

#[test]
fn s7_update_after_a_no_merge_delete_is_its_successor() {
    let rows = [queued("d1", "delete", "doc:1", Value::Null, 1, true)];
    let p = enqueue(&op("update", Some("doc:1"), json!({"a": 1}), false), &rows);
    assert_chained(&p, "d1", json!({"a": 1}));
}

#[test]
fn s7_no_merge_update_after_a_delete_keeps_the_delete() {
    let rows = [queued("d1", "delete", "doc:1", Value::Null, 1, false)];
    let p = enqueue(&op("update", Some("doc:1"), json!({"a": 1}), true), &rows);
    assert_chained(&p, "d1", json!({"a": 1}));
}

// --- create (pending: target) with its edits -------------------------------------------

#[test]
fn s7_update_never_merges_into_a_no_merge_create() {
    let rows = [queued("c", "create", "pending:c", json!({"t": 1}), 1, true)];
    let p = enqueue(&op("update", Some("pending:c"), json!({"t": 2}), false), &rows);
    assert_chained(&p, "c", json!({"t": 2}));
    assert!(p.row.unwrap().is_intent(), "an intent, converted once the create's receipt is known");
}

#[test]
fn s7_delete_never_cancels_a_no_merge_create() {
    let rows = [queued("c", "create", "pending:c", json!({"t": 1}), 1, true)];
    let p = enqueue(&op("delete", Some("pending:c"), Value::Null, false), &rows);
    assert_chained(&p, "c", Value::Null);
}

#[test]
fn s7_no_merge_update_of_an_unsent_create_is_not_merged_into_it() {
    let rows = [queued("c", "create", "pending:c", json!({"t": 1}), 1, false)];
    let p = enqueue(&op("update", Some("pending:c"), json!({"inc": 1}), true), &rows);
    assert_chained(&p, "c", json!({"inc": 1}));
    assert!(p.row.unwrap().is_intent());
}

#[test]
fn s7_no_merge_delete_does_not_cancel_an_unsent_create() {
    let rows = [queued("c", "create", "pending:c", json!({"t": 1}), 1, false)];
    let p = enqueue(&op("delete", Some("pending:c"), Value::Null, true), &rows);
    assert_chained(&p, "c", Value::Null);
}

#[test]
fn s7_delete_after_a_no_merge_edit_of_a_create_cancels_neither() {
    // Cancelling the create would drop the command waiting on it.
    let rows = [
        queued("c", "create", "pending:c", json!({"t": 1}), 1, false),
        after(queued("i", "update", "pending:c", json!({"inc": 1}), 2, true), "c"),
    ];
    let p = enqueue(&op("delete", Some("pending:c"), Value::Null, false), &rows);
    assert_chained(&p, "i", Value::Null);
}

#[test]
fn s7_update_after_a_no_merge_edit_of_a_create_is_not_merged_into_the_create() {
    let rows = [
        queued("c", "create", "pending:c", json!({"t": 1}), 1, false),
        after(queued("i", "update", "pending:c", json!({"inc": 1}), 2, true), "c"),
    ];
    let p = enqueue(&op("update", Some("pending:c"), json!({"t": 2}), false), &rows);
    assert_chained(&p, "i", json!({"t": 2}));
}

#[test]
fn s7_update_never_merges_into_a_blocked_create_across_a_no_merge_intent() {
    let mut create = queued("c", "create", "pending:c", json!({"t": 1}), 1, false);
    create["state"] = json!("blocked");
    create["blockedCode"] = json!("BAD");
    let rows = [create, after(queued("i", "update", "pending:c", json!({"inc": 1}), 2, true), "c")];
    let p = enqueue(&op("update", Some("pending:c"), json!({"t": 2}), false), &rows);
    assert_chained(&p, "i", json!({"t": 2}));
}

#[test]
fn s7_intents_chain_behind_a_no_merge_intent_and_coalesce_after_it() {
    // The create's outcome is unknown (sending): edits are intents.
    let mut create = queued("c", "create", "pending:c", json!({"t": 1}), 1, false);
    create["state"] = json!("sending");
    create["sentAt"] = json!(NOW.0 - 10);
    create["claim"] = json!({"tabId": "tab-z", "expiresAt": NOW.0 + 5_000, "fence": 1});
    let i1 = after(queued("i1", "update", "pending:c", json!({"a": 1}), 2, false), "c");
    let p = enqueue(&op("update", Some("pending:c"), json!({"inc": 1}), true), &[create.clone(), i1.clone()]);
    assert_chained(&p, "i1", json!({"inc": 1}));

    let i2 = after(queued("i2", "update", "pending:c", json!({"inc": 1}), 3, true), "i1");
    let i3 = after(queued("i3", "update", "pending:c", json!({"a": 3}), 4, false), "i2");
    let p = enqueue(&op("update", Some("pending:c"), json!({"b": 4}), false), &[create, i1, i2, i3]);
    assert_eq!(p.absorbed, vec!["i3".to_owned()], "only the intent after the noMerge one coalesces");
    let row = p.row.unwrap();
    assert_eq!((row.body, row.successor_of.as_deref()), (json!({"a": 3, "b": 4}), Some("i2")));
}

// --- creates with an app-chosen target --------------------------------------------------

#[test]
fn s7_no_merge_create_absorbs_no_earlier_row_of_its_target() {
    let rows = [queued("d", "delete", "note:1", Value::Null, 1, false)];
    let p = enqueue(&op("create", Some("note:1"), json!({"t": 1}), true), &rows);
    assert_chained(&p, "d", json!({"t": 1}));
}

#[test]
fn s7_create_does_not_absorb_a_no_merge_row_of_its_target() {
    let rows = [queued("u", "update", "note:1", json!({"inc": 1}), 1, true)];
    let p = enqueue(&op("create", Some("note:1"), json!({"t": 1}), false), &rows);
    assert_chained(&p, "u", json!({"t": 1}));
}

#[test]
fn s7_delete_never_cancels_a_no_merge_create_with_an_app_chosen_target() {
    let rows = [queued("c", "create", "note:1", json!({"t": 1}), 1, true)];
    let p = enqueue(&op("delete", Some("note:1"), Value::Null, false), &rows);
    assert_chained(&p, "c", Value::Null);
}

// --- in flight ------------------------------------------------------------------------

#[test]
fn s7_no_merge_waits_for_the_latest_row_in_send_order_in_flight_or_not() {
    let mut flying = queued("f", "update", "doc:1", json!({"a": 1}), 1, false);
    flying["state"] = json!("sending");
    flying["sentAt"] = json!(NOW.0 - 10);
    flying["claim"] = json!({"tabId": "tab-z", "expiresAt": NOW.0 + 5_000, "fence": 1});
    let waiting = after(queued("q", "update", "doc:1", json!({"a": 2}), 2, false), "f");
    let p = enqueue(&op("update", Some("doc:1"), json!({"inc": 1}), true), &[flying.clone(), waiting]);
    assert_chained(&p, "q", json!({"inc": 1}));
    // Alone behind a row in flight, it waits for that row.
    let p = enqueue(&op("update", Some("doc:1"), json!({"inc": 1}), true), &[flying]);
    assert_chained(&p, "f", json!({"inc": 1}));
}

// --- the field: input, codec, fingerprint, re-issue, conversion --------------------------

#[test]
fn s7_merge_must_be_a_boolean() {
    let bad = json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {}, "merge": "no"});
    assert_eq!(NewOperation::from_json(&bad), Err(InputError::BadMerge));
    let default = json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {}, "merge": null});
    assert!(!NewOperation::from_json(&default).unwrap().no_merge);
    assert!(!op("update", Some("doc:1"), json!({}), false).no_merge);
    assert!(op("update", Some("doc:1"), json!({}), true).no_merge);
}

#[test]
fn s3_no_merge_round_trips_and_a_non_boolean_makes_the_row_undecodable() {
    let stored = queued("u", "update", "doc:1", json!({}), 1, true);
    let row = decode(&stored).unwrap();
    assert!(row.no_merge);
    assert_eq!(encode(&row)["noMerge"], json!(true));
    let plain = decode(&queued("u", "update", "doc:1", json!({}), 1, false)).unwrap();
    assert!(encode(&plain).get("noMerge").is_none(), "absent means mergeable");
    let mut kept_false = queued("u", "update", "doc:1", json!({}), 1, false);
    kept_false["noMerge"] = json!(false);
    let row = decode(&kept_false).unwrap();
    assert!(!row.no_merge);
    assert_eq!(encode(&row)["noMerge"], json!(false), "a stored false is kept as stored");
    let mut bad = kept_false;
    bad["noMerge"] = json!("yes");
    assert!(matches!(Stored::from_value(&bad), Stored::Undecodable(u) if u.error == DecodeError::WrongType("noMerge")));
}

#[test]
fn s2_no_merge_is_not_a_fingerprint_input() {
    let a = enqueue(&op("update", Some("doc:1"), json!({"n": 1}), true), &[]).row.unwrap();
    let b = enqueue(&op("update", Some("doc:1"), json!({"n": 1}), false), &[]).row.unwrap();
    assert_eq!(a.fingerprint, b.fingerprint);
}

#[test]
fn s7_reissue_conversion_and_conflict_successor_keep_no_merge() {
    let mut row = decode(&queued("i", "update", "pending:c", json!({"inc": 1}), 1, true)).unwrap();
    assert!(reissued(&row, "i2").no_merge);
    let prepared = Prepared { target: "rec:1".into(), body: json!({"inc": 1}), revision: Some(json!(1)) };
    let real = converted(&row, &prepared);
    assert!(real.no_merge && !real.is_intent());
    row.target = "rec:1".into();
    assert!(conflict_successor(&row, &json!(3), NOW, "s").no_merge);
}

// --- sending: the chain goes out in order, each command applied once ---------------------

#[test]
fn s7_no_merge_commands_reach_the_server_once_each_in_order() {
    let mut w = World::new(2);
    w.server.seed_record("doc:1", 1);
    let cmd =
        |n: i64| json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"inc": n}, "merge": false});
    let a = w.enqueue(0, cmd(1)).row.unwrap().id;
    w.advance_all(1);
    let b = w.enqueue(1, cmd(2)).row.unwrap().id;
    w.advance_all(1);
    let c = w.enqueue(0, update("alice", "doc:1", json!({"title": "x"}))).row.unwrap().id;
    w.advance_all(1);
    let d = w.enqueue(1, cmd(3)).row.unwrap().id;
    w.flush(1, "alice");
    w.advance_all(LEASE);
    w.flush(0, "alice");
    let applied: Vec<&str> = w.server.applied.iter().map(String::as_str).collect();
    assert_eq!(applied, vec![a.as_str(), b.as_str(), c.as_str(), d.as_str()]);
    assert!(w.store.read_owner("alice").is_empty(), "every command sent and acknowledged");
}

#[test]
fn s7_commands_chained_behind_an_intent_of_a_vanished_create_are_resolved_too() {
    // The create is cancelled by a delete; the app still edits its pending target: the
    // first edit is an intent waiting for the vanished create, the command waits for that
    // intent. Both go through the vanished-predecessor path (no receipt: quarantined),
    // and the edit after the command is left waiting for a quarantined row only.
    let mut w = World::new(1);
    let c = w.enqueue(0, create("alice", json!({"t": 1}))).row.unwrap();
    let _ = w.enqueue(0, delete("alice", &c.target));
    let i1 = w.enqueue(0, update("alice", &c.target, json!({"a": 1}))).row.unwrap().id;
    let cmd = json!({"owner": "alice", "target": c.target, "kind": "update", "body": {"inc": 1}, "merge": false});
    let i2 = w.enqueue(0, cmd).row.unwrap().id;
    let i3 = w.enqueue(0, update("alice", &c.target, json!({"b": 1}))).row.unwrap();
    assert_eq!(i3.successor_of.as_deref(), Some(i2.as_str()));
    w.flush(0, "alice");
    for id in [&i1, &i2] {
        let row = w.row(id).unwrap();
        assert_eq!(row.blocked_code.as_deref(), Some("PREDECESSOR_RECEIPT_UNKNOWN"), "{id}: {row}");
    }
}

#[test]
fn s7_a_command_behind_an_intent_of_a_vanished_create_is_converted_with_the_creates_receipt() {
    // The create is applied, then its row vanishes before its intents are converted (an
    // older tab deleted it). Both intents are converted with the create's receipt, not
    // the receipt of the intent the command waits for, and go out in order.
    let mut w = World::new(1);
    let c = w.enqueue(0, create("alice", json!({"t": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    run_until_sent(&mut w, 0, &mut truthful);
    let i1 = w.enqueue(0, update("alice", &c.target, json!({"a": 1}))).row.unwrap().id;
    let cmd = json!({"owner": "alice", "target": c.target, "kind": "update", "body": {"inc": 1}, "merge": false});
    let i2 = w.enqueue(0, cmd).row.unwrap().id;
    w.kill(0);
    let raw = w.raw(&c.id).unwrap();
    let gone = outbox_core::ReplacePlan {
        scopes: vec![outbox_core::Scope::Id(c.id.clone())],
        expected: vec![raw],
        deletes: vec![c.id.clone()],
        puts: vec![],
        ..Default::default()
    };
    assert_eq!(w.store.replace(&gone), outbox_core::ReplaceOutcome::Committed);
    w.advance_all(LEASE + 1);
    w.flush(0, "alice");
    if let Some(row) = w.row(&i2) {
        assert_eq!(row.blocked_code, None, "the command's receipt lookup asked for the create: {row}");
    }
    w.flush(0, "alice");
    // The sim's `prepareSuccessor` bases both on the create's revision, so the command is
    // answered with a conflict and applied once as its conflict successor (§9).
    let applied: Vec<&str> = w.server.applied.iter().map(String::as_str).collect();
    assert_eq!(applied[..2], [c.id.as_str(), i1.as_str()]);
    assert_eq!(applied.len(), 3, "{applied:?}");
    assert!(
        w.server.received.iter().any(|(id, target, _)| *id == i2 && target.starts_with("rec:")),
        "converted and sent"
    );
    assert!(w.store.is_empty(), "{:?}", w.store.all().collect::<Vec<_>>());
}

// --- a failed link holds the rest of its scope (§8 rule 3), and only that scope ---------

/// A command (`merge: false`) on `target`.
fn command(target: &str, n: i64) -> Value {
    json!({"owner": "alice", "target": target, "kind": "update", "body": {"inc": n}, "merge": false})
}

/// The server rejects the operations in `refused` for good and answers the rest truly;
/// every operation sent is logged in `sent`.
fn refusing<'a>(
    refused: Vec<String>,
    sent: &'a mut Vec<String>,
) -> impl FnMut(&mut Server, &outbox_core::SendOp) -> Outcome + 'a {
    move |s, op| {
        sent.push(op.id.clone());
        if refused.contains(&op.id) {
            Outcome::Permanent { code: "INVALID".into() }
        } else {
            s.handle(op)
        }
    }
}

fn retry_blocked(w: &mut World, id: &str, target: &str, new_id: &str) {
    let scope = w.store.read(&[Scope::target("alice", target)]);
    let plan = plan_retry_blocked("alice", id, None, &scope, new_id).expect("a blocked row of alice");
    assert_eq!(w.store.replace(&plan), ReplaceOutcome::Committed);
}

#[test]
fn s8_a_blocked_command_holds_the_rest_of_its_scope_and_only_that_scope() {
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    w.server.seed_record("doc:2", 1);
    let c1 = w.enqueue(0, command("doc:1", 1)).row.unwrap().id;
    let c2 = w.enqueue(0, command("doc:1", 2)).row.unwrap().id;
    let u1 = w.enqueue(0, update("alice", "doc:1", json!({"title": "x"}))).row.unwrap().id;
    let u2 = w.enqueue(0, update("alice", "doc:2", json!({"title": "y"}))).row.unwrap().id;
    w.start_flush(0, "alice");
    let mut sent = vec![];
    let rep = w.drain(0, &mut refusing(vec![c1.clone()], &mut sent));
    assert_eq!(w.row(&c1).unwrap().state, RowState::Blocked);
    assert_eq!(sent, vec![c1.clone(), u2.clone()], "the rest of doc:1 waits; doc:2 flows");
    assert_eq!((rep.succeeded, rep.blocked), (1, 1));
    for id in [&c2, &u1] {
        assert_eq!(w.row(id).unwrap().state, RowState::Queued, "{id} still waits");
    }
    // A second flush does not send them either: the chain waits for the user.
    w.flush(0, "alice");
    assert_eq!(w.server.applied, vec![u2.clone()]);
    // The user fixes and retries the command: the chain goes out in order.
    retry_blocked(&mut w, &c1, "doc:1", "c1-again");
    w.flush(0, "alice");
    let applied: Vec<&str> = w.server.applied.iter().map(String::as_str).collect();
    assert_eq!(applied, vec![u2.as_str(), "c1-again", c2.as_str(), u1.as_str()]);
    assert!(w.store.is_empty());
}

#[test]
fn s8_a_command_waits_behind_a_blocked_ordinary_row_until_it_is_discarded() {
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    let u = w.enqueue(0, update("alice", "doc:1", json!({"title": "bad"}))).row.unwrap().id;
    w.start_flush(0, "alice");
    w.drain(0, &mut refusing(vec![u.clone()], &mut vec![]));
    let c = w.enqueue(0, command("doc:1", 1)).row.unwrap();
    assert_eq!(c.successor_of.as_deref(), Some(u.as_str()), "a command absorbs nothing: it waits");
    w.flush(0, "alice");
    assert!(w.server.applied.is_empty(), "the command keeps its place behind the failed row");
    let raw = w.raw(&u);
    let discard = plan_discard(Some("alice"), raw.as_ref(), w.tabs[0].now, LEASE).unwrap();
    assert_eq!(w.store.replace(&discard), ReplaceOutcome::Committed);
    w.flush(0, "alice");
    assert_eq!(w.server.applied, vec![c.id]);
}

#[test]
fn s8_an_ordinary_successor_of_a_blocked_ordinary_row_still_goes() {
    // Outside a `noMerge` chain the rule is unchanged: the newer state does not need the
    // rejected one. The successor was written while its predecessor was in flight.
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    let u = w.enqueue(0, update("alice", "doc:1", json!({"title": "bad"}))).row.unwrap().id;
    w.start_flush(0, "alice");
    run_until_sent(&mut w, 0, &mut refusing(vec![u.clone()], &mut vec![]));
    let s = w.enqueue(0, update("alice", "doc:1", json!({"title": "good"}))).row.unwrap();
    assert_eq!(s.successor_of.as_deref(), Some(u.as_str()));
    w.deliver(0, 0);
    let rep = w.drain(0, &mut truthful);
    assert_eq!(w.row(&u).unwrap().state, RowState::Blocked);
    assert_eq!(w.server.applied, vec![s.id], "sent in the same flush (§8: a flush drains)");
    assert_eq!((rep.blocked, rep.succeeded), (1, 1));
}
