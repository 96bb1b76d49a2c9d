//! SPEC §13, one test per row, several simulated tabs with their own fake clocks over the
//! in-memory store.

mod sim;

use outbox_core::intent::PREDECESSOR_RECEIPT_UNKNOWN;
use outbox_core::{Outcome, Request, RowState};
use serde_json::{json, Value};
use sim::*;

const A: usize = 0;
const B: usize = 1;

fn lost_answer(s: &mut Server, op: &outbox_core::SendOp) -> Outcome {
    s.handle(op); // the server commits, the answer never arrives
    Outcome::transient("NETWORK")
}

fn not_applied(_: &mut Server, _: &outbox_core::SendOp) -> Outcome {
    Outcome::transient("NETWORK")
}

#[test]
fn s13_row1_update_over_in_flight_update_becomes_successor_and_waits() {
    let mut w = World::new(2);
    w.server.seed_record("workout:42", 1);
    let u1 = w.enqueue(A, update("alice", "workout:42", json!({"weight": 80}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut not_applied);
    assert_eq!(w.row(&u1.id).unwrap().state, RowState::Sending);

    let u2 = w.enqueue(A, update("alice", "workout:42", json!({"reps": 5}))).row.unwrap();
    assert_eq!(u2.successor_of.as_deref(), Some(u1.id.as_str()));
    assert!(w.row(&u1.id).is_some(), "U1 kept");
    let u2_raw = w.raw(&u2.id).unwrap();

    w.deliver(A, 0); // U1 fails transiently
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.deferred), (1, 1), "U2 is not sent while U1 exists");
    assert!(w.server.received.is_empty());
    let u1_after = w.row(&u1.id).unwrap();
    assert_eq!(u1_after.state, RowState::Queued);
    assert!(u1_after.sent_at.is_none() && u1_after.next_attempt_at.is_some());
    assert_eq!(u1_after.claim.unwrap().fence, 1, "claim expired, fence kept");
    assert_eq!(w.raw(&u2.id).unwrap(), u2_raw, "U2 unchanged");

    w.advance(A, 400_000);
    let rep = w.flush(A, "alice");
    assert_eq!(rep.succeeded, 2);
    assert_eq!(w.server.applied, vec![u1.id.clone(), u2.id.clone()], "U1 then U2");
    assert!(w.store.is_empty());
}

#[test]
fn s13_row2_two_tabs_flush_at_once_exactly_one_claims() {
    let mut w = World::new(2);
    let c1 = w.enqueue(A, create("alice", json!({"name": "leg day"}))).row.unwrap();
    w.start_flush(A, "alice");
    w.start_flush(B, "alice");
    // Both read the queue before either claims.
    w.step(A, 0, &mut truthful);
    w.step(B, 0, &mut truthful);
    let is_write = |r: &Request| matches!(r, Request::Write { .. });
    let ia = w.find(A, is_write).unwrap();
    w.step(A, ia, &mut truthful);
    let ib = w.find(B, is_write).unwrap();
    w.step(B, ib, &mut truthful);

    assert_eq!(w.row(&c1.id).unwrap().claim.unwrap().fence, 1);
    assert!(w.find(A, is_send).is_some(), "A sends");
    assert!(w.find(B, is_send).is_none(), "B does not send");
    // B reads the queue again, finds the row in flight by A, and ends without sending.
    let rb = w.drain(B, &mut truthful);
    assert_eq!((rb.claimed, rb.stale), (0, 1));
    let ra = w.drain(A, &mut truthful);
    assert_eq!((ra.claimed, ra.succeeded), (1, 1));
    assert_eq!(w.server.received.len(), 1);
}

#[test]
fn s13_row3_late_answers_after_takeover_change_nothing_and_receipt_is_reported() {
    let mut w = World::new(2);
    let c1 = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful); // reaches the server; answer still in the air

    w.advance(B, LEASE + 1);
    w.start_flush(B, "alice");
    run_until_sent(&mut w, B, &mut truthful);
    let taken = w.row(&c1.id).unwrap();
    let claim = taken.claim.clone().unwrap();
    assert_eq!((claim.tab_id.as_str(), claim.fence), ("tab-1", 2));
    let before = w.raw(&c1.id).unwrap();

    // A's late failure: no change.
    w.tabs[A].air[0].1 = Outcome::transient("HTTP_503");
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    assert_eq!(w.raw(&c1.id).unwrap(), before, "late failure changed nothing");

    // A's late success, applied through the same steps (`ack` with A's ticket): the row
    // stays, the receipt is reported.
    let now = w.tabs[A].now;
    let mut out = outbox_core::Outstanding::new();
    let mut f = outbox_core::Flush::for_answer(
        outbox_core::FlushOptions::new("alice", w.tabs[A].tab.clone()),
        w.row(&c1.id).unwrap(),
        outbox_core::Ticket { tab_id: "tab-0".into(), fence: 1 },
        Outcome::success(json!({"serverId": "rec:1", "revision": 1})),
        &mut out,
    );
    while let Some(req) = f.poll_request() {
        let Request::Write { token, scopes } = req else { panic!("only writes") };
        let r = w.store.transact(&scopes, |cur| f.plan(token, cur, now, &mut w.tabs[A].draws));
        f.handle_written(token, r, now, &mut out);
    }
    assert!(f.is_done());
    assert_eq!(w.raw(&c1.id).unwrap(), before, "late success changed nothing");
    let rep = f.report();
    assert_eq!(rep.receipts.len(), 1);
    assert!(!rep.receipts[0].applied);
    assert_eq!(rep.receipts[0].receipt["serverId"], "rec:1");

    // B's answer deletes it; the server applied the create once.
    let rb = w.drain(B, &mut truthful);
    assert_eq!(rb.succeeded, 1);
    assert!(w.store.is_empty());
    assert_eq!(w.server.times_applied(&c1.id), 1);
}

