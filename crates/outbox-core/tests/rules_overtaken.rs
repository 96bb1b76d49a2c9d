//! §7 overtaken blocked rows, at their edges (from an attack on the issue-32 fix): the mark
//! keeps an update from carrying older fields, and nothing else changes. A blocked create
//! is still fixed by an edit and cancelled by a delete; a request possibly on the wire is
//! waited for, never absorbed.

mod sim;

use outbox_core::Outcome;
use serde_json::json;
use sim::*;

/// Create C (app-chosen target) refused; its successor U2 claimed (C marked overtaken) and
/// refused too, since the record does not exist.
fn blocked_create_overtaken(w: &mut World) -> String {
    let c = w.enqueue(0, json!({"owner": "alice", "kind": "create", "target": "w:1", "body": {"t": "a"}}));
    let c = c.row.unwrap().id;
    w.start_flush(0, "alice");
    run_until_sent(w, 0, &mut |_, _| Outcome::Permanent { code: "INVALID".into() });
    let _ = w.enqueue(0, update("alice", "w:1", json!({"t": "b"})));
    w.deliver(0, 0);
    w.drain_with(0, &mut truthful);
    assert!(w.row(&c).unwrap().overtaken_at.is_some());
    c
}

#[test]
fn s7_an_edit_still_folds_into_an_overtaken_blocked_create_in_chain_order() {
    let mut w = World::new(1);
    let _ = blocked_create_overtaken(&mut w);
    let _ = w.enqueue(0, update("alice", "w:1", json!({"n": 1})));
    w.flush(0, "alice");
    let rec = w.server.records.get("w:1").expect("the record is created");
    assert_eq!(rec.body, json!({"t": "b", "n": 1}), "C, then U2, then U3 on top");
    assert_eq!(w.store.len(), 0);
}

#[test]
fn s7_a_delete_still_cancels_an_overtaken_blocked_create() {
    let mut w = World::new(1);
    let _ = blocked_create_overtaken(&mut w);
    let d = w.enqueue(0, delete("alice", "w:1"));
    assert!(d.row.is_none(), "cancelled: nothing stored");
    assert_eq!(w.store.len(), 0);
    assert!(w.server.records.is_empty());
}

#[test]
fn s5_s7_an_edit_waits_for_a_request_on_the_wire_even_when_its_claim_is_not_honoured() {
    // Tab 0's clock is two hours ahead: its claim of R1 is not honoured for claiming (§5),
    // but its request may be on the wire. Tab 1's edit waits for R1 instead of absorbing it,
    // so R1 cannot land after it.
    let mut w = World::new(2);
    w.server.seed_record("w:1", 1);
    w.advance(0, 2 * 3_600_000);
    let r1 = w.enqueue(0, update("alice", "w:1", json!({"a": 1}))).row.unwrap().id;
    w.start_flush(0, "alice");
    while w.find(0, is_send).is_none() {
        w.step(0, 0, &mut truthful);
    }
    let u2 = w.enqueue(1, update("alice", "w:1", json!({"a": 2}))).row.unwrap();
    assert_eq!(u2.successor_of.as_deref(), Some(r1.as_str()), "U2 waits for R1");
    w.flush(1, "alice"); // tab 1 may resend R1 (the gate replays), never U2 first
    let idx = w.find(0, is_send).unwrap();
    w.step(0, idx, &mut truthful); // R1's slow request lands
    w.drain_with(0, &mut truthful);
    w.flush(1, "alice");
    assert_eq!(w.server.records["w:1"].body, json!({"a": 2}), "the last write wins");
}
