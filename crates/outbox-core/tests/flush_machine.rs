//! The flush machine's own behaviour that no contract row names but that users pay for:
//! where a tab starts claiming (so tabs draining one queue rarely collide, §8 speed), and
//! that meeting another tab's claims makes it read the queue again at once.

mod sim;

use outbox_core::memstore::MemStore;
use outbox_core::{Draws, Flush, FlushOptions, Outstanding, Request, Tab};
use serde_json::json;
use sim::*;

/// Draws that always say the same.
struct Fixed(f64);

impl Draws for Fixed {
    fn unit(&mut self) -> f64 {
        self.0
    }
    fn new_id(&mut self) -> String {
        "new".into()
    }
}

fn queue_of_four() -> MemStore {
    let mut store = MemStore::new();
    for i in 0..4 {
        store.seed(json!({"id": format!("r{i}"), "owner": "alice", "target": format!("w:{i}"), "kind": "update",
                          "body": {"i": i}, "savedAt": T0 + i, "state": "queued"}));
    }
    store
}

/// The target of the first row the flush claims, with `unit` as every draw.
fn first_claimed(unit: f64) -> String {
    let store = queue_of_four();
    let mut out = Outstanding::new();
    let mut opts = FlushOptions::new("alice", Tab::new("tab-a"));
    opts.concurrency = 1;
    let mut f = Flush::new(opts, &mut out);
    let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads first") };
    f.handle_rows(token, &store.read_owner(&owner), outbox_core::Millis(T0), &mut Fixed(unit), &mut out);
    let Some(Request::Write { scopes, .. }) = f.poll_request() else { panic!("then claims") };
    match &scopes[0] {
        outbox_core::Scope::Id(id) => store.get(id).unwrap()["target"].as_str().unwrap().to_owned(),
        other => panic!("a claim reads its row by id, not {other:?}"),
    }
}

#[test]
fn claiming_starts_at_the_place_the_draw_names() {
    assert_eq!(first_claimed(0.0), "w:0");
    assert_eq!(first_claimed(0.5), "w:2");
    assert_eq!(first_claimed(0.74), "w:2");
    assert_eq!(first_claimed(0.76), "w:3");
    // A draw outside [0, 1) from a careless random source still names a row.
    assert_eq!(first_claimed(1.0), "w:3");
    assert_eq!(first_claimed(-3.0), "w:0");
}

#[test]
fn meeting_another_tabs_claims_reads_the_queue_again_at_once() {
    let mut w = World::new(2);
    for i in 0..3 {
        let _ = w.enqueue(0, update("alice", &format!("w:{i}"), json!({"i": i})));
    }
    w.start_flush(0, "alice");
    w.step(0, 0, &mut truthful); // A reads the queue
    w.start_flush(1, "alice");
    w.step(1, 0, &mut truthful); // B reads it too
    w.step(1, 0, &mut truthful); // and claims every row first
    assert!(matches!(w.tabs[0].inbox[..], [Request::Write { .. }]));
    w.step(0, 0, &mut truthful); // A's claim batch is stale
    assert_eq!(w.tabs[0].reports.len(), 0, "A goes on");
    assert!(
        matches!(w.tabs[0].inbox[..], [Request::ReadOwner { .. }]),
        "A reads the queue again instead of ending or meeting B's rows one by one: {:?}",
        w.tabs[0].inbox
    );
    let rep = w.drain(0, &mut truthful);
    assert_eq!((rep.claimed, rep.stale), (0, 3));
}

#[test]
fn s8_a_random_start_never_reorders_the_rows_of_one_record() {
    // Two rows of one record that do not name each other (an older writer's), one of another.
    let mut store = MemStore::new();
    for (id, target, at) in [("a", "w:1", T0), ("b", "w:1", T0), ("c", "w:2", T0 + 1)] {
        store.seed(json!({"id": id, "owner": "alice", "target": target, "kind": "update",
                          "body": {"id": id}, "savedAt": at, "state": "queued"}));
    }
    for unit in [0.0, 0.4, 0.6, 0.99] {
        let mut out = Outstanding::new();
        let mut f = Flush::new(FlushOptions::new("alice", Tab::new("tab-a")), &mut out);
        let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads first") };
        f.handle_rows(token, &store.read_owner(&owner), outbox_core::Millis(T0 + 5), &mut Fixed(unit), &mut out);
        let Some(Request::Write { scopes, .. }) = f.poll_request() else { panic!("then claims") };
        let ids: Vec<String> = scopes
            .iter()
            .map(|s| match s {
                outbox_core::Scope::Id(id) => id.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(ids.contains(&"a".to_owned()), "draw {unit}: w:1 starts with its older row a, not b: {ids:?}");
        assert!(!ids.contains(&"b".to_owned()), "draw {unit}: b waits for a");
    }
}

#[test]
fn s9_a_conflict_without_an_actual_revision_is_reported_blocked_not_as_a_conflict() {
    let mut w = World::new(1);
    w.server.seed_record("w:1", 1);
    let u = w.enqueue(0, json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"x": 1}, "revision": 1}));
    let id = u.row.unwrap().id;
    w.start_flush(0, "alice");
    let rep = w.drain(0, &mut |_, _| outbox_core::Outcome::Conflict { actual_revision: serde_json::Value::Null });
    assert_eq!((rep.conflicts, rep.blocked, rep.counters.conflicts), (0, 1, 0));
    let row = w.row(&id).expect("kept, blocked");
    assert_eq!(row.blocked_code.as_deref(), Some("REVISION_UNKNOWN"));
}
