//! The flush machine's own behaviour that no contract row names but that users pay for:
//! where a tab starts claiming (so tabs draining one queue rarely collide, §8 speed), and
//! what meeting another tab's claims makes it do: ask which rows are left (keys only) and go
//! on elsewhere, or read the queue again when nothing of its list is left.

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

fn queue_of(n: i64) -> MemStore {
    let mut store = MemStore::new();
    for i in 0..n {
        store.seed(json!({"id": format!("r{i}"), "owner": "alice", "target": format!("w:{i}"), "kind": "update",
                          "body": {"i": i}, "savedAt": T0 + i, "state": "queued"}));
    }
    store
}

/// The ids of the rows a flush's claim batch (`token`, its `scopes`) claims in `store`.
fn claimed(f: &mut Flush, token: outbox_core::Token, store: &MemStore, scopes: &[outbox_core::Scope]) -> Vec<String> {
    let now = outbox_core::Millis(T0 + 10);
    let plan = f.plan(token, &store.read(scopes), now, &mut Fixed(0.0)).expect("claims");
    let mut ids = Vec::new();
    for put in &plan.puts {
        if put["state"] == json!("sending") {
            ids.push(put["id"].as_str().unwrap().to_owned());
        }
    }
    ids
}

/// The target of the first row the flush claims, with `unit` as every draw.
fn first_claimed(unit: f64) -> String {
    let store = queue_of(4);
    let mut out = Outstanding::new();
    let mut opts = FlushOptions::new("alice", Tab::new("tab-a"));
    opts.concurrency = 1;
    let mut f = Flush::new(opts, &mut out);
    let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads first") };
    f.handle_rows(token, &store.read_owner(&owner), outbox_core::Millis(T0), &mut Fixed(unit), &mut out);
    let Some(Request::Write { token, scopes }) = f.poll_request() else { panic!("then claims") };
    let ids = claimed(&mut f, token, &store, &scopes);
    store.get(&ids[0]).unwrap()["target"].as_str().unwrap().to_owned()
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
        let Some(Request::Write { token, scopes }) = f.poll_request() else { panic!("then claims") };
        let ids = claimed(&mut f, token, &store, &scopes);
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

/// §9: a server that answers every send with a conflict (another writer keeps changing the
/// record) must not keep one flush writing successor after successor: the first successor
/// is sent, the one it conflicts into waits, queued, for the next flush.
#[test]
fn s9_a_successor_that_conflicts_again_waits_for_the_next_flush() {
    let mut w = World::new(1);
    assert!(w
        .enqueue(0, json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"x": 1}, "revision": 1}))
        .row
        .is_some());
    // `maxRows` only bounds the test if the rule is broken.
    w.start_flush_with(0, "alice", |o| o.max_rows = Some(20));
    let mut sends = 0;
    let rep = w.drain(0, &mut |_, _| {
        sends += 1;
        outbox_core::Outcome::Conflict { actual_revision: json!(sends + 1) }
    });
    assert_eq!((sends, rep.conflicts), (2, 2), "the original and its first successor, no more");
    let left: Vec<_> = w.store.all().cloned().collect();
    assert_eq!(left.len(), 1);
    assert_eq!((&left[0]["revision"], &left[0]["state"]), (&json!(3), &json!("queued")));
    // The next flush sends it, and its own successor once: the same two steps again.
    w.start_flush_with(0, "alice", |o| o.max_rows = Some(20));
    let rep = w.drain(0, &mut |_, _| {
        sends += 1;
        outbox_core::Outcome::Conflict { actual_revision: json!(sends + 1) }
    });
    assert_eq!((sends, rep.conflicts), (4, 2));
}

/// Carries out write `token` of tab 0 as a store would, except that another writer changes
/// row `touched` (an unknown field set to `mark`) between the plan and its compare. Hands the
/// result to the flush and returns it.
fn write_while_another_writer_touches(
    w: &mut World,
    token: outbox_core::Token,
    scopes: &[outbox_core::Scope],
    touched: &str,
    mark: serde_json::Value,
) -> Option<outbox_core::ReplaceOutcome> {
    let now = w.tabs[0].now;
    let current = w.store.read(scopes);
    let plan = {
        let t = &mut w.tabs[0];
        t.flush.as_mut().unwrap().plan(token, &current, now, &mut t.draws)
    };
    let mut changed = w.raw(touched).unwrap();
    changed["futureField"] = mark;
    w.store.seed(changed);
    let r = plan.map(|p| w.store.replace(&p));
    let now = w.tabs[0].now;
    w.with_flush(0, |f, out| f.handle_written(token, r, now, out));
    w.collect(0);
    r
}

