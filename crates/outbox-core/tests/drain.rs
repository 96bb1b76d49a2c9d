//! SPEC §8 drain rules: `maxRows`, concurrent sends of different targets up to a limit,
//! rows of one target strictly one after another, and no double send by two overlapping
//! flushes of one tab.

mod sim;

use outbox_core::Millis;
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

/// Runs tab A's flush to its end, answers one at a time, each as soon as every other
/// request was carried out; returns the most sends that were outstanding at once.
fn drain_counting_outstanding(w: &mut World) -> usize {
    let mut most = 0;
    while w.flushing(A) {
        fill_air(w, A);
        most = most.max(w.tabs[A].air.len());
        if !w.tabs[A].air.is_empty() {
            w.deliver(A, 0);
        }
    }
    most
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
    assert!(!w.store.is_empty());
}

#[test]
fn s8_different_targets_go_concurrently_up_to_the_limit() {
    let mut w = World::new(1);
    for i in 0..6 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush_with(A, "alice", |o| o.concurrency = 3);
    let most = drain_counting_outstanding(&mut w);
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
    let most = drain_counting_outstanding(&mut w);
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

/// Answers every send truly, except the `n`-th one (from 1), which hears `401`.
fn auth_on(n: usize) -> impl FnMut(&mut Server, &outbox_core::SendOp) -> outbox_core::Outcome {
    let mut seen = 0;
    move |s, op| {
        seen += 1;
        if seen == n {
            outbox_core::Outcome::Auth
        } else {
            s.handle(op)
        }
    }
}

#[test]
fn s6_auth_ends_the_flush_even_with_a_claim_batch_being_written() {
    let mut w = World::new(1);
    for i in 0..10 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    let mut answer = auth_on(3);
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    while !w.tabs[A].inbox.is_empty() {
        w.step(A, 0, &mut answer); // read, claim eight (four ahead), send four
    }
    assert_eq!(w.tabs[A].air.len(), 4);
    // Two successes: each lets a row claimed ahead go out at once (two are left waiting);
    // then there is room for two more rows, and their claim batch is asked for.
    w.deliver(A, 0);
    w.deliver(A, 0);
    w.step_all_but_claims(A, &mut answer); // the two ACKs and the two sends
    assert!(matches!(w.tabs[A].inbox[..], [outbox_core::Request::Write { .. }]), "a claim batch waits to be written");
    w.deliver(A, 0); // the third answer: 401
    w.drain(A, &mut answer); // the claim batch commits now, the other answers arrive
                             // Six sends in all: the one that heard 401 (the server never saw it) and five others.
    assert_eq!(w.server.received.len(), 5, "nothing more is sent for the owner after the auth answer");
    let rows: Vec<_> = w.store.read_owner("alice").iter().map(|v| outbox_core::decode(v).unwrap()).collect();
    let held: Vec<_> = rows.iter().filter(|r| r.state == outbox_core::RowState::Held).collect();
    assert_eq!(held.len(), 1, "only the row that heard 401 is held");
    let released: Vec<_> = rows.iter().filter(|r| r.state == outbox_core::RowState::Queued).collect();
    assert_eq!(
        released.len(),
        4,
        "the two rows still claimed ahead and the two claimed after the auth answer are back in the queue"
    );
    let now = w.tabs[A].now;
    for r in released {
        assert!(!outbox_core::inflight::in_flight(r, now, LEASE).is_in_flight(), "{r} is not in flight");
        assert_eq!(r.claim.as_ref().map(|c| c.fence), Some(1), "{r}: the fence is kept");
        assert_eq!(r.evidence, None, "{r}: no attempt was made");
    }
    let rep = w.tabs[A].reports.last().unwrap();
    assert_eq!((rep.claimed, rep.released, rep.held), (6, 4, 1), "claimed: the rows sent");
    assert!(w.outstanding(A).is_empty());
}

#[test]
fn s8_overlapping_flushes_of_one_tab_send_rows_of_one_target_one_at_a_time() {
    // Three flushes of one tab; two rows of one target that do not name each other.
    let mut w = World::new(3);
    for t in 1..3 {
        w.tabs[t].tab = w.tabs[0].tab.clone();
    }
    w.server.seed_record("w:1", 1);
    let now = w.tabs[A].now.0;
    for id in ["a", "b"] {
        w.store.seed(json!({"id": id, "owner": "alice", "target": "w:1", "kind": "update",
                            "body": {"x": id}, "savedAt": now, "state": "queued"}));
    }
    for t in 0..3 {
        w.start_flush(t, "alice");
        w.step(t, 0, &mut truthful); // every flush reads the queue first
    }
    let mut most = 0;
    while (0..3).any(|t| w.flushing(t)) {
        for t in 0..3 {
            fill_air(&mut w, t);
        }
        most = most.max((0..3).map(|t| w.tabs[t].air.len()).sum());
        if let Some(t) = (0..3).find(|t| !w.tabs[*t].air.is_empty()) {
            w.deliver(t, 0);
        }
    }
    assert_eq!(most, 1, "never two rows of one target outstanding in one tab");
    assert_eq!(w.server.applied, vec!["a".to_owned(), "b".to_owned()]);
    assert!(w.store.is_empty());
}

#[test]
fn s8_a_send_that_outlives_its_lease_is_not_resent_by_the_same_tab() {
    let mut w = World::new(3);
    w.tabs[1].tab = w.tabs[0].tab.clone(); // a second flush of tab 0
    let c = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    w.start_flush(0, "alice");
    fill_air(&mut w, 0);
    assert_eq!(w.tabs[0].air.len(), 1);
    w.advance_all(LEASE + 1); // the send is still awaited, its lease is over
    w.start_flush(1, "alice");
    fill_air(&mut w, 1);
    assert!(w.tabs[1].air.is_empty(), "the same tab does not resend while its attempt is outstanding");
    assert!(!w.flushing(1));
    assert_eq!(w.tabs[1].reports.last().unwrap().skipped, 1);
    // Another tab takes over after the lease (the tab may have frozen): fence 2.
    w.start_flush(2, "alice");
    fill_air(&mut w, 2);
    assert_eq!(w.tabs[2].air.len(), 1);
    assert_eq!(w.row(&c.id).unwrap().claim.unwrap().fence, 2);
    w.drain(2, &mut truthful);
    assert!(w.store.is_empty());
    w.drain(0, &mut truthful); // the first attempt's late answer: not mine any more
    assert_eq!(w.tabs[0].reports.last().unwrap().applied, 0);
    assert!(w.outstanding(0).is_empty(), "the tab holds nothing once its flushes ended");
}

#[test]
fn s8_max_rows_counts_sends_across_rounds_and_claims_under_way() {
    for (concurrency, max) in [(1, 3), (4, 5), (2, 3)] {
        let mut w = World::new(1);
        for i in 0..8 {
            w.server.seed_record(&format!("w:{i}"), 1);
            let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
        }
        w.start_flush_with(A, "alice", |o| {
            o.max_rows = Some(max);
            o.concurrency = concurrency;
        });
        // Answers arrive one at a time, each as soon as every other request was carried out.
        while w.flushing(A) {
            fill_air(&mut w, A);
            if !w.tabs[A].air.is_empty() {
                w.deliver(A, 0);
            }
        }
        let rep = w.tabs[A].reports.last().unwrap();
        assert_eq!((rep.claimed, rep.succeeded), (max, max), "concurrency {concurrency}, maxRows {max}");
        assert_eq!(w.server.received.len() as u64, max);
    }
}

#[test]
fn s8_a_claim_batch_being_written_counts_against_concurrency_and_max_rows() {
    for (max_rows, sends) in [(None, 8), (Some(5), 5)] {
        let mut w = World::new(1);
        for i in 0..8 {
            w.server.seed_record(&format!("w:{i}"), 1);
            let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
        }
        w.start_flush_with(A, "alice", |o| {
            o.concurrency = 4;
            o.max_rows = max_rows;
        });
        fill_air(&mut w, A);
        assert_eq!(w.tabs[A].air.len(), 4);
        w.answer_one(A);
        w.answer_one(A); // rows claimed ahead go out; room for two: a claim batch is asked for
        w.answer_one(A); // more room while that batch is still being written
        let most = drain_counting_outstanding(&mut w);
        assert!(most <= 4, "{max_rows:?}: {most} sends outstanding at once, concurrency 4");
        assert_eq!(w.server.received.len(), sends, "{max_rows:?}");
    }
}

// --- deadline (a service worker's `sync` event must end in time) ------------------------

fn five_records(w: &mut World) {
    for i in 0..5 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
}

#[test]
fn s8_a_flush_whose_queue_is_read_at_its_deadline_claims_nothing_and_asks_no_port() {
    let mut w = World::new(1);
    five_records(&mut w);
    let now = w.tabs[A].now.0;
    w.store.seed(orphan_intent("i-1", "gone", now));
    let before = w.store.read_owner("alice");
    w.start_flush_with(A, "alice", |o| o.deadline = Some(Millis(now)));
    let mut asked = Vec::new();
    while w.flushing(A) {
        asked.push(format!("{:?}", w.tabs[A].inbox[0]).split([' ', '{']).next().unwrap().to_owned());
        w.step(A, 0, &mut truthful);
    }
    assert_eq!(asked, ["ReadOwner"], "one read, then nothing: no claim, no findCreateReceipt");
    let rep = w.tabs[A].reports.last().unwrap();
    assert_eq!((rep.claimed, rep.stale, rep.skipped), (0, 0, 0));
    assert_eq!(rep.next_due_at, Some(now), "the five rows the read found are sendable at once");
    assert_eq!(w.store.read_owner("alice"), before, "every row is left exactly as it was");
    assert!(w.server.received.is_empty());
}

/// §8 when to flush next: a read at the deadline that finds nothing sendable reports the
/// rows' own due time, not the deadline (only rows left sendable make the flush due at once).
#[test]
fn s8_a_read_at_the_deadline_reports_the_rows_due_time_or_now_when_one_is_sendable() {
    let mut w = World::new(1);
    five_records(&mut w);
    let now = w.tabs[A].now.0;
    // Every row answered a retryable failure: each waits out its backoff.
    w.start_flush(A, "alice");
    let rep = w.drain(A, &mut |_, _| outbox_core::Outcome::transient("HTTP_503"));
    assert_eq!(rep.deferred, 5);
    let due = rep.next_due_at.expect("the backoff's end");
    assert!(due > now, "{due}");
    w.start_flush_with(A, "alice", |o| o.deadline = Some(Millis(now)));
    let rep = w.drain(A, &mut truthful);
    assert_eq!(rep.claimed, 0);
    assert_eq!(rep.next_due_at, Some(due), "not due before the backoff ends");
    // One row more, sendable now: the same read makes the flush due at once, the earlier
    // of the two.
    w.server.seed_record("w:9", 1);
    let _ = w.enqueue(A, update("alice", "w:9", json!({"x": 9})));
    w.start_flush_with(A, "alice", |o| o.deadline = Some(Millis(now)));
    let rep = w.drain(A, &mut truthful);
    assert_eq!(rep.next_due_at, Some(now), "w:9 is left sendable");
}

#[test]
fn s8_a_deadline_not_reached_changes_nothing() {
    let mut w = World::new(1);
    five_records(&mut w);
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| o.deadline = Some(Millis(now + 1)));
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded), (5, 5));
    assert!(w.store.is_empty());
}