#[test]
fn s6_an_answer_with_another_tabs_ticket_changes_nothing_even_when_the_row_carries_it() {
    let mut w = World::new(2);
    let c1 = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let before = w.raw(&c1.id).unwrap();
    let ticket = w.row(&c1.id).unwrap().ticket().unwrap();
    assert_eq!(ticket.tab_id, w.tabs[A].tab.tab_id);

    // Tab B answers with A's ticket, which matches the row's claim exactly.
    let mut out = outbox_core::Outstanding::new();
    let mut f = outbox_core::Flush::for_answer(
        outbox_core::FlushOptions::new("alice", w.tabs[B].tab.clone()),
        w.row(&c1.id).unwrap(),
        ticket,
        Outcome::success(json!({"serverId": "rec:1"})),
        &mut out,
    );
    assert_eq!(f.poll_request(), None, "nothing to read or write");
    assert!(f.is_done());
    assert!(f.is_one_answer(), "an ack, not a flush of the queue");
    let drain = outbox_core::Flush::new(outbox_core::FlushOptions::new("alice", w.tabs[B].tab.clone()), &mut out);
    assert!(!drain.is_one_answer());
    assert_eq!((f.report().applied, f.report().receipts.len()), (0, 0));
    assert_eq!(w.raw(&c1.id).unwrap(), before);
    assert!(out.is_empty());
}

#[test]
fn s13_row4_edit_of_create_in_flight_becomes_intent_converted_before_delete() {
    let mut w = World::new(1);
    let c1 = w.enqueue(A, create("alice", json!({"name": "x"}))).row.unwrap();
    assert_eq!(c1.target, format!("pending:{}", c1.id));
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);

    let u1 = w.enqueue(A, update("alice", &c1.target, json!({"name": "y"}))).row.unwrap();
    assert_eq!(u1.successor_of.as_deref(), Some(c1.id.as_str()));
    assert_eq!(u1.target, c1.target, "intent parked on the pending target");
    assert!(w.row(&c1.id).is_some());

    w.deliver(A, 0);
    // Next write converts U1 while C1 still exists.
    w.step(A, 0, &mut truthful); // ack: convert first
    assert!(w.row(&c1.id).is_some());
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.converted, rep.succeeded), (1, 2), "U1 sent in the same flush");
    assert_eq!(w.server.applied, vec![c1.id.clone(), u1.id.clone()]);
    let (_, target, kind) = w.server.received.last().unwrap();
    assert_eq!((target.as_str(), kind.as_str()), ("rec:1", "update"));
    assert_eq!(w.server.records["rec:1"].body, json!({"name": "y"}));
    assert!(w.store.is_empty());
}

#[test]
fn s13_row5_delete_of_deferred_create_is_intent_and_goes_after_replayed_receipt() {
    let mut w = World::new(1);
    let c1 = w.enqueue(A, create("alice", json!({"name": "x"}))).row.unwrap();
    w.start_flush(A, "alice");
    w.drain(A, &mut lost_answer);
    let deferred = w.row(&c1.id).unwrap();
    assert_eq!(deferred.state, RowState::Queued);
    let fp = deferred.fingerprint.clone();

    let d1 = w.enqueue(A, delete("alice", &c1.target)).row.expect("intent delete, not a cancel");
    assert_eq!(d1.successor_of.as_deref(), Some(c1.id.as_str()));
    assert!(w.row(&c1.id).is_some());

    w.advance(A, 400_000);
    let rep = w.flush(A, "alice");
    assert_eq!(rep.receipts[0].id, c1.id);
    assert!(rep.receipts[0].replayed, "same id and fingerprint: the gate replays");
    assert_eq!(rep.converted, 1);
    assert_eq!(w.server.received[1].0, c1.id);
    assert_eq!(w.server.ledger[&c1.id].0, fp);
    assert_eq!(w.server.times_applied(&c1.id), 1);
    assert_eq!(w.server.received.last().unwrap(), &(d1.id.clone(), "rec:1".to_owned(), "delete".to_owned()));
    assert!(w.server.records["rec:1"].deleted);
    assert!(w.store.is_empty());
}

