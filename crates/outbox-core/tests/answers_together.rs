//! SPEC §8 answers written together: an answer that arrives while other sends of the flush
//! are out waits, unwritten, until the flush asks for another write (it goes with it), until
//! no send is out, or until the wait asked for with the first of them is back
//! (`ACK_WAIT_MS`): answers that trickle in share a transaction instead of one each.

mod sim;

use outbox_core::flush::ACK_WAIT_MS;
use outbox_core::{Request, Scope};
use serde_json::json;
use sim::*;

const A: usize = 0;

/// Seeds records `w:0` .. `w:{n-1}` at revision 1 and queues one update of each.
fn records(w: &mut World, n: usize) {
    for i in 0..n {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
}

fn is_ack(r: &Request) -> bool {
    matches!(r, Request::Write { scopes, .. } if matches!(scopes[..], [Scope::Target { .. }]))
}

fn is_wait(r: &Request) -> bool {
    matches!(r, Request::Wait { .. })
}

/// Carries out every pending request of tab A but waits (sends go into the air).
fn step_all_but_waits(w: &mut World) {
    while let Some(i) = w.find(A, |r| !is_wait(r)) {
        w.step(A, i, &mut truthful);
    }
}

/// A flush (concurrency 4) of `n` queued records, every request made so far carried out but
/// waits: its first sends are in the air.
fn sending(n: usize) -> World {
    let mut w = World::new(1);
    records(&mut w, n);
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    step_all_but_waits(&mut w);
    w
}

/// [`sending`] ten records, with a deadline 100 ms on.
fn sending_until_a_deadline() -> World {
    let mut w = World::new(1);
    records(&mut w, 10);
    let deadline = w.tabs[A].now.plus(100);
    w.start_flush_with(A, "alice", |o| {
        o.concurrency = 4;
        o.deadline = Some(deadline);
    });
    step_all_but_waits(&mut w);
    w
}

/// Drives the flush to its end: each of the `n` rows claimed and sent once, none left.
fn drain_all(w: &mut World, n: u64) {
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded), (n, n));
    assert_eq!(left(w), 0);
}

fn acks(w: &World) -> usize {
    w.tabs[A].inbox.iter().filter(|r| is_ack(r)).count()
}

/// Rows of the queue still stored.
fn left(w: &World) -> usize {
    w.store.read_owner("alice").len()
}

#[test]
fn s8_answers_wait_while_sends_are_out_and_are_written_when_none_is() {
    let mut w = World::new(1);
    records(&mut w, 3);
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    step_all_but_waits(&mut w); // read, claim three, send three
    assert_eq!(w.tabs[A].air.len(), 3);
    w.deliver(A, 0);
    assert_eq!(acks(&w), 0, "the first answer waits: two sends are out");
    assert_eq!(w.tabs[A].inbox.iter().filter(|r| is_wait(r)).count(), 1, "and asks for its wait");
    let Some(Request::Wait { ms, .. }) = w.tabs[A].inbox.iter().find(|r| is_wait(r)) else { unreachable!() };
    assert_eq!(*ms, ACK_WAIT_MS);
    w.deliver(A, 0);
    assert_eq!(acks(&w), 0, "the second too: one send is out");
    assert_eq!(w.tabs[A].inbox.iter().filter(|r| is_wait(r)).count(), 1, "one wait bounds both");
    w.deliver(A, 0);
    assert_eq!(acks(&w), 3, "the last answer: no send is out, the three are written");
    step_all_but_waits(&mut w);
    assert_eq!(left(&w), 0, "every row ACKed once");
    assert!(!w.flushing(A), "the flush is done without its wait coming back");
    let rep = w.tabs[A].reports.last().unwrap();
    assert_eq!((rep.claimed, rep.succeeded), (3, 3));
}

#[test]
fn s8_waiting_answers_go_with_the_next_claim_batch() {
    let mut w = World::new(1);
    records(&mut w, 20);
    // Four sends and two rows claimed ahead; a claim batch as soon as two places are free.
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    step_all_but_waits(&mut w);
    assert_eq!(w.tabs[A].air.len(), 4);
    w.deliver(A, 0);
    assert_eq!(acks(&w), 0, "a row claimed ahead goes out; the answer waits");
    assert!(!w.tabs[A].inbox.iter().any(is_claim), "no room for a claim batch yet");
    w.deliver(A, 0);
    let inbox = &w.tabs[A].inbox;
    assert!(inbox.iter().any(is_claim), "room for two: a claim batch is asked for: {inbox:?}");
    assert_eq!(acks(&w), 2, "and both answers are written with it: {inbox:?}");
    let at = |pred: fn(&Request) -> bool| w.find(A, pred).unwrap();
    assert!(at(is_claim) < at(is_ack), "the claim first, as asked");
    // Driven to its end as the tests' driver does (waits carried out in their turn).
    drain_all(&mut w, 20);
}

