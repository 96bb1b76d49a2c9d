//! Single-rule tests: codec (§3), input (§3.4), enqueue table (§7), select (§8), admin,
//! metrics (§12).

mod sim;

use outbox_core::admin::{plan_discard, plan_purge_owner, plan_resume_held, plan_retry_blocked, DiscardSkip};
use outbox_core::codec::{decode, encode, DecodeError, Stored};
use outbox_core::input::{InputError, NewOperation};
use outbox_core::metrics::{compute, Counters};
use outbox_core::select::select_sendable;
use outbox_core::{Millis, Outcome, RowState};
use serde_json::{json, Value};
use sim::*;

const A: usize = 0;

fn old_row() -> Value {
    json!({"id": "r1", "owner": "alice", "target": "workout:1", "kind": "update", "body": {"w": 1},
           "savedAt": 5, "state": "queued", "futureField": {"nested": [1, "x"]}, "revision": null})
}

#[test]
fn s3_older_writer_row_decodes_and_reencodes_with_unknown_fields() {
    let row = decode(&old_row()).unwrap();
    assert!(row.claim.is_none() && row.writer.is_none() && row.evidence.is_none());
    assert_eq!(row.fingerprint.len(), 64, "missing fingerprint is computed");
    let back = encode(&row);
    assert_eq!(back["futureField"], json!({"nested": [1, "x"]}));
    assert_eq!(back["revision"], Value::Null, "a stored null stays a null");
    let mut without_fp = back.as_object().unwrap().clone();
    without_fp.remove("fingerprint");
    assert_eq!(Value::Object(without_fp), old_row());
}

#[test]
fn s3_unknown_fields_survive_claim_and_ack_including_nested_ones() {
    let mut w = World::new(1);
    w.server.seed_record("workout:1", 1);
    let mut raw = old_row();
    raw["claim"] = json!({"tabId": "x", "expiresAt": 0, "fence": 4, "claimExtra": true});
    raw["evidence"] = json!({"attemptCount": 2, "lastAttemptAt": 1, "evExtra": "e"});
    w.store.seed(raw);
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::transient("HTTP_500"));
    let claimed = w.raw("r1").unwrap();
    assert_eq!(claimed["claim"]["fence"], 5);
    assert_eq!(claimed["claim"]["claimExtra"], true);
    assert_eq!(claimed["evidence"]["evExtra"], "e");
    assert_eq!(claimed["evidence"]["attemptCount"], 3);
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    let after = w.raw("r1").unwrap();
    assert_eq!(after["futureField"], json!({"nested": [1, "x"]}));
    assert_eq!(after["claim"]["claimExtra"], true);
    assert_eq!(after["evidence"]["lastErrorCode"], "HTTP_500");
    assert_eq!(after["state"], "queued");
}

#[test]
fn s3_undecodable_rows_are_typed_reported_and_never_touched() {
    let cases = [
        (json!("text"), DecodeError::NotAnObject),
        (
            json!({"id": "u", "owner": "alice", "target": "t", "kind": "upsert", "state": "queued", "savedAt": 1, "body": {}}),
            DecodeError::UnknownKind("upsert".into()),
        ),
        (
            json!({"id": "u", "owner": "alice", "target": "t", "kind": "update", "state": "queued", "savedAt": "x", "body": {}}),
            DecodeError::WrongType("savedAt"),
        ),
        (
            json!({"id": "u", "owner": "alice", "target": "t", "kind": "update", "state": "queued", "savedAt": 1}),
            DecodeError::MissingField("body"),
        ),
    ];
    for (raw, err) in cases {
        match Stored::from_value(&raw) {
            Stored::Undecodable(u) => assert_eq!(u.error, err),
            Stored::Row(_) => panic!("{raw} decoded"),
        }
    }
    let mut w = World::new(1);
    let bad = json!({"id": "u", "owner": "alice", "target": "workout:1", "kind": "upsert", "state": "queued", "savedAt": 1, "body": {}});
    w.store.seed(bad.clone());
    w.server.seed_record("workout:1", 1);
    let _ = w.enqueue(A, update("alice", "workout:1", json!({"w": 1})));
    assert_eq!(w.flush(A, "alice").succeeded, 1);
    assert_eq!(w.raw("u").unwrap(), bad);
    assert!(plan_purge_owner("alice", &w.store.read_owner("alice")).is_none());
    let m = compute(&w.store.read_owner("alice"), Some("alice"), &Counters::default(), Millis(0));
    assert_eq!(m.undecodable, 1);
    assert!(plan_discard(Some("alice"), Some(&bad), Millis(0), LEASE).is_ok());
    assert_eq!(plan_discard(None, Some(&bad), Millis(0), LEASE), Err(DiscardSkip::OtherOwner));
}