#[test]
fn s13_row6_another_owners_row_is_never_claimed_or_deleted() {
    let mut w = World::new(1);
    w.server.seed_record("workout:1", 1);
    let bob = w.enqueue(A, update("bob", "workout:1", json!({"w": 1}))).row.unwrap();
    let alice = w.enqueue(A, update("alice", "workout:1", json!({"w": 2}))).row.unwrap();
    assert!(alice.successor_of.is_none(), "scopes are per owner");
    let bob_raw = w.raw(&bob.id).unwrap();
    let rep = w.flush(A, "alice");
    assert_eq!(rep.claimed, 1);
    assert_eq!(w.raw(&bob.id).unwrap(), bob_raw);
    assert!(w.server.received.iter().all(|(id, _, _)| *id != bob.id));
    // purging alice leaves bob's row
    assert_eq!(w.store.len(), 1);
}

#[test]
fn s13_row7_delete_after_update_in_flight_waits_then_resolves_revision_conflict() {
    let mut w = World::new(1);
    w.server.seed_record("workout:7", 1);
    let u1 = w
        .enqueue(A, json!({"owner": "alice", "target": "workout:7", "kind": "update", "body": {"w": 1}, "revision": 1}))
        .row
        .unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let d =
        w.enqueue(A, json!({"owner": "alice", "target": "workout:7", "kind": "delete", "revision": 1})).row.unwrap();
    assert_eq!(d.successor_of.as_deref(), Some(u1.id.as_str()));
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.succeeded, rep.conflicts), (2, 1));
    let (last_id, _, kind) = w.server.received.last().unwrap().clone();
    assert_eq!(kind, "delete");
    assert_ne!(last_id, d.id, "a conflict successor has a new operation id");
    assert_eq!(w.server.received.iter().filter(|r| r.0 == d.id).count(), 1);
    assert!(w.server.records["workout:7"].deleted);
    assert!(w.store.is_empty());
    assert_eq!(rep.counters.conflicts, 1);
}

#[test]
fn s13_row7_conflict_successor_row_carries_new_id_revision_and_note() {
    let mut w = World::new(1);
    w.server.seed_record("workout:7", 3);
    let d =
        w.enqueue(A, json!({"owner": "alice", "target": "workout:7", "kind": "delete", "revision": 1})).row.unwrap();
    w.start_flush(A, "alice");
    // First send conflicts; the successor's send is then held in the air.
    run_until_sent(&mut w, A, &mut truthful);
    w.deliver(A, 0);
    run_until_sent(&mut w, A, &mut not_applied);
    let succ = w.store.all().map(|v| outbox_core::decode(v).unwrap()).next().unwrap();
    assert_ne!(succ.id, d.id);
    assert_eq!(succ.revision, Some(json!(3)));
    assert_ne!(succ.fingerprint, d.fingerprint);
    assert_eq!(succ.conflict.as_ref().unwrap()["previousId"], json!(d.id));
    assert_eq!(succ.conflict.as_ref().unwrap()["actualRevision"], json!(3));
    assert_eq!(succ.saved_at, d.saved_at);
}

