//! Tabs whose clocks differ (§7, §8): a successor written by a tab whose clock is behind
//! carries an earlier `savedAt` than the row it waits for; its place in the chain is still
//! after it, and so is the place of every edit enqueued after it.

mod sim;

use outbox_core::RowState;
use serde_json::json;
use sim::*;

const A: usize = 0;
const B: usize = 1;

#[test]
fn s8_rows_of_one_target_go_one_after_another_when_tab_clocks_differ() {
    let mut w = World::new(2);
    w.server.seed_record("rec:1", 1);
    w.advance(A, 100_000); // tab A's clock is 100 s ahead of tab B's

    // F: A's edit, in flight.
    let f = w.enqueue(A, update("alice", "rec:1", json!({"w": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    assert_eq!(w.row(&f.id).unwrap().state, RowState::Sending);

    // K: a JSON Patch from tab B, which cannot be merged: it waits for F, with an earlier
    // `savedAt` than F's. U: a later edit from tab B, which must wait for K.
    let k = w.enqueue(B, update("alice", "rec:1", json!([{"op": "replace", "path": "/w", "value": 2}]))).row.unwrap();
    assert_eq!(k.successor_of.as_deref(), Some(f.id.as_str()));
    assert!(k.saved_at < f.saved_at);
    let u = w.enqueue(B, update("alice", "rec:1", json!({"w": 3}))).row.unwrap();
    assert!(w.row(&k.id).is_some(), "K kept");
    assert_eq!(u.successor_of.as_deref(), Some(k.id.as_str()), "the chain is F, K, U");

    // F's answer arrives; A's next round claims K and is about to send it.
    w.deliver(A, 0);
    while w.find(A, is_send).is_none() {
        w.step(A, 0, &mut truthful);
    }
    assert_eq!(w.row(&k.id).unwrap().state, RowState::Sending);

    // Tab B flushes meanwhile: U waits for K, which is in flight: B sends nothing.
    let report = w.flush(B, "alice");
    assert_eq!(report.claimed, 0, "{report:?}");
    assert_eq!(w.row(&u.id).unwrap().state, RowState::Queued);

    // A sends K and goes on to U: the server applies them in the order they were made.
    w.drain(A, &mut truthful);
    assert_eq!(w.server.applied, vec![f.id.clone(), k.id.clone(), u.id.clone()]);
    assert!(w.row(&u.id).is_none());
}