#[test]
fn s3_bad_input_is_a_typed_error() {
    let bad = [
        (json!({"kind": "update", "target": "t", "body": {}}), InputError::MissingOwner),
        (json!({"owner": "", "kind": "update", "target": "t", "body": {}}), InputError::MissingOwner),
        (
            json!({"owner": "a", "kind": "upsert", "target": "t", "body": {}}),
            InputError::UnknownKind("`upsert`".into()),
        ),
        (json!({"owner": "a", "kind": "update", "target": "t"}), InputError::MissingBody),
        (
            json!({"owner": "a", "kind": "update", "body": {}}),
            InputError::BadTarget("is required for update and delete".into()),
        ),
        (
            json!({"owner": "a", "kind": "update", "target": "t", "body": {}, "revision": {"v": 7}}),
            InputError::BadRevision,
        ),
        (json!([1]), InputError::NotAnObject),
    ];
    for (v, e) in bad {
        assert_eq!(NewOperation::from_json(&v), Err(e), "{v}");
    }
    assert!(NewOperation::from_json(&json!({"owner": "a", "kind": "delete", "target": "t"})).is_ok());
}

#[test]
fn s7_updates_over_queued_updates_coalesce_with_shallow_merge() {
    let mut w = World::new(1);
    let u1 = w.enqueue(A, update("alice", "w:1", json!({"a": 1, "b": 1}))).row.unwrap();
    let p = w.enqueue(A, update("alice", "w:1", json!({"b": 2})));
    assert_eq!(p.absorbed, vec![u1.id.clone()]);
    let u2 = p.row.unwrap();
    assert_eq!(u2.body, json!({"a": 1, "b": 2}));
    assert!(u2.successor_of.is_none());
    assert_eq!(w.store.len(), 1);
    let d = w.enqueue(A, delete("alice", "w:1")).row.unwrap();
    assert_eq!(d.body, Value::Null);
    assert_eq!(w.store.len(), 1);
}

#[test]
fn s7_edits_of_an_unsent_create_merge_and_a_delete_cancels() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"name": "a", "x": 1}))).row.unwrap();
    let merged = w.enqueue(A, update("alice", &c.target, json!({"x": 2}))).row.unwrap();
    assert_eq!(merged.id, c.id, "never sent: the id is kept");
    assert_eq!(merged.body, json!({"name": "a", "x": 2}));
    assert_ne!(merged.fingerprint, c.fingerprint);
    assert_eq!(w.store.len(), 1);
    let p = w.enqueue(A, delete("alice", &c.target));
    assert!(p.row.is_none(), "cancelled: nothing stored");
    assert!(w.store.is_empty());
}

#[test]
fn s7_app_chosen_create_target_follows_the_create_rules() {
    let mut w = World::new(1);
    let c =
        w.enqueue(A, json!({"owner": "alice", "target": "note:abc", "kind": "create", "body": {"t": 1}})).row.unwrap();
    assert_eq!(c.target, "note:abc");
    let m = w.enqueue(A, update("alice", "note:abc", json!({"t": 2}))).row.unwrap();
    assert_eq!((m.id.as_str(), m.body.clone()), (c.id.as_str(), json!({"t": 2})));
    // Once its outcome is unknown, an edit is an ordinary successor (not an intent).
    w.start_flush(A, "alice");
    w.drain(A, &mut |s, op| {
        s.handle(op);
        Outcome::transient("NETWORK")
    });
    let u = w.enqueue(A, update("alice", "note:abc", json!({"t": 3}))).row.unwrap();
    assert_eq!(u.successor_of.as_deref(), Some(c.id.as_str()));
    assert_eq!(u.target, "note:abc");
}

#[test]
fn s7_merge_into_blocked_create_folds_intents_and_reissues_under_a_new_id() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::Permanent { code: "INVALID".into() });
    let i = w.enqueue(A, update("alice", &c.target, json!({"b": 1}))).row.unwrap();
    assert_eq!(i.successor_of.as_deref(), Some(c.id.as_str()), "in flight: an intent");
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    assert_eq!(w.row(&c.id).unwrap().state, RowState::Blocked);

    let p = w.enqueue(A, update("alice", &c.target, json!({"c": 1})));
    let re = p.row.unwrap();
    assert_ne!(re.id, c.id, "a re-issued create gets a new id");
    assert_eq!(re.target, c.target);
    assert_eq!(re.body, json!({"a": 1, "b": 1, "c": 1}));
    assert_eq!(re.state, RowState::Queued);
    assert!(re.claim.is_none() && re.evidence.is_none() && re.blocked_code.is_none());
    assert_eq!(re.saved_at, c.saved_at);
    assert_eq!(w.store.len(), 1);
    assert!(p.absorbed.contains(&i.id));
}