#[test]
fn s13_row8_other_entity_type_follows_the_same_successor_rule() {
    let mut w = World::new(1);
    w.server.seed_record("plan:7", 1);
    w.server.seed_record("workout:7", 1);
    let p1 = w.enqueue(A, update("alice", "plan:7", json!({"a": 1}))).row.unwrap();
    let other = w.enqueue(A, update("alice", "workout:7", json!({"z": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    // Send plan:7 only (hold the workout row's send).
    run_until_sent(&mut w, A, &mut not_applied);
    let u = w.enqueue(A, update("alice", "plan:7", json!({"b": 2}))).row.unwrap();
    let d = w.enqueue(A, delete("alice", "plan:7"));
    let d_row = d.row.unwrap();
    let in_flight_id = if w.row(&p1.id).unwrap().state == RowState::Sending { p1.id.clone() } else { other.id.clone() };
    if in_flight_id == p1.id {
        assert_eq!(u.successor_of.as_deref(), Some(p1.id.as_str()));
        assert_eq!(d_row.successor_of.as_deref(), Some(p1.id.as_str()));
        assert_eq!(d.absorbed, vec![u.id.clone()], "the queued update is replaced by the delete");
    } else {
        assert!(u.successor_of.is_none() && d_row.successor_of.is_none());
    }
    assert!(w.row(&other.id).is_some(), "workout:7 untouched by plan:7 edits");
}

#[test]
fn s13_row9_older_writer_sending_is_in_flight_until_its_lease_ends() {
    let mut w = World::new(1);
    w.server.seed_record("workout:9", 1);
    let now = w.tabs[A].now.0;
    let old = json!({
        "id": "old-1", "owner": "alice", "target": "workout:9", "kind": "update",
        "body": {"w": 9}, "savedAt": now - 5_000, "state": "sending", "sentAt": now - 1_000,
        "legacyField": {"keep": [1, 2]}
    });
    w.store.seed(old.clone());
    let rep = w.flush(A, "alice");
    assert_eq!(rep.claimed, 0);
    assert_eq!(w.raw("old-1").unwrap(), old, "skipped, untouched");

    let s = w.enqueue(A, update("alice", "workout:9", json!({"w": 10}))).row.unwrap();
    assert_eq!(s.successor_of.as_deref(), Some("old-1"));
    assert_eq!(w.raw("old-1").unwrap(), old, "only a successor is written");

    w.advance(A, LEASE);
    let rep = w.flush(A, "alice");
    assert_eq!(rep.claimed, 2);
    let first = &w.server.received[0];
    assert_eq!(first.0, "old-1", "resent with the same id");
    let fp = outbox_core::fingerprint::fingerprint(outbox_core::Kind::Update, "workout:9", &json!({"w": 9}), None);
    assert_eq!(w.server.ledger["old-1"].0, fp, "fingerprint computed as §2 says");
    assert!(w.store.is_empty());
}

#[test]
fn s13_row10_orphan_intent_receipt_looked_up_else_blocked_and_kept() {
    let mut w = World::new(1);
    let now = w.tabs[A].now.0;
    // Known receipt: the create was applied by the server, its row deleted by an older tab.
    applied_create(&mut w.server, "c-known");
    w.store.seed(orphan_intent("i-1", "c-known", now));
    w.store.seed(orphan_intent("i-2", "c-unknown", now));
    let rep = w.flush(A, "alice");
    assert_eq!(rep.converted, 1);
    assert_eq!(w.server.received.last().unwrap(), &("i-1".to_owned(), "rec:1".to_owned(), "update".to_owned()));
    assert!(w.row("i-1").is_none());
    let kept = w.row("i-2").unwrap();
    assert_eq!(kept.state, RowState::Blocked);
    assert_eq!(kept.blocked_code.as_deref(), Some(PREDECESSOR_RECEIPT_UNKNOWN));
    assert_eq!(kept.target, "pending:c-unknown");

    // Re-checked at the next flush: once the receipt is known it converts.
    w.server.handle(&outbox_core::SendOp {
        id: "c-unknown".into(),
        kind: "create",
        target: "pending:c-unknown".into(),
        body: json!({}),
        revision: Value::Null,
        fingerprint: "f".into(),
        attempt: 1,
        owner: "alice".into(),
    });
    let rep = w.flush(A, "alice");
    assert_eq!((rep.converted, rep.succeeded), (1, 1));
    assert!(w.store.is_empty());
}

#[test]
fn s13_row10_port_failure_leaves_the_orphan_unchanged() {
    let mut w = World::new(1);
    let now = w.tabs[A].now.0;
    let raw = json!({"id": "i-1", "owner": "alice", "target": "pending:gone", "kind": "delete",
                     "body": null, "savedAt": now, "state": "queued", "successorOf": "gone"});
    w.store.seed(raw.clone());
    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // read
    let Request::FindReceipt { token, .. } = w.tabs[A].inbox.remove(0) else { panic!("asks the port") };
    w.with_flush(A, |f, out| f.handle_found(token, Err("offline".into()), out));
    // The port's answer took time: one more read of the queue (§8), which asks nothing more.
    w.collect(A);
    assert!(matches!(w.tabs[A].inbox.as_slice(), [Request::ReadOwner { .. }]));
    w.step(A, 0, &mut truthful);
    assert!(!w.flushing(A));
    assert_eq!(w.raw("i-1").unwrap(), raw);
}

#[test]
fn s13_row11_closed_sending_tab_is_taken_over_after_the_lease() {
    let mut w = World::new(2);
    let c1 = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    w.kill(A);
    assert_eq!(w.store.len(), 1);

    let rep = w.flush(B, "alice");
    assert_eq!(rep.claimed, 0, "lease not over yet");
    assert_eq!(w.store.len(), 1, "exactly one row remains");

    w.advance(B, LEASE);
    let rep = w.flush(B, "alice");
    assert_eq!((rep.claimed, rep.succeeded), (1, 1));
    assert_eq!(w.server.times_applied(&c1.id), 1);
    assert!(rep.receipts[0].replayed);
    assert!(w.store.is_empty());
}