#[test]
fn s8_claims_planned_after_the_deadline_take_nothing_and_answers_under_way_are_applied() {
    let mut w = World::new(1);
    five_records(&mut w);
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| {
        o.deadline = Some(Millis(now + 100));
        o.concurrency = 2;
    });
    // Four rows claimed before the deadline, two of them sent; their answers come after it.
    fill_air(&mut w, A);
    assert_eq!(w.tabs[A].air.len(), 2);
    w.advance(A, 100);
    w.deliver(A, 0);
    w.deliver(A, 0);
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded), (2, 2), "both answers applied, nothing more claimed (nor counted)");
    assert_eq!(rep.released, 2, "the rows claimed ahead are not sent after the deadline");
    assert_eq!(rep.next_due_at, Some(now + 100), "three rows left, sendable from the instant it stopped");
    assert_eq!(w.server.received.len(), 2);
    let left = w.store.read_owner("alice");
    assert_eq!(left.len(), 3);
    for raw in &left {
        assert_eq!(raw["state"], "queued", "{raw}");
        assert!(raw.get("evidence").is_none(), "never attempted: {raw}");
        let expired = raw.get("claim").is_none_or(|c| c["expiresAt"].as_i64() <= Some(now + 100));
        assert!(expired, "not claimed now: {raw}");
    }
    // The next flush (no deadline) sends them.
    assert_eq!(w.flush(A, "alice").succeeded, 3);
}