#[test]
fn s7_retry_blocked_reissues_and_repoints_intents() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::Permanent { code: "INVALID".into() });
    let i = w.enqueue(A, update("alice", &c.target, json!({"b": 1}))).row.unwrap();
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    let scope = w.store.read(&[outbox_core::Scope::target("alice", &c.target)]);
    let plan = plan_retry_blocked("alice", &c.id, Some(&json!({"a": 2})), &scope, "new-c").unwrap();
    assert_eq!(w.store.replace(&plan), outbox_core::ReplaceOutcome::Committed);
    assert!(w.row(&c.id).is_none());
    let fresh = w.row("new-c").unwrap();
    assert_eq!((fresh.state, fresh.body.clone()), (RowState::Queued, json!({"a": 2})));
    assert_eq!(w.row(&i.id).unwrap().successor_of.as_deref(), Some("new-c"));
    let rep = w.flush(A, "alice");
    assert_eq!((rep.succeeded, rep.converted), (2, 1));
    assert!(w.store.is_empty());
}

#[test]
fn s6_auth_holds_the_row_ends_the_flush_and_resume_held_requeues() {
    let mut w = World::new(1);
    for t in ["w:1", "w:2", "w:3"] {
        w.server.seed_record(t, 1);
        let _ = w.enqueue(A, update("alice", t, json!({"x": 1})));
    }
    w.tabs[A].now = w.tabs[A].now.plus(1);
    w.start_flush(A, "alice");
    let mut first = true;
    let rep = w.drain(A, &mut |s, op| {
        if std::mem::take(&mut first) {
            Outcome::Auth
        } else {
            s.handle(op)
        }
    });
    assert_eq!(rep.held, 1);
    let rows = w.store.read_owner("alice");
    let held = rows.iter().filter(|r| r["state"] == "held").count();
    assert_eq!(held, 1);
    assert_eq!(rows.len() as u64, 3 - rep.succeeded, "sends already under way may finish; no new claims");
    let (plan, n) = plan_resume_held("alice", &rows).unwrap();
    assert_eq!(n, 1);
    assert_eq!(w.store.replace(&plan), outbox_core::ReplaceOutcome::Committed);
    w.flush(A, "alice");
    assert!(w.store.is_empty());
}

#[test]
fn s8_select_sendable_order_and_rules() {
    let now = Millis(1_000);
    let r = |id: &str, saved: i64, extra: Value| {
        let mut v = json!({"id": id, "owner": "o", "target": format!("t:{id}"), "kind": "update",
                           "body": {}, "savedAt": saved, "state": "queued"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        Stored::from_value(&v)
    };
    let stored = vec![
        r("b", 2, json!({})),
        r("a", 2, json!({})),
        r("first", 1, json!({})),
        r("later", 0, json!({"nextAttemptAt": 2_000})),
        r("held", 0, json!({"state": "held"})),
        r("blk", 0, json!({"state": "blocked"})),
        r("succ", 0, json!({"successorOf": "a"})),
        r("afterblk", 0, json!({"successorOf": "blk"})),
        r(
            "other",
            0,
            json!({"state": "sending", "writer": {"bundle": "x", "at": 0},
                              "claim": {"tabId": "other", "expiresAt": 5_000, "fence": 1}}),
        ),
        r("intent", 0, json!({"target": "pending:zz", "successorOf": "zz"})),
    ];
    let ids: Vec<&str> = select_sendable(&stored, "me", now, LEASE, None).iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec!["afterblk", "first", "a", "b"]);
}

#[test]
fn s12_metrics_count_states_age_and_counters() {
    let mut w = World::new(1);
    let _ = w.enqueue(A, update("alice", "w:1", json!({})));
    let _ = w.enqueue(A, update("bob", "w:1", json!({})));
    w.store.seed(json!({"id": "bad", "savedAt": 1}));
    let mut counters = Counters::default();
    counters.record(&Outcome::Success { receipt: json!({}), replayed: true });
    counters.record(&Outcome::Permanent { code: "INVALID".into() });
    counters.permanent_failures = 1; // counted when the row is written blocked (flush_reports.rs)
    let all: Vec<Value> = w.store.all().cloned().collect();
    let now = w.tabs[A].now.plus(250);
    let m = compute(&all, Some("alice"), &counters, now);
    assert_eq!((m.total, m.by_state.queued, m.undecodable), (1, 1, 0));
    assert_eq!(m.oldest_queued_age_ms, Some(250));
    assert_eq!((m.attempts.success, m.attempts.permanent, m.replays, m.permanent_failures), (1, 1, 1, 1));
    let m = compute(&all, None, &counters, now);
    assert_eq!((m.total, m.undecodable), (2, 1));
}

#[test]
fn s7_without_prepare_port_the_intent_is_blocked_successor_unprepared_and_kept() {
    let mut w = World::new(1);
    w.tabs[A].ports.prepare = false;
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let i = w.enqueue(A, update("alice", &c.target, json!({"b": 2}))).row.unwrap();
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.succeeded, rep.blocked, rep.converted), (1, 1, 0));
    assert!(w.row(&c.id).is_none(), "the create is ACK-deleted once its intents are dealt with");
    let kept = w.row(&i.id).unwrap();
    assert_eq!(kept.state, RowState::Blocked);
    assert_eq!(kept.blocked_code.as_deref(), Some(outbox_core::intent::SUCCESSOR_UNPREPARED));
    assert_eq!((kept.target.as_str(), kept.body.clone()), (c.target.as_str(), json!({"b": 2})), "original kept");
}

