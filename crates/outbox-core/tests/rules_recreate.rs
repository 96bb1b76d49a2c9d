//! §7 create rules against the record's latest create only: a delete of an earlier life of
//! the record (an app-chosen id deleted, then created again) is never cancelled or dropped by
//! an edit of the new create, and an edit of the create that is in flight is waited for,
//! not jumped by merging a newer edit into the create.

mod sim;

use outbox_core::{Outcome, RowState};
use serde_json::json;
use sim::*;

const A: usize = 0;

fn not_applied(_: &mut Server, _: &outbox_core::SendOp) -> Outcome {
    Outcome::transient("NETWORK")
}

fn create_at(owner: &str, target: &str, body: serde_json::Value) -> serde_json::Value {
    json!({"owner": owner, "target": target, "kind": "create", "body": body})
}

/// note:1 exists on the server; its delete D0 is sent and fails (not applied) while the
/// user creates note:1 again (C, waiting behind D0). Returns D0's and C's ids.
fn delete_then_recreate(w: &mut World) -> (String, String) {
    w.server.seed_record("note:1", 1);
    let d0 = w.enqueue(A, delete("alice", "note:1")).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(w, A, &mut not_applied);
    let c = w.enqueue(A, create_at("alice", "note:1", json!({"t": "again"}))).row.unwrap();
    assert_eq!(c.successor_of.as_deref(), Some(d0.id.as_str()));
    w.deliver(A, 0);
    w.drain(A, &mut truthful);
    assert_eq!(w.row(&d0.id).unwrap().state, RowState::Queued);
    (d0.id, c.id)
}

#[test]
fn s7_a_delete_after_delete_and_recreate_cancels_the_create_and_keeps_the_first_delete() {
    let mut w = World::new(1);
    let (d0, c) = delete_then_recreate(&mut w);
    let p = w.enqueue(A, delete("alice", "note:1"));
    assert_eq!(p.row, None, "the unsent create is cancelled, nothing new is written");
    assert_eq!(p.absorbed, vec![c.clone()]);
    assert!(w.row(&d0).is_some(), "the delete of the record's earlier life stays");
    w.advance(A, 400_000);
    w.flush(A, "alice");
    assert!(w.server.records["note:1"].deleted, "the server's note:1 is deleted, as the user asked twice");
    assert_eq!(w.server.times_applied(&c), 0);
}

#[test]
fn s7_an_update_after_delete_and_recreate_merges_into_the_create_only() {
    let mut w = World::new(1);
    let (d0, c) = delete_then_recreate(&mut w);
    let p = w.enqueue(A, update("alice", "note:1", json!({"t": "edited"})));
    let merged = p.row.expect("merged into the create");
    assert_eq!((merged.id.as_str(), merged.body["t"].as_str()), (c.as_str(), Some("edited")));
    assert_eq!(p.absorbed, Vec::<String>::new());
    assert_eq!(w.row(&d0).unwrap().state, RowState::Queued, "the earlier delete is kept, untouched");
    assert_eq!(w.row(&c).unwrap().successor_of.as_deref(), Some(d0.as_str()));
}

#[test]
fn s7_an_edit_of_a_blocked_create_waits_for_an_older_edit_in_flight_instead_of_merging() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create_at("alice", "note:1", json!({"title": "draft"}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::Permanent { code: "INVALID".into() });
    let u1 = w.enqueue(A, update("alice", "note:1", json!({"title": "a"}))).row.unwrap();
    assert_eq!(u1.successor_of.as_deref(), Some(c.id.as_str()));
    // C is blocked; the drain sends U1 (a blocked predecessor lets it go).
    w.deliver(A, 0);
    run_until_sent(&mut w, A, &mut not_applied);
    assert_eq!(w.row(&c.id).unwrap().state, RowState::Blocked);
    assert_eq!(w.row(&u1.id).unwrap().state, RowState::Sending);

    let before = w.raw(&c.id).unwrap();
    let u2 = w.enqueue(A, update("alice", "note:1", json!({"title": "b"})));
    let row = u2.row.expect("a row of its own");
    assert_ne!(row.id, c.id, "not merged into the create");
    assert_eq!(row.successor_of.as_deref(), Some(u1.id.as_str()), "after the edit in flight");
    assert_eq!(u2.absorbed, Vec::<String>::new());
    assert_eq!(w.raw(&c.id).unwrap(), before, "the blocked create is left as it is");
    assert_eq!(w.row(&u1.id).unwrap().successor_of.as_deref(), Some(c.id.as_str()));
}