/// Steps `tab` until its create is in the air.
fn until_in_air(w: &mut World, tab: usize) {
    run_until_sent(w, tab, &mut truthful);
    assert_eq!(w.tabs[tab].air.len(), 1);
}

#[test]
fn s7_a_create_with_six_chained_intents_converts_them_all_on_one_receipt() {
    let mut w = World::new(1);
    let c = w.enqueue(0, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    until_in_air(&mut w, 0);
    for i in 0..6 {
        // JSON Patch bodies never merge: six intents, chained.
        let _ = w.enqueue(0, update("alice", &c.target, json!([{"op": "add", "path": "/n", "value": i}])));
    }
    let rep = w.drain(0, &mut truthful);
    assert_eq!(rep.converted, 6);
    assert_eq!(rep.succeeded, 7, "the create, then every converted edit in order");
    assert!(w.store.is_empty());
    assert_eq!(w.server.applied.len(), 7);
}

#[test]
fn s7_a_prepared_request_that_names_no_real_target_blocks_the_intent() {
    let mut w = World::new(1);
    let c = w.enqueue(0, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    until_in_air(&mut w, 0);
    let i = w.enqueue(0, update("alice", &c.target, json!({"b": 2}))).row.unwrap();
    w.deliver(0, 0);
    w.step(0, 0, &mut truthful); // the ACK asks to convert first
    let idx = w.find(0, |r| matches!(r, Request::Prepare { .. })).expect("asks the port");
    let Request::Prepare { token, .. } = w.tabs[0].inbox.remove(idx) else { unreachable!() };
    let bad = outbox_core::intent::Prepared { target: "pending:still".into(), body: json!({"b": 2}), revision: None };
    w.with_flush(0, |f, out| f.handle_prepared(token, Ok(bad), out));
    w.collect(0);
    let rep = w.drain(0, &mut truthful);
    let row = w.row(&i.id).expect("kept");
    assert_eq!(row.blocked_code.as_deref(), Some(outbox_core::intent::SUCCESSOR_UNPREPARED));
    assert_eq!((rep.blocked, rep.converted, rep.succeeded), (1, 0, 1));
}

#[test]
fn s7_an_orphan_intent_with_a_receipt_but_no_prepare_port_is_blocked_not_converted() {
    let mut w = World::new(1);
    w.tabs[0].ports = Ports { prepare: false, find: true };
    w.server.ledger.insert("gone".into(), ("fp".into(), json!({"serverId": "rec:9", "revision": 1})));
    let now = w.tabs[0].now.0;
    w.store.seed(json!({"id": "i-1", "owner": "alice", "target": "pending:gone", "kind": "update",
                        "body": {"x": 1}, "savedAt": now, "state": "queued", "successorOf": "gone"}));
    w.start_flush(0, "alice");
    let mut asked_prepare = false;
    while w.flushing(0) {
        asked_prepare |= w.find(0, |r| matches!(r, Request::Prepare { .. })).is_some();
        w.step(0, 0, &mut truthful);
    }
    assert!(!asked_prepare, "no prepareSuccessor port: never asked");
    let row = w.row("i-1").unwrap();
    assert_eq!(row.blocked_code.as_deref(), Some(outbox_core::intent::SUCCESSOR_UNPREPARED));
}

#[test]
fn s8_an_orphan_lookup_takes_no_send_slot() {
    let mut w = World::new(1);
    let now = w.tabs[0].now.0;
    w.store.seed(json!({"id": "i-1", "owner": "alice", "target": "pending:gone", "kind": "update",
                        "body": {"x": 1}, "savedAt": now, "state": "queued", "successorOf": "gone"}));
    for i in 0..2 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(0, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush_with(0, "alice", |o| o.concurrency = 2);
    w.step(0, 0, &mut truthful); // read: a lookup and a claim batch are asked for
    let lookup = w.find(0, |r| matches!(r, Request::FindReceipt { .. })).expect("looks the receipt up");
    let lookup = w.tabs[0].inbox.remove(lookup); // the port is slow: not answered yet
    while !w.tabs[0].inbox.is_empty() {
        w.step(0, 0, &mut truthful);
    }
    assert_eq!(w.tabs[0].air.len(), 2, "both rows are sent while the lookup waits");
    w.tabs[0].inbox.push(lookup);
    w.drain(0, &mut truthful);
}

#[test]
fn s6_an_answer_whose_write_found_the_row_changed_is_planned_again() {
    let mut w = World::new(1);
    w.server.seed_record("w:1", 1);
    let u = w.enqueue(0, update("alice", "w:1", json!({"x": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    until_in_air(&mut w, 0);
    w.deliver(0, 0);
    let Request::Write { token, scopes } = w.tabs[0].inbox.remove(0) else { panic!("the ACK writes") };
    // Plan inside the "transaction", then another writer changes a row of the scope before
    // the compare: the replace is stale and writes nothing.
    let r = write_while_another_writer_touches(&mut w, token, &scopes, &u.id, json!("another writer"));
    assert_eq!(r, Some(outbox_core::ReplaceOutcome::Stale));
    assert!(matches!(w.tabs[0].inbox[..], [Request::Write { .. }]), "the answer is planned again");
    let rep = w.drain(0, &mut truthful);
    assert_eq!((rep.succeeded, rep.applied), (1, 1));
    assert!(w.store.is_empty());
}

#[test]
fn s7_an_answer_chased_by_new_intents_gives_up_after_four_passes_and_is_resent_later() {
    let mut w = World::new(1);
    let c = w.enqueue(0, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    until_in_air(&mut w, 0);
    let _ = w.enqueue(0, update("alice", &c.target, json!({"v": 0})));
    w.deliver(0, 0);
    // Each time the port is asked, another tab replaces the intent with a newer edit, so
    // the conversion is stale and the answer is planned again.
    let mut prepares = 0;
    while w.flushing(0) {
        if w.find(0, |r| matches!(r, Request::Prepare { .. })).is_some() {
            prepares += 1;
            let _ = w.enqueue(0, update("alice", &c.target, json!({"v": prepares})));
        }
        w.step(0, 0, &mut truthful);
        assert!(prepares < 20, "the flush chases the intents forever");
    }
    let rep = w.tabs[0].reports.last().unwrap();
    assert_eq!(prepares, 4, "one conversion attempt per pass, four passes");
    assert_eq!((rep.succeeded, rep.applied, rep.converted), (0, 0, 0));
    assert!(!rep.receipts[0].applied, "the receipt is reported, the row kept");
    assert!(w.row(&c.id).is_some(), "the create stays claimed: resent after the lease, the server replays");
}

#[test]
fn s6_an_answer_whose_write_is_always_stale_gives_up_after_four_passes() {
    let mut w = World::new(1);
    w.server.seed_record("w:1", 1);
    let u = w.enqueue(0, update("alice", "w:1", json!({"x": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    until_in_air(&mut w, 0);
    w.deliver(0, 0);
    let mut passes = 0;
    while let Some(Request::Write { token, scopes }) = w.tabs[0].inbox.first().cloned() {
        w.tabs[0].inbox.remove(0);
        passes += 1;
        assert!(passes < 20, "the flush re-plans forever");
        // Another writer touches the row between every plan and its compare.
        write_while_another_writer_touches(&mut w, token, &scopes, &u.id, json!(passes));
    }
    assert_eq!(passes, 5, "the first plan and four more");
    // A round that sent ends with a read of the queue (§8 drain), which finds nothing new.
    assert!(matches!(w.tabs[0].inbox.as_slice(), [Request::ReadOwner { .. }]), "{:?}", w.tabs[0].inbox);
    w.step(0, 0, &mut truthful);
    assert!(!w.flushing(0));
    assert_eq!(w.server.received.len(), 1, "sent once");
    let rep = w.tabs[0].reports.last().unwrap();
    assert_eq!((rep.applied, rep.skipped), (0, 1), "given up: not applied, the row keeps its claim");
    assert!(w.row(&u.id).is_some());
}

#[test]
fn s5_a_row_unchanged_since_read_but_no_longer_claimable_is_skipped_and_left_alone() {
    // An older writer's row, sent at T0: past its lease when the queue is read...
    let mut w = World::new(1);
    let raw = json!({"id": "old", "owner": "alice", "target": "w:1", "kind": "update", "body": {"x": 1},
                     "savedAt": T0, "state": "sending", "sentAt": T0});
    w.store.seed(raw.clone());
    w.advance(0, LEASE + 1);
    w.start_flush(0, "alice");
    w.step(0, 0, &mut truthful); // read: the row is a candidate
                                 // ...but the page's clock is set back before the claim is written: in flight again.
    w.advance(0, -2);
    let rep = w.drain(0, &mut truthful);
    assert_eq!((rep.claimed, rep.skipped, rep.stale), (0, 1, 0));
    assert_eq!(w.raw("old").unwrap(), raw, "nothing written");
}

#[test]
fn s5_a_claim_batch_whose_replace_is_stale_counts_every_row_stale_and_reads_again() {
    let mut w = World::new(1);
    for i in 0..2 {
        let _ = w.enqueue(0, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush(0, "alice");
    w.step(0, 0, &mut truthful); // read
    let Request::Write { token, scopes } = w.tabs[0].inbox.remove(0) else { panic!("a claim batch") };
    // Another writer changes one row between the plan and the compare: nothing is written.
    let id = w.store.read(&scopes)[0]["id"].as_str().unwrap().to_owned();
    let r = write_while_another_writer_touches(&mut w, token, &scopes, &id, json!(1));
    assert_eq!(r, Some(outbox_core::ReplaceOutcome::Stale));
    assert!(matches!(w.tabs[0].inbox[..], [Request::ReadOwner { .. }]), "reads the queue again");
    let rep = w.drain(0, &mut truthful);
    assert_eq!(rep.stale, 2, "both rows of the stale batch");
    assert_eq!(rep.claimed, 2, "then claimed again from the new read");
}

#[test]
fn s8_a_flush_attempts_each_row_once_even_when_it_may_be_retried_at_once() {
    // No backoff: a transient failure leaves the row sendable right away. Another record's
    // success makes the flush read the queue again; the failed row waits for the next flush.
    let mut w = World::new(1);
    w.server.seed_record("w:ok", 1);
    let failing = w.enqueue(0, update("alice", "w:fail", json!({"x": 1}))).row.unwrap();
    let _ = w.enqueue(0, update("alice", "w:ok", json!({"x": 2})));
    w.start_flush_with(0, "alice", |o| {
        o.backoff.base_ms = 0;
        o.concurrency = 1;
    });
    let mut sends_of_failing = 0;
    let rep = w.drain(0, &mut |s, op| {
        if op.id == failing.id {
            sends_of_failing += 1;
            outbox_core::Outcome::transient("HTTP_503")
        } else {
            s.handle(op)
        }
    });
    assert_eq!(sends_of_failing, 1, "one attempt of a row per flush");
    assert_eq!((rep.claimed, rep.succeeded, rep.deferred), (2, 1, 1));
}

/// A flush (2 sends at most: no row claimed ahead) that read `store` and asks to claim its
/// first two rows.
fn first_batch_of_two(
    store: &MemStore,
) -> (Flush, Outstanding, outbox_core::Millis, outbox_core::Token, Vec<outbox_core::Scope>) {
    let mut out = Outstanding::new();
    let mut opts = FlushOptions::new("alice", Tab::new("tab-a"));
    opts.concurrency = 2;
    opts.max_rows = Some(2);
    let mut f = Flush::new(opts, &mut out);
    let now = outbox_core::Millis(T0 + 10);
    let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads first") };
    f.handle_rows(token, &store.read_owner(&owner), now, &mut Fixed(0.0), &mut out);
    let Some(Request::Write { token, scopes }) = f.poll_request() else { panic!("claims r0, r1") };
    (f, out, now, token, scopes)
}

#[test]
fn meeting_another_tabs_claims_with_rows_left_asks_which_are_left_and_goes_on_among_them() {
    let store = queue_of(8);
    let (mut f, mut out, now, token, scopes) = first_batch_of_two(&store);
    // Meanwhile another tab claimed r0 and r1 and finished r2..r5 (deleted).
    let mut later = MemStore::new();
    for i in [0, 1, 6, 7] {
        let mut r = store.get(&format!("r{i}")).unwrap().clone();
        if i < 2 {
            r["state"] = json!("sending");
            r["sentAt"] = json!(T0 + 5);
            r["claim"] = json!({"tabId": "tab-b", "expiresAt": T0 + 60_000, "fence": 1});
            r["writer"] = json!({"bundle": "x", "at": T0 + 5});
        }
        later.seed(r);
    }
    let r = later.transact(&scopes, |cur| f.plan(token, cur, now, &mut Fixed(0.0)));
    f.handle_written(token, r, now, &mut out);
    assert_eq!(f.report().stale, 2, "both rows of the batch were taken");
    let Some(Request::ReadIds { token, owner }) = f.poll_request() else { panic!("asks which rows are left") };
    assert_eq!(f.poll_request(), None, "and claims nothing until it knows");
    let ids: Vec<String> = later.read_owner(&owner).iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    f.handle_ids(token, &ids, &mut Fixed(0.0), &mut out);
    let Some(Request::Write { token, scopes }) = f.poll_request() else { panic!("then claims again") };
    assert_eq!(
        claimed(&mut f, token, &later, &scopes),
        ["r6", "r7"],
        "the rows another tab finished are not tried; the rows it holds were met once"
    );
}

#[test]
fn ids_that_leave_nothing_of_the_list_make_it_read_the_queue_again() {
    let store = queue_of(4);
    let (mut f, mut out, now, token, scopes) = first_batch_of_two(&store);
    let gone = MemStore::new(); // another tab sent every row
    let r = gone.clone().transact(&scopes, |cur| f.plan(token, cur, now, &mut Fixed(0.0)));
    f.handle_written(token, r, now, &mut out);
    let Some(Request::ReadIds { token, .. }) = f.poll_request() else { panic!("asks which rows are left") };
    f.handle_ids(token, &[], &mut Fixed(0.0), &mut out);
    assert!(matches!(f.poll_request(), Some(Request::ReadOwner { .. })), "reads the queue again");
    assert!(!f.is_done(), "not done before that read is back");
}

#[test]
fn a_claim_batch_rereads_its_rows_as_a_stretch_of_the_queue_not_one_read_per_row() {
    let store = queue_of(8);
    let (_, _, _, _, scopes) = first_batch_of_two(&store);
    assert_eq!(
        scopes,
        [outbox_core::Scope::Span { owner: "alice".into(), from: T0 as f64, to: (T0 + 1) as f64, count: 2 }]
    );
}

#[test]
fn a_row_saved_into_a_claimed_stretch_since_the_round_leaves_the_last_row_unclaimed_and_queued() {
    let store = queue_of(3);
    let mut out = Outstanding::new();
    let mut f = Flush::new(FlushOptions::new("alice", Tab::new("tab-a")), &mut out);
    let now = outbox_core::Millis(T0 + 10);
    let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads first") };
    f.handle_rows(token, &store.read_owner(&owner), now, &mut Fixed(0.0), &mut out);
    let Some(Request::Write { token, scopes }) = f.poll_request() else { panic!("claims r0..r2") };
    // Meanwhile a tab whose clock is behind saved a row between r0 and r1: the stretch's
    // count now ends before r2.
    let mut later = store.clone();
    later.seed(json!({"id": "x", "owner": "alice", "target": "w:x", "kind": "update", "body": {},
                      "savedAt": T0, "state": "queued"}));
    let r = later.transact(&scopes, |cur| f.plan(token, cur, now, &mut Fixed(0.0)));
    f.handle_written(token, r, now, &mut out);
    assert_eq!((f.report().claimed, f.report().stale), (2, 1), "r2 is stale, as if another tab had changed it");
    assert_eq!(later.get("r2"), store.get("r2"), "r2 is left as it was: queued, no claim");
    assert_eq!(later.get("r1").unwrap()["state"], json!("sending"));
    // Its next claim reads it by id: a row a stretch keeps missing cannot start round after
    // round.
    let Some(Request::ReadOwner { token, owner }) = f.poll_request() else { panic!("reads the queue again") };
    f.handle_rows(token, &later.read_owner(&owner), now, &mut Fixed(0.0), &mut out);
    let write = std::iter::from_fn(|| f.poll_request()).find(|r| matches!(r, Request::Write { .. }));
    let Some(Request::Write { scopes, .. }) = write else { panic!("claims again") };
    assert!(scopes.contains(&outbox_core::Scope::Id("r2".into())), "{scopes:?}");
}

#[test]
fn rows_whose_saved_at_has_a_fraction_are_claimed_and_sent() {
    let mut w = World::new(1);
    for (i, at) in [0.25, 0.5, 1.75].iter().enumerate() {
        w.store.seed(json!({"id": format!("r{i}"), "owner": "alice", "target": format!("w:{i}"), "kind": "create",
                            "body": {"i": i}, "savedAt": T0 as f64 + at, "state": "queued"}));
    }
    let rep = w.flush(0, "alice");
    assert_eq!((rep.claimed, rep.succeeded, rep.stale), (3, 3, 0));
    assert!(w.store.read_owner("alice").is_empty());
}

/// Drives a flush of alice's queue in `store` until its first send (or its end, or `max`
/// steps), handing each read of the queue without the row `hidden` (a row the driver's
/// read dropped, still in the index) and holding the record `held` for the app's own claim
/// at the first write. Returns what was sent, the reads of the queue and the flush.
fn drive_to_first_send(store: &MemStore, hidden: &str, held: Option<&str>, max: usize) -> (Vec<String>, usize, Flush) {
    drive_with(store, hidden, held, &|_| {}, max)
}

/// [`drive_to_first_send`], with `meanwhile` changing the store at the first write (another
/// tab's work).
fn drive_with(
    store: &MemStore,
    hidden: &str,
    held: Option<&str>,
    meanwhile: &dyn Fn(&mut MemStore),
    max: usize,
) -> (Vec<String>, usize, Flush) {
    let mut out = Outstanding::new();
    let mut opts = FlushOptions::new("alice", Tab::new("tab-a"));
    opts.concurrency = 1;
    // One row per claim batch (the rest stay candidates): the held record is tried after
    // the first claim, not taken into it.
    opts.max_rows = Some(1);
    let mut f = Flush::new(opts, &mut out);
    let now = outbox_core::Millis(T0 + 10);
    let (mut sent, mut rounds, mut store) = (Vec::new(), 0, store.clone());
    let mut hold = held;
    for _ in 0..max {
        let Some(req) = f.poll_request() else { break };
        match req {
            Request::ReadOwner { token, owner } => {
                rounds += 1;
                let rows: Vec<_> = store.read_owner(&owner).into_iter().filter(|r| r["id"] != json!(hidden)).collect();
                f.handle_rows(token, &rows, now, &mut Fixed(0.0), &mut out);
            }
            Request::ReadIds { token, owner } => {
                let ids: Vec<String> =
                    store.read_owner(&owner).iter().filter_map(|r| r["id"].as_str().map(str::to_owned)).collect();
                f.handle_ids(token, &ids, &mut Fixed(0.0), &mut out);
            }
            Request::Write { token, scopes } => {
                if let Some(target) = hold.take() {
                    // The app's own claim of that record, in this tab, meanwhile.
                    assert!(out.hold_app_claim("alice", target, "app", 1).is_some());
                    meanwhile(&mut store);
                }
                let r = store.transact(&scopes, |cur| f.plan(token, cur, now, &mut Fixed(0.0)));
                f.handle_written(token, r, now, &mut out);
            }
            Request::Send { op, .. } => {
                sent.push(op.id.clone());
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    (sent, rounds, f)
}

/// `x`, an undecodable row at `T0` the driver's read left out, is still in the index before
/// `c`: `c`'s stretch (counted without `x`) ends before `c`.
fn queue_with_a_hidden_row() -> MemStore {
    let mut store = MemStore::new();
    store.seed(json!({"id": "a-x", "owner": "alice", "savedAt": T0}));
    store.seed(json!({"id": "c", "owner": "alice", "target": "w:1", "kind": "update", "body": {}, "savedAt": T0,
                      "state": "queued"}));
    store
}

#[test]
fn a_row_its_stretch_keeps_missing_is_read_by_id_and_sent() {
    let (sent, rounds, f) = drive_to_first_send(&queue_with_a_hidden_row(), "a-x", None, 200);
    assert_eq!(sent, ["c"]);
    assert_eq!((rounds, f.report().stale), (2, 1), "one stale claim, then a claim by id");
}

#[test]
fn a_predecessor_its_stretch_keeps_missing_is_read_by_id_and_its_successor_sent() {
    let mut store = MemStore::new();
    store.seed(json!({"id": "a-x", "owner": "alice", "savedAt": T0}));
    store.seed(json!({"id": "c", "owner": "alice", "target": "w:1", "kind": "update", "body": {}, "savedAt": T0,
                      "state": "blocked", "blockedAt": T0, "blockedCode": "x"}));
    store.seed(json!({"id": "s", "owner": "alice", "target": "w:1", "kind": "update", "body": {}, "savedAt": T0 + 1,
                      "state": "queued", "successorOf": "c"}));
    let (sent, rounds, f) = drive_to_first_send(&store, "a-x", None, 200);
    assert_eq!(sent, ["s"], "s overtakes its blocked predecessor");
    assert_eq!((rounds, f.report().stale), (2, 1));
}

#[test]
fn a_row_its_stretch_missed_is_read_again_before_the_flush_ends_even_with_no_other_candidate_left() {
    // `c`'s claim is stale (pushed out of its stretch); `y`, the only other candidate, is
    // held by the app: without reading the queue again the flush would end with `c`
    // queued, unchanged and sendable.
    let mut store = queue_with_a_hidden_row();
    store.seed(json!({"id": "y", "owner": "alice", "target": "w:y", "kind": "update", "body": {}, "savedAt": T0 + 1,
                      "state": "queued"}));
    let (sent, rounds, f) = drive_to_first_send(&store, "a-x", Some("w:y"), 200);
    assert_eq!(sent, ["c"], "{:?}", f.report());
    assert_eq!(rounds, 2);
}

#[test]
fn the_rows_of_a_stretch_are_in_the_index_order_of_their_saved_at_not_their_ids() {
    let mut w = World::new(1);
    for (id, at) in [("a", 0.7), ("b", 0.2)] {
        w.store.seed(json!({"id": id, "owner": "alice", "target": format!("w:{id}"), "kind": "create",
                            "body": {}, "savedAt": T0 as f64 + at, "state": "queued"}));
    }
    let rep = w.flush(0, "alice");
    assert_eq!((rep.claimed, rep.stale), (2, 0));
}

#[test]
fn a_claim_that_found_its_row_or_predecessor_changed_not_missing_costs_no_other_read_of_the_queue() {
    // `c` (or `s`'s blocked predecessor `p`) is changed by another tab before the claim:
    // found, changed, stale. `y`, the only other candidate, is held by the app. The flush
    // ends after its one round, as it did when claims read rows by id (a changed row is the
    // next flush's): only a row missing from its stretch, maybe unchanged, has the queue
    // read again.
    let row = |id: &str, target: &str, at: i64, more: serde_json::Value| {
        let mut r = json!({"id": id, "owner": "alice", "target": target, "kind": "update", "body": {},
                           "savedAt": T0 + at, "state": "queued"});
        r.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        r
    };
    let blocked = json!({"state": "blocked", "blockedAt": T0, "blockedCode": "x"});
    let cases = [
        ("c", vec![row("c", "w:1", 0, json!({})), row("y", "w:y", 1, json!({}))]),
        (
            "p",
            vec![
                row("p", "w:2", 0, blocked),
                row("s", "w:2", 1, json!({"successorOf": "p"})),
                row("y", "w:y", 2, json!({})),
            ],
        ),
    ];
    for (changed, rows) in cases {
        let mut store = MemStore::new();
        for r in rows {
            store.seed(r);
        }
        let edit = |st: &mut MemStore| {
            let mut r = st.get(changed).unwrap().clone();
            r["body"] = json!({"edited": true});
            st.seed(r);
        };
        let (sent, rounds, f) = drive_with(&store, "", Some("w:y"), &edit, 200);
        assert!(f.is_done(), "{changed}: {sent:?}");
        assert_eq!((sent.len(), rounds, f.report().stale), (0, 1, 1), "{changed} changed: {:?}", f.report());
    }
}