#[test]
fn s7_a_throwing_prepare_port_blocks_the_intent_too() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let i = w.enqueue(A, update("alice", &c.target, json!({"b": 2}))).row.unwrap();
    w.deliver(A, 0);
    w.step(A, 0, &mut truthful); // the ACK asks to convert first
    let idx = w.find(A, |r| matches!(r, outbox_core::Request::Prepare { .. })).expect("asks the port");
    let outbox_core::Request::Prepare { token, .. } = w.tabs[A].inbox.remove(idx) else { unreachable!() };
    w.with_flush(A, |f, out| f.handle_prepared(token, Err("port threw".into()), out));
    w.collect(A);
    w.drain(A, &mut truthful);
    let kept = w.row(&i.id).unwrap();
    assert_eq!(kept.blocked_code.as_deref(), Some(outbox_core::intent::SUCCESSOR_UNPREPARED));
    assert!(w.row(&c.id).is_none());
}

#[test]
fn s7_intents_of_one_pending_target_coalesce_newest_over_older() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let i1 = w.enqueue(A, update("alice", &c.target, json!({"b": 1, "c": 1}))).row.unwrap();
    let p = w.enqueue(A, update("alice", &c.target, json!({"c": 2})));
    let i2 = p.row.unwrap();
    assert_eq!(p.absorbed, vec![i1.id.clone()]);
    assert_eq!((i2.successor_of.as_deref(), i2.body.clone()), (Some(c.id.as_str()), json!({"b": 1, "c": 2})));
    let d = w.enqueue(A, delete("alice", &c.target));
    assert_eq!(d.absorbed, vec![i2.id.clone()]);
    assert_eq!(d.row.unwrap().successor_of.as_deref(), Some(c.id.as_str()));
    assert_eq!(w.store.len(), 2, "the create and one intent");
}

#[test]
fn s7_an_edit_of_a_pending_target_without_its_create_is_an_intent() {
    let mut w = World::new(1);
    let i = w.enqueue(A, update("alice", "pending:gone", json!({"x": 1}))).row.unwrap();
    assert_eq!((i.target.as_str(), i.successor_of.as_deref()), ("pending:gone", Some("gone")));
    assert!(i.is_intent());
}

#[test]
fn s7_a_delete_intent_folded_into_a_blocked_create_cancels_it() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::Permanent { code: "INVALID".into() });
    let d = w.enqueue(A, delete("alice", &c.target)).row.unwrap();
    assert!(d.is_intent());
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    assert_eq!(w.row(&c.id).unwrap().state, RowState::Blocked);
    let p = w.enqueue(A, update("alice", &c.target, json!({"b": 2})));
    assert!(p.row.is_none(), "the delete intent cancels the create; nothing is stored");
    assert!(w.store.is_empty());
    assert!(p.absorbed.contains(&c.id) && p.absorbed.contains(&d.id));
}

#[test]
fn discard_refuses_rows_in_flight_and_other_owners_rows() {
    let mut w = World::new(1);
    let r = w.enqueue(A, update("alice", "w:1", json!({}))).row.unwrap();
    let now = w.tabs[A].now;
    let raw = w.raw(&r.id).unwrap();
    assert_eq!(plan_discard(Some("bob"), Some(&raw), now, LEASE), Err(DiscardSkip::OtherOwner));
    assert_eq!(plan_discard(Some("alice"), None, now, LEASE), Err(DiscardSkip::Missing));
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let flying = w.raw(&r.id).unwrap();
    assert_eq!(plan_discard(Some("alice"), Some(&flying), now, LEASE), Err(DiscardSkip::InFlight));
    let plan = plan_discard(Some("alice"), Some(&flying), now.plus(LEASE), LEASE).unwrap();
    assert_eq!(w.store.replace(&plan), outbox_core::ReplaceOutcome::Committed);
    assert!(w.store.is_empty());
}