#[test]
fn s8_the_wait_bounds_how_long_an_answer_waits_beside_a_send_that_does_not_answer() {
    let mut w = sending(2);
    assert_eq!(w.tabs[A].air.len(), 2);
    w.deliver(A, 0); // the other send stays in the air
    assert_eq!(acks(&w), 0);
    let wait = w.find(A, is_wait).expect("a wait is asked for");
    w.step(A, wait, &mut truthful);
    assert_eq!(acks(&w), 1, "the wait is back: the answer is written, the other send still out");
    step_all_but_waits(&mut w);
    assert_eq!(left(&w), 1, "its row is gone; the row still on the wire stays claimed");
    assert_eq!(w.tabs[A].air.len(), 1);
    // The last answer: nothing else is out.
    w.deliver(A, 0);
    assert_eq!(acks(&w), 1, "no send is out: written at once");
    step_all_but_waits(&mut w);
    assert_eq!(left(&w), 0);
    assert!(!w.flushing(A));
}

#[test]
fn s8_a_wait_is_its_answers_alone_back_after_they_were_written_it_releases_none_parked_since() {
    let mut w = sending(20);
    w.deliver(A, 0); // parked; its wait is asked for
    let first = w.find(A, is_wait).unwrap();
    let Request::Wait { token: first, .. } = w.tabs[A].inbox[first].clone() else { unreachable!() };
    w.deliver(A, 0); // a claim batch: both written with it
    assert_eq!(acks(&w), 2);
    step_all_but_waits(&mut w); // the claim, the two ACKs, the sends; the first wait stays out
    w.deliver(A, 0);
    assert_eq!(acks(&w), 0, "parked");
    let waits: Vec<_> = w.tabs[A].inbox.iter().filter(|r| is_wait(r)).cloned().collect();
    assert_eq!(waits.len(), 2, "the answer asks for a wait of its own: {waits:?}");
    // The first wait, back now, is not this answer's: it stays parked (or a wait started by
    // an earlier batch would cut each later batch's answers into a transaction of their own).
    let at = w.find(A, |r| matches!(r, Request::Wait { token, .. } if *token == first)).unwrap();
    w.step(A, at, &mut truthful);
    assert_eq!(acks(&w), 0, "the earlier batch's wait releases nothing");
    let own = w.find(A, is_wait).unwrap();
    w.step(A, own, &mut truthful);
    assert_eq!(acks(&w), 1, "its own wait, back, writes it");
    drain_all(&mut w, 20);
}

#[test]
fn s8_an_answer_while_a_claim_batch_is_being_written_waits_for_the_next_write() {
    let mut w = sending(20);
    w.deliver(A, 0);
    w.deliver(A, 0); // room for two: a claim batch, both answers with it
                     // Everything but the claim batch and the wait: the batch is still to be written.
    while let Some(i) = w.find(A, |r| !is_claim(r) && !is_wait(r)) {
        w.step(A, i, &mut truthful);
    }
    assert_eq!(w.tabs[A].inbox.iter().filter(|r| is_claim(r)).count(), 1);
    w.deliver(A, 0);
    assert_eq!(acks(&w), 0, "the batch asked for before it is not this answer's company: it waits for the next");
    w.deliver(A, 0);
    assert_eq!(acks(&w), 2, "room for two again: the next batch, both answers with it");
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded), (20, 20));
}

#[test]
fn s8_answers_waiting_at_the_deadline_are_written_and_the_rows_claimed_ahead_released() {
    let mut w = sending_until_a_deadline();
    w.deliver(A, 0); // parked; a row claimed ahead goes out
    assert_eq!(acks(&w), 0);
    w.advance(A, 200);
    w.deliver(A, 0); // past the deadline: the rows claimed ahead are released, and the answers go with them
    assert_eq!(acks(&w), 2, "{:?}", w.tabs[A].inbox);
    let rep = w.drain(A, &mut truthful);
    assert_eq!(
        (rep.claimed, rep.succeeded, rep.released),
        (5, 5, 3),
        "claimed: the rows sent; the three still claimed ahead are released only"
    );
    assert!(w.outstanding(A).is_empty());
    let left = w.store.read_owner("alice");
    assert_eq!(left.len(), 5, "the released rows and the two never claimed stay queued");
    assert!(left.iter().all(|r| r["state"] == "queued"), "{left:?}");
}