#[test]
fn s8_a_row_enqueued_while_the_only_send_fails_is_sent_before_the_flush_ends() {
    // Issue 32 item 4: `w:2` is enqueued while `w:1` is on the wire; `w:1`'s answer is
    // transient. Nothing the flush did made a row sendable, yet `w:2` is: §8 says the flush
    // stops only when nothing is sendable at `now`.
    let mut w = World::new(1);
    for t in ["w:1", "w:2"] {
        w.server.seed_record(t, 1);
    }
    let first = w.enqueue(A, update("alice", "w:1", json!({"x": 1}))).row.unwrap().id;
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut |_, _| outbox_core::Outcome::transient("NETWORK"));
    let second = w.enqueue(A, update("alice", "w:2", json!({"x": 2}))).row.unwrap().id;
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.deferred, rep.succeeded), (2, 1, 1), "{rep:?}");
    assert!(w.row(&second).is_none(), "w:2 was sent and applied in the same flush");
    assert!(w.row(&first).is_some(), "w:1 waits for its backoff");
}

#[test]
fn s6_an_auth_answer_stops_every_flush_of_the_owner_in_the_tab() {
    // Issue 32 item 6: two overlapping flushes of one tab; the first gets 401. The second,
    // on the same expired session, claims nothing more (its send already on the wire is
    // answered as usual). A flush started afterwards (after a new login) sends again.
    let mut w = World::new(2);
    w.tabs[1].tab = w.tabs[0].tab.clone(); // one tab, two flushes: one Outstanding
    for i in 0..4 {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
    w.start_flush_with(A, "alice", |o| o.concurrency = 1);
    run_until_sent(&mut w, A, &mut |_, _| outbox_core::Outcome::Auth);
    w.start_flush_with(1, "alice", |o| o.concurrency = 1);
    run_until_sent(&mut w, 1, &mut truthful);
    assert_eq!(w.server.applied.len(), 1, "the second flush's first send");
    w.drain(A, &mut truthful);
    let rep = w.drain(1, &mut truthful);
    assert_eq!(rep.claimed, 1, "nothing claimed after the other flush's 401: {rep:?}");
    assert_eq!(w.server.applied.len(), 1);
    assert_eq!(w.store.len(), 3, "the held row and two queued ones");
    let rep = w.flush(1, "alice");
    assert_eq!(rep.succeeded, 2, "a flush started later sends: {rep:?}");
}

#[test]
fn s8_a_flush_never_sends_a_row_the_apps_own_claim_holds_in_this_tab() {
    // Issue 32 item 3: the app claims a row with `claim`; its send outlives the lease. A
    // flush of the same tab does not claim it again (fence 2) until the app's `ack`.
    use outbox_core::flush::plan_app_claim;
    let mut w = World::new(1);
    w.server.seed_record("w:1", 1);
    let row = w.enqueue(A, update("alice", "w:1", json!({"x": 1}))).row.unwrap();
    let (tab, now, raw) = (w.tabs[A].tab.clone(), w.tabs[A].now, w.raw(&row.id).unwrap());
    let (cp, _hold) = plan_app_claim("alice", Some(&raw), None, &tab, now, w.outstanding(A)).unwrap();
    assert_eq!(
        w.store.transact(&cp.plan.scopes.clone(), |_| Some(cp.plan.clone())),
        Some(outbox_core::ReplaceOutcome::Committed)
    );
    w.advance(A, LEASE + 1);
    let rep = w.flush(A, "alice");
    assert_eq!((rep.claimed, rep.skipped), (0, 1), "{rep:?}");
    assert_eq!(w.row(&row.id).unwrap().claim.unwrap().fence, 1);
    // The app answers its claim: the record is free in this tab again.
    w.outstanding(A).end_app_claim("alice", &row.id, cp.ticket.fence);
    let rep = w.flush(A, "alice");
    assert_eq!(rep.claimed, 1);
}

#[test]
fn s8_a_row_enqueued_while_a_port_call_fails_is_sent_before_the_flush_ends() {
    // From the attack on item 4: the round's only task is an orphan intent's receipt
    // lookup, which throws. A row enqueued meanwhile must still go out in this flush.
    use outbox_core::Request;
    let mut w = World::new(1);
    w.server.seed_record("w:2", 1);
    let now = w.tabs[A].now.0;
    w.store.seed(orphan_intent("i-1", "gone", now));
    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // the read
    let Request::FindReceipt { token, .. } = w.tabs[A].inbox.remove(0) else { panic!("asks the port") };
    let second = w.enqueue(A, update("alice", "w:2", json!({"x": 2}))).row.unwrap().id;
    w.with_flush(A, |f, out| f.handle_found(token, Err("offline".into()), out));
    w.collect(A);
    let rep = w.drain(A, &mut truthful);
    assert_eq!(rep.succeeded, 1, "{rep:?}");
    assert!(w.row(&second).is_none());
}