#[test]
fn purge_owner_removes_that_owners_rows_only_and_keeps_undecodable_ones() {
    let mut w = World::new(1);
    let _ = w.enqueue(A, update("alice", "w:1", json!({})));
    let _ = w.enqueue(A, create("alice", json!({})));
    let bob = w.enqueue(A, update("bob", "w:1", json!({}))).row.unwrap();
    w.store.seed(json!({"id": "bad", "owner": "alice", "kind": "upsert"}));
    let (plan, n) = plan_purge_owner("alice", &w.store.read_owner("alice")).unwrap();
    assert_eq!(n, 2);
    assert_eq!(w.store.replace(&plan), outbox_core::ReplaceOutcome::Committed);
    let left: Vec<String> = w.store.all().map(|v| v["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&bob.id) && left.contains(&"bad".to_owned()));
}

#[test]
fn s8_an_intent_converted_later_never_overtakes_an_earlier_edit_waiting_in_its_records_scope() {
    // Found by the soak: U1, an edit of the pending record, is converted when the create's
    // receipt arrives, then deferred (503, Retry-After 60 s). U2, made through the pending
    // target after the create row is gone, is converted from the looked-up receipt. It
    // must wait behind U1 in the record's scope, not go first because the create it named
    // has vanished (§8: a record's rows go out one at a time, in order).
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"w": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let u1 = w.enqueue(A, update("alice", &c.target, json!({"w": 2}))).row.unwrap();
    w.deliver(A, 0);
    let u1_id = u1.id.clone();
    let rep = w.drain(A, &mut |s, op| {
        if op.id == u1_id {
            Outcome::Transient { code: Some("HTTP_503".into()), retry_after_ms: Some(60_000) }
        } else {
            s.handle(op)
        }
    });
    assert_eq!((rep.converted, rep.deferred), (1, 1));
    let u2 = w.enqueue(A, update("alice", &c.target, json!({"w": 3}))).row.unwrap();
    assert_eq!(u2.successor_of.as_deref(), Some(c.id.as_str()), "an intent of the vanished create");
    w.advance(A, 10_000);
    let rep = w.flush(A, "alice");
    assert_eq!(rep.converted, 1, "U2 converted from the looked-up receipt");
    let converted = w.row(&u2.id).unwrap();
    assert_eq!(converted.successor_of.as_deref(), Some(u1.id.as_str()), "it waits for U1: {converted}");
    assert_eq!(w.server.applied, vec![c.id.clone()], "nothing overtook U1 while it waits for its Retry-After");
    w.advance(A, 3_600_000);
    w.flush(A, "alice");
    w.flush(A, "alice");
    assert!(w.store.is_empty(), "{:?}", w.store.all().collect::<Vec<_>>());
    assert_eq!(w.server.applied[..2], [c.id.clone(), u1.id.clone()], "U1 first");
    let target = w.server.receipt_of(&c.id).unwrap()["serverId"].as_str().unwrap().to_owned();
    assert_eq!(w.server.records[&target].body, json!({"w": 3}), "the user's last write stays");
}

#[test]
fn s7_a_converted_intent_waits_for_a_row_a_tab_queued_with_the_server_id() {
    // Another tab had the receipt and edited the record by its server id; this tab's intent
    // of the pending target is converted afterwards and goes after that edit.
    let mut w = World::new(2);
    let c = w.enqueue(A, create("alice", json!({"w": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let intent = w.enqueue(A, update("alice", &c.target, json!({"w": 2}))).row.unwrap();
    let server_id = w.server.receipt_of(&c.id).unwrap()["serverId"].as_str().unwrap().to_owned();
    let direct = w.enqueue(1, update("alice", &server_id, json!({"w": 3}))).row.unwrap();
    w.deliver(A, 0);
    w.drain(A, &mut |_, op| Outcome::Transient { code: Some(format!("held {}", op.id)), retry_after_ms: Some(60_000) });
    let converted = w.row(&intent.id).unwrap();
    assert_eq!(converted.target, server_id);
    assert_eq!(converted.successor_of.as_deref(), Some(direct.id.as_str()), "{converted}");
}