#[test]
fn s8_at_the_deadline_every_row_claimed_ahead_is_released_and_none_sent() {
    // Concurrency 4: four rows sent, the next ones claimed ahead. The first answer comes
    // after the deadline: it ends the flush, and every row waiting goes back unsent —
    // releasing one must not let the next one out.
    let mut w = sending_until_a_deadline();
    assert_eq!(w.tabs[A].air.len(), 4);
    let claimed = w.store.read_owner("alice").iter().filter(|r| r.get("claim").is_some()).count() as u64;
    assert!(claimed >= 6, "at least two rows claimed ahead: {claimed}");
    w.advance(A, 200);
    w.deliver(A, 0);
    assert!(!w.tabs[A].inbox.iter().any(is_send), "nothing goes out after the deadline: {:?}", w.tabs[A].inbox);
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (4, 4, claimed - 4));
    assert_eq!(w.server.received.len(), 4);
    assert_eq!(w.store.read_owner("alice").len(), 6, "the released rows and those never claimed stay queued");
}

#[test]
fn s8_an_answer_waiting_past_its_lease_is_not_applied_over_another_tabs_claim() {
    let mut w = World::new(2);
    records(&mut w, 2);
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    step_all_but_waits(&mut w);
    w.deliver(A, 0); // parked beside the other send
    let wait = w.find(A, is_wait).expect("a wait");
    // The wait comes back late (a stalled tab): the lease is over and tab B took both rows.
    w.advance_all(LEASE + 1);
    let rep_b = w.flush(1, "alice");
    assert_eq!(rep_b.succeeded, 2, "tab B sends both rows again; the ledger replays the one A heard");
    w.step(A, wait, &mut truthful);
    w.drain(A, &mut truthful);
    assert!(w.store.read_owner("alice").is_empty());
    for id in w.server.applied.clone() {
        assert_eq!(w.server.times_applied(&id), 1, "{id} applied once");
    }
    let rep_a = w.tabs[A].reports.last().unwrap();
    assert_eq!(rep_a.applied, 0, "A's late answers find the rows gone: not mine, nothing changed");
    assert!(w.outstanding(A).is_empty());
}

#[test]
fn s8_a_creates_answer_back_from_converting_its_intents_is_written_at_once() {
    // Two creates out; the first one's record is edited meanwhile (an intent). Its answer
    // waits for company, but once its intents are converted its ACK-delete goes at once:
    // a converted intent beside a create not yet ACKed is a state to keep short (an app
    // that deleted the record finds the create still queued and the delete repointed).
    let mut w = World::new(1);
    let c1 = w.enqueue(A, create("alice", json!({"n": 1}))).row.unwrap();
    let _c2 = w.enqueue(A, create("alice", json!({"n": 2}))).row.unwrap();
    w.start_flush_with(A, "alice", |o| o.concurrency = 4);
    step_all_but_waits(&mut w);
    assert_eq!(w.tabs[A].air.len(), 2);
    let edit = json!({"owner": "alice", "target": c1.target, "kind": "update", "body": {"n": 10}});
    assert!(w.enqueue(A, edit).row.unwrap().is_intent());
    let first = w.tabs[A].air.iter().position(|(t, _)| w.tabs[A].tickets.get(t).is_some_and(|(id, _)| *id == c1.id));
    w.deliver(A, first.expect("c1's answer in the air"));
    assert_eq!(acks(&w), 0, "parked beside the other send");
    let wait = w.find(A, is_wait).unwrap();
    w.step(A, wait, &mut truthful);
    step_all_but_waits(&mut w); // the ACK (convert first), the port, the conversion, the ACK again
    assert_eq!(w.tabs[A].air.len(), 1, "the other create is still out");
    assert!(w.row(&c1.id).is_none(), "c1 ACKed right after its intent was converted");
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.succeeded, rep.converted), (3, 1));
    assert_eq!(left(&w), 0);
}
