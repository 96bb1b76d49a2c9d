//! SPEC §8 drain rules: `maxRows`, concurrent sends of different targets up to a limit,
//! rows of one target strictly one after another, and no double send by two overlapping
//! flushes of one tab.

mod sim;

use serde_json::json;
use sim::*;

const A: usize = 0;

/// Carries out every pending request of `tab` except answers, repeatedly, so that every
/// send the flush is willing to have outstanding at once is in the air.
fn fill_air(w: &mut World, tab: usize) {
    while !w.tabs[tab].inbox.is_empty() {
        w.step(tab, 0, &mut truthful);
    }
}

#[test]
fn s8_max_rows_stops_after_that_many_sends() {
    let mut w = World::new(1);
    for i in 0..5 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush_with(A, "alice", |o| o.max_rows = Some(2));
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded), (2, 2));
    assert_eq!(w.store.len(), 3);
}

#[test]
fn s8_different_targets_go_concurrently_up_to_the_limit() {
    let mut w = World::new(1);
    for i in 0..6 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush_with(A, "alice", |o| o.concurrency = 3);
    let mut most = 0;
    while w.flushing(A) {
        fill_air(&mut w, A);
        most = most.max(w.tabs[A].air.len());
        if !w.tabs[A].air.is_empty() {
            w.deliver(A, 0);
        }
    }
    assert_eq!(most, 3, "three sends outstanding at once, never more");
    assert_eq!(w.server.applied.len(), 6);
}

#[test]
fn s8_rows_of_one_target_are_sent_one_after_another() {
    let mut w = World::new(1);
    w.server.seed_record("w:1", 1);
    let now = w.tabs[A].now.0;
    // Two rows of one target that do not name each other (as an older writer may leave).
    for id in ["a", "b"] {
        w.store.seed(json!({"id": id, "owner": "alice", "target": "w:1", "kind": "update",
                            "body": {"x": id}, "savedAt": now, "state": "queued"}));
    }
    w.start_flush(A, "alice");
    let mut most = 0;
    while w.flushing(A) {
        fill_air(&mut w, A);
        most = most.max(w.tabs[A].air.len());
        if !w.tabs[A].air.is_empty() {
            w.deliver(A, 0);
        }
    }
    assert_eq!(most, 1, "never two attempts of one target outstanding");
    assert_eq!(w.server.applied, vec!["a".to_owned(), "b".to_owned()]);
}

#[test]
fn s8_two_overlapping_flushes_of_one_tab_do_not_double_send() {
    // Two flush machines of the same tab (same tab id) over one store.
    let mut w = World::new(2);
    w.tabs[1].tab = w.tabs[0].tab.clone();
    let c = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    w.start_flush(1, "alice");
    w.step(0, 0, &mut truthful); // both read the queue
    w.step(1, 0, &mut truthful);
    fill_air(&mut w, 0);
    fill_air(&mut w, 1);
    let sends = w.tabs[0].air.len() + w.tabs[1].air.len();
    assert_eq!(sends, 1, "one attempt of the row in flight");
    while w.flushing(0) || w.flushing(1) {
        for t in [0, 1] {
            if !w.tabs[t].air.is_empty() {
                w.deliver(t, 0);
            }
            fill_air(&mut w, t);
        }
    }
    assert_eq!(w.server.received.iter().filter(|r| r.0 == c.id).count(), 1);
    assert!(w.store.is_empty());
}
