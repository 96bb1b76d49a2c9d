//! SPEC §6, §8, §15 flush report: every count of a flush's report asserted whole, in the
//! simulated tabs, so that no single count can drift unnoticed.

mod sim;

use outbox_core::intent::{PREDECESSOR_RECEIPT_UNKNOWN, SUCCESSOR_UNPREPARED};
use outbox_core::{FlushReport, Outcome, Request, RowState, SendOp};
use serde_json::{json, Value};
use sim::*;

const A: usize = 0;
const B: usize = 1;

/// Every count of a report, and the `applied` flag of each receipt in report order.
#[derive(Debug, Default, PartialEq)]
struct Counts {
    claimed: u64,
    released: u64,
    succeeded: u64,
    deferred: u64,
    held: u64,
    blocked: u64,
    conflicts: u64,
    stale: u64,
    skipped: u64,
    converted: u64,
    applied: u64,
    receipts: Vec<bool>,
}

fn counts(r: &FlushReport) -> Counts {
    Counts {
        claimed: r.claimed,
        released: r.released,
        succeeded: r.succeeded,
        deferred: r.deferred,
        held: r.held,
        blocked: r.blocked,
        conflicts: r.conflicts,
        stale: r.stale,
        skipped: r.skipped,
        converted: r.converted,
        applied: r.applied,
        receipts: r.receipts.iter().map(|x| x.applied).collect(),
    }
}

/// Seeds records `w:0` .. `w:{n-1}` at revision 1 and queues one update of each.
fn queue_updates(w: &mut World, tab: usize, n: usize) {
    for i in 0..n {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(tab, update("alice", &format!("w:{i}"), json!({"i": i})));
    }
}

#[test]
fn report_counts_one_answer_of_each_class_once_per_row() {
    let mut w = World::new(1);
    queue_updates(&mut w, A, 4);
    w.start_flush(A, "alice");
    let rep = w.drain(A, &mut |s, op| match op.target.as_str() {
        "w:1" => Outcome::transient("HTTP_503"),
        "w:2" => Outcome::Permanent { code: "INVALID".into() },
        "w:3" => Outcome::Auth,
        _ => s.handle(op),
    });
    let want = Counts { claimed: 4, succeeded: 1, deferred: 1, held: 1, blocked: 1, applied: 4, ..Counts::default() };
    assert_eq!(counts(&rep), Counts { receipts: vec![true], ..want });
    assert_eq!((rep.counters.attempts.permanent, rep.counters.permanent_failures), (1, 1));
    assert_eq!((rep.receipts[0].target.as_str(), rep.receipts[0].replayed), ("w:0", false));
    assert_eq!(w.store.len(), 3, "the deferred, blocked and held rows stay");
}

#[test]
fn report_counts_a_conflict_successor_and_a_conflict_without_revision_as_blocked() {
    let mut w = World::new(1);
    w.server.seed_record("w:5", 3); // the row's base revision 1 is stale: conflict, actual 3
    let _ = w.enqueue(A, json!({"owner": "alice", "target": "w:5", "kind": "update", "body": {}, "revision": 1}));
    w.server.seed_record("w:6", 1);
    let _ = w.enqueue(A, update("alice", "w:6", json!({"x": 6})));
    w.start_flush(A, "alice");
    let rep = w.drain(A, &mut |s, op| match op.target.as_str() {
        "w:6" => Outcome::Conflict { actual_revision: Value::Null },
        _ => s.handle(op),
    });
    // The successor of w:5 is claimed and sent in the same flush (§8 drain, §9).
    let want = Counts { claimed: 3, succeeded: 1, blocked: 1, conflicts: 1, applied: 3, ..Counts::default() };
    assert_eq!(counts(&rep), Counts { receipts: vec![true], ..want });
    assert_eq!(rep.counters.conflicts, 1);
    assert_eq!(rep.counters.permanent_failures, 1, "w:6 quarantined, as by a permanent answer (§9)");
    assert_eq!(w.store.len(), 1, "w:6 blocked, kept");
}

#[test]
fn report_counts_rows_another_tab_claimed_first_as_stale_and_not_claimed() {
    let mut w = World::new(2);
    queue_updates(&mut w, A, 3);
    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // A reads the queue
    w.start_flush(B, "alice");
    w.step(B, 0, &mut truthful); // B reads it too
    w.step(B, 0, &mut truthful); // and claims every row first
    let ra = w.drain(A, &mut truthful); // A's batch is stale; A reads again: all in flight
    assert_eq!(counts(&ra), Counts { stale: 3, ..Counts::default() });
    let rb = w.drain(B, &mut truthful);
    let want = Counts { claimed: 3, succeeded: 3, applied: 3, ..Counts::default() };
    assert_eq!(counts(&rb), Counts { receipts: vec![true; 3], ..want });
    assert_eq!(w.server.received.len(), 3, "each row sent once");
}

#[test]
fn report_counts_a_late_answer_after_takeover_as_skipped_with_its_receipt_not_applied() {
    let mut w = World::new(2);
    let c1 = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful); // the server applies it; the answer is late
    w.advance(B, LEASE + 1);
    w.start_flush(B, "alice");
    run_until_sent(&mut w, B, &mut truthful); // B took over (fence 2); the gate replays
    let ra = w.drain(A, &mut truthful); // A's success: not A's claim any more
    assert_eq!(counts(&ra), Counts { claimed: 1, skipped: 1, receipts: vec![false], ..Counts::default() });
    assert_eq!(ra.receipts[0].receipt["serverId"], "rec:1");
    assert!(w.row(&c1.id).is_some(), "the late answer changed nothing");
    let rb = w.drain(B, &mut truthful);
    let want = Counts { claimed: 1, succeeded: 1, applied: 1, ..Counts::default() };
    assert_eq!(counts(&rb), Counts { receipts: vec![true], ..want });
    assert!(rb.receipts[0].replayed);
    assert!(w.store.is_empty());
}

#[test]
fn a_late_permanent_answer_is_an_attempt_but_quarantines_nothing() {
    let mut w = World::new(2);
    queue_updates(&mut w, A, 1);
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| Outcome::Permanent { code: "INVALID".into() }); // late
    w.advance(B, LEASE + 1);
    let rb = w.flush(B, "alice"); // B took over and delivered it
    assert_eq!(rb.succeeded, 1);
    let ra = w.drain(A, &mut truthful);
    assert_eq!(counts(&ra), Counts { claimed: 1, skipped: 1, ..Counts::default() });
    assert_eq!((ra.counters.attempts.permanent, ra.counters.permanent_failures), (1, 0));
}

#[test]
fn report_counts_an_intent_converted_on_its_receipt_and_one_blocked_without_a_prepare_port() {
    let mut w = World::new(2);
    w.tabs[B].ports = Ports { prepare: false, find: true };
    // Tab A: alice's create is in flight when she edits the record: an intent, converted.
    let ca = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let _ = w.enqueue(A, update("alice", &ca.target, json!({"n": 2}))).row.unwrap();
    let ra = w.drain(A, &mut truthful);
    let want = Counts { claimed: 2, succeeded: 2, converted: 1, applied: 2, ..Counts::default() };
    assert_eq!(counts(&ra), Counts { receipts: vec![true, true], ..want });
    assert!(w.store.is_empty());
    // Tab B (no prepareSuccessor): bob's intent is blocked, his create deleted.
    let cb = w.enqueue(B, create("bob", json!({"n": 1}))).row.unwrap();
    w.start_flush(B, "bob");
    run_until_sent(&mut w, B, &mut truthful);
    let ib = w.enqueue(B, update("bob", &cb.target, json!({"n": 2}))).row.unwrap();
    let rb = w.drain(B, &mut truthful);
    let want = Counts { claimed: 1, succeeded: 1, blocked: 1, applied: 1, ..Counts::default() };
    assert_eq!(counts(&rb), Counts { receipts: vec![true], ..want });
    assert_eq!(w.row(&ib.id).unwrap().blocked_code.as_deref(), Some(SUCCESSOR_UNPREPARED));
    assert!(w.row(&cb.id).is_none());
}

#[test]
fn report_counts_orphan_intents_converted_from_a_found_receipt_or_blocked() {
    let mut w = World::new(1);
    let now = w.tabs[A].now.0;
    // The server applied "c-known" (its row is gone); it never saw "c-unknown".
    applied_create(&mut w.server, "c-known");
    w.store.seed(orphan_intent("i-1", "c-known", now));
    w.store.seed(orphan_intent("i-2", "c-unknown", now));
    let rep = w.flush(A, "alice");
    let want = Counts { claimed: 1, succeeded: 1, blocked: 1, converted: 1, applied: 1, ..Counts::default() };
    assert_eq!(counts(&rep), Counts { receipts: vec![true], ..want });
    assert_eq!(w.row("i-2").unwrap().blocked_code.as_deref(), Some(PREDECESSOR_RECEIPT_UNKNOWN));
}

#[test]
fn report_counts_claims_released_unsent_after_an_auth_answer() {
    let mut w = World::new(1);
    queue_updates(&mut w, A, 10);
    let mut seen = 0;
    let mut answer = |s: &mut Server, op: &SendOp| {
        seen += 1;
        if seen == 3 {
            Outcome::Auth
        } else {
            s.handle(op)
        }
    };
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    while !w.tabs[A].inbox.is_empty() {
        w.step(A, 0, &mut answer); // read, claim eight (four ahead), send four
    }
    w.deliver(A, 0); // success: a row claimed ahead goes out
    w.deliver(A, 0); // success: another one (two still wait); room for two, a batch of two is planned
    w.step_all_but_claims(A, &mut answer); // the ACKs and the sends
    assert!(matches!(w.tabs[A].inbox[..], [Request::Write { .. }]), "a claim batch waits to be written");
    w.deliver(A, 0); // 401: the two waiting and the batch's claims, once written, are released unsent
    let rep = w.drain(A, &mut answer);
    let want = Counts { claimed: 6, released: 4, succeeded: 5, held: 1, applied: 6, ..Counts::default() };
    assert_eq!(counts(&rep), Counts { receipts: vec![true; 5], ..want });
}

#[test]
fn report_counts_a_row_unchanged_since_read_but_no_longer_claimable_as_skipped() {
    let mut w = World::new(1);
    queue_updates(&mut w, A, 1);
    w.start_flush(A, "alice");
    let rep = w.drain(A, &mut |_, _| Outcome::transient("HTTP_503"));
    assert_eq!(counts(&rep), Counts { claimed: 1, deferred: 1, applied: 1, ..Counts::default() });
    let deferred = w.store.all().next().cloned().unwrap();
    w.advance(A, 400_000); // past its next attempt
    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // read: sendable
    w.advance(A, -400_000); // the tab's clock is set back: not due any more when claiming
    let rep = w.drain(A, &mut truthful);
    assert_eq!(counts(&rep), Counts { skipped: 1, ..Counts::default() });
    assert_eq!(w.store.all().next().unwrap(), &deferred, "row unchanged");
    assert_eq!(outbox_core::decode(&deferred).unwrap().state, RowState::Queued);
}
