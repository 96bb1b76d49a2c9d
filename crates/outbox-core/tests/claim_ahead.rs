//! SPEC §8 rows claimed ahead of their sends: up to `concurrency` sends outstanding and up to
//! as many rows more claimed, waiting for one of them to answer; `maxRows` counts them
//! with the sends made and the claims being written; a row claimed ahead goes out only while
//! at least half of its lease is left when its turn comes; at the deadline nothing more is
//! claimed or sent, whatever write was asked for before it, and a send the flush asked for
//! but the driver had not taken yet does not go out (nor after an auth answer, §6).

mod sim;

use outbox_core::{Millis, Outcome, Request};
use serde_json::json;
use sim::*;

const A: usize = 0;

/// Seeds records `w:0` .. `w:{n-1}` at revision 1 and queues one update of each.
fn records(w: &mut World, n: usize) {
    records_from(w, 0, n);
}

/// As [`records`], of `w:{from}` .. `w:{from+n-1}`.
fn records_from(w: &mut World, from: usize, n: usize) {
    for i in from..from + n {
        w.server.seed_record(&format!("w:{i}"), 1);
        let _ = w.enqueue(A, update("alice", &format!("w:{i}"), json!({"x": i})));
    }
}

/// Carries out every pending request of tab A except answers.
fn fill_air(w: &mut World) {
    while !w.tabs[A].inbox.is_empty() {
        w.step(A, 0, &mut truthful);
    }
}

/// Rows of the queue whose claim is live now (claimed and neither answered nor released).
fn claimed_now(w: &World) -> usize {
    let now = w.tabs[A].now.0;
    w.store.read_owner("alice").iter().filter(|r| r["claim"]["expiresAt"].as_i64().is_some_and(|e| e > now)).count()
}

/// Drives tab A's flush to its end: each time, up to `answers` answers (with their ACKs)
/// while the claim batches they make room for stay unwritten, then every pending request.
/// Returns the most sends outstanding at once and the most rows claimed at once.
fn drive_with_claims_under_way(w: &mut World, answers: usize) -> (usize, usize) {
    let (mut sends, mut claimed) = (0, 0);
    while w.flushing(A) {
        fill_air(w);
        sends = sends.max(w.tabs[A].air.len());
        claimed = claimed.max(claimed_now(w));
        for _ in 0..answers {
            if !w.tabs[A].air.is_empty() && w.flushing(A) {
                w.answer_one(A);
                sends = sends.max(w.tabs[A].air.len());
                claimed = claimed.max(claimed_now(w));
            }
        }
    }
    (sends, claimed)
}

#[test]
fn s8_at_most_concurrency_sends_and_as_many_rows_more_are_claimed_at_once() {
    for (concurrency, answers) in (1..=6).flat_map(|c| (1..=c).map(move |a| (c, a))) {
        let case = format!("concurrency {concurrency}, {answers} answers between writes");
        let mut w = World::new(1);
        records(&mut w, 15);
        w.start_flush_with(A, "alice", |o| o.concurrency = concurrency);
        let (sends, claimed) = drive_with_claims_under_way(&mut w, answers);
        assert_eq!(sends, concurrency, "{case}: sends outstanding at once");
        assert_eq!(claimed, 2 * concurrency, "{case}: rows claimed at once");
        assert_eq!(w.server.received.len(), 15, "{case}");
        assert!(w.store.is_empty(), "{case}");
    }
}

#[test]
fn s8_a_claim_batch_committed_while_every_send_is_out_waits_for_an_answer() {
    // Concurrency 2: four rows claimed, two sent. The first answer sends a row claimed
    // ahead (two out again) and makes room for one claim; that claim commits with both
    // sends still out, so its row waits, claimed, instead of being a third send.
    let mut w = World::new(1);
    records(&mut w, 6);
    w.start_flush_with(A, "alice", |o| o.concurrency = 2);
    fill_air(&mut w);
    assert_eq!((w.tabs[A].air.len(), claimed_now(&w)), (2, 4));
    w.deliver(A, 0);
    fill_air(&mut w);
    assert_eq!(w.tabs[A].air.len(), 2, "never more than two sends outstanding");
    assert_eq!(claimed_now(&w), 4, "two out, two claimed ahead");
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (6, 6, 0));
}

#[test]
fn s8_max_rows_counts_claim_batches_being_written_with_the_sends_made() {
    // Concurrency 4: eight rows claimed (four sent). With every answer taken before the next
    // write, the fourth answer makes room for a claim while the batch the second one asked
    // for is still being written: that batch counts against maxRows as the sends made do.
    for (max, answers) in [7, 8, 9, 10].into_iter().flat_map(|m| (1..=4).map(move |a| (m, a))) {
        let mut w = World::new(1);
        records(&mut w, 15);
        w.start_flush_with(A, "alice", |o| {
            o.concurrency = 4;
            o.max_rows = Some(max);
        });
        let case = format!("maxRows {max}, {answers} answers between writes");
        let (sends, claimed) = drive_with_claims_under_way(&mut w, answers);
        assert!(sends <= 4 && claimed <= 8, "{case}: {sends} sends, {claimed} rows claimed at once");
        let rep = w.tabs[A].reports.last().unwrap();
        assert_eq!((rep.claimed, rep.succeeded), (max, max), "{case}");
        assert_eq!(w.server.received.len() as u64, max, "{case}: sends in total");
        assert_eq!(w.store.len() as u64, 15 - max, "{case}");
    }
}

/// Concurrency 2, three records: all three claimed at T0, two sent, one claimed ahead. The
/// first answer comes `after` ms later: the row claimed ahead has its turn then.
fn turn_of_the_row_claimed_ahead(after: i64) -> World {
    let mut w = World::new(1);
    records(&mut w, 3);
    w.start_flush_with(A, "alice", |o| o.concurrency = 2);
    fill_air(&mut w);
    assert_eq!((w.tabs[A].air.len(), claimed_now(&w)), (2, 3));
    w.advance(A, after);
    w.deliver(A, 0);
    w
}

#[test]
fn s8_a_row_claimed_ahead_with_exactly_half_its_lease_left_is_sent() {
    let mut w = turn_of_the_row_claimed_ahead(LEASE / 2);
    assert_eq!(w.tabs[A].inbox.iter().filter(|r| is_send(r)).count(), 1, "sent at its turn: {:?}", w.tabs[A].inbox);
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (3, 3, 0));
    assert_eq!(w.server.received.len(), 3);
}

#[test]
fn s8_a_row_claimed_ahead_with_less_than_half_its_lease_left_is_released_unsent() {
    // Sent now it could outlive its claim, and another tab could send it again.
    let mut w = turn_of_the_row_claimed_ahead(LEASE / 2 + 1);
    assert!(!w.tabs[A].inbox.iter().any(is_send), "not sent: {:?}", w.tabs[A].inbox);
    let rep = w.drain(A, &mut truthful);
    assert_eq!(
        (rep.claimed, rep.succeeded, rep.released),
        (2, 2, 1),
        "claimed: the rows sent; the one claimed ahead is released only"
    );
    assert_eq!(w.server.received.len(), 2);
    let left = w.store.read_owner("alice");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["state"], "queued", "{}", left[0]);
    assert!(left[0].get("evidence").is_none(), "never attempted: {}", left[0]);
    assert_eq!(claimed_now(&w), 0, "its claim is handed back: {}", left[0]);
    // The next flush sends it.
    assert_eq!(w.flush(A, "alice").succeeded, 1);
}

/// Five rows, concurrency 2 and a deadline 100 ms on: four rows claimed, two sent, and the
/// first answer delivered (before the deadline). The flush's start instant with the world.
fn first_answer_before_a_deadline() -> (World, i64) {
    let mut w = World::new(1);
    records(&mut w, 5);
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| {
        o.deadline = Some(Millis(now + 100));
        o.concurrency = 2;
    });
    fill_air(&mut w);
    w.deliver(A, 0);
    (w, now)
}

#[test]
fn s8_a_claim_written_after_the_deadline_claims_nothing_even_once_the_flush_has_ended() {
    // Concurrency 2: four rows claimed, two sent. The first answer (before the deadline)
    // sends a row claimed ahead and asks for a claim of one more row; the second answer
    // comes after the deadline and ends the flush, releasing the row still claimed ahead;
    // the claim, written after that, takes nothing.
    let (mut w, _) = first_answer_before_a_deadline();
    let claims = w.tabs[A].inbox.iter().filter(|r| matches!(r, Request::Write { .. })).count();
    assert_eq!(claims, 2, "the ACK and a claim of one row: {:?}", w.tabs[A].inbox);
    w.advance(A, 100);
    w.deliver(A, 0);
    let rep = w.drain(A, &mut truthful);
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (3, 3, 1), "nothing claimed after the deadline");
    assert_eq!(w.server.received.len(), 3);
    let left = w.store.read_owner("alice");
    assert_eq!(left.len(), 2);
    let never_claimed = left.iter().filter(|raw| raw.get("claim").is_none()).count();
    assert_eq!(never_claimed, 1, "the row of the claim written after the deadline is left as it was: {left:?}");
    for raw in &left {
        assert!(raw.get("evidence").is_none(), "never attempted: {raw}");
    }
    assert_eq!(claimed_now(&w), 0, "the row claimed ahead is handed back");
}

#[test]
fn s8_a_claim_batch_met_by_the_deadline_leaves_the_flush_due_again_at_once() {
    // As above, but the deadline passes while the claim batch (and the first answer's ACK)
    // wait to be written: the write's plan is where the flush learns it. Its rows, and the
    // row claimed ahead that it releases, are left sendable: `nextDueAt` is the instant it
    // stopped (§8 when to flush next), not the read's `null`.
    let (mut w, now) = first_answer_before_a_deadline();
    assert!(w.tabs[A].inbox.iter().any(|r| matches!(r, Request::Write { .. })), "{:?}", w.tabs[A].inbox);
    w.advance(A, 100);
    while let Some(i) = w.find(A, |r| matches!(r, Request::Write { .. })) {
        w.step(A, i, &mut truthful);
    }
    let rep = w.drain(A, &mut truthful);
    assert_eq!(rep.next_due_at, Some(now + 100), "{rep:?}");
    assert!(!w.store.read_owner("alice").is_empty(), "rows are left");
}

#[test]
fn s8_an_ack_written_after_the_deadline_is_applied_and_ends_the_flush_without_another_read() {
    // The only row's answer comes before the deadline, its ACK is written after it: the
    // answer is applied, and the flush ends there (no new round of the queue).
    let mut w = World::new(1);
    records(&mut w, 1);
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| o.deadline = Some(Millis(now + 100)));
    fill_air(&mut w);
    w.deliver(A, 0);
    assert!(matches!(w.tabs[A].inbox[..], [Request::Write { .. }]), "the ACK: {:?}", w.tabs[A].inbox);
    w.advance(A, 100);
    w.step(A, 0, &mut truthful);
    assert!(!w.flushing(A), "nothing asked after the ACK: {:?}", w.tabs[A].inbox);
    let rep = w.tabs[A].reports.last().unwrap();
    assert_eq!((rep.claimed, rep.succeeded), (1, 1));
    assert!(w.store.is_empty());
    // Stopped before a read found nothing more to send: rows enqueued meanwhile may be
    // waiting, so the flush is due again at once (§8 when to flush next); the next one
    // finds the queue empty.
    assert_eq!(rep.next_due_at, Some(now + 100));
}

#[test]
fn s8_no_row_claimed_ahead_goes_out_once_a_write_planned_past_the_deadline_has_ended_the_flush() {
    // The first answer (before the deadline) sends a row claimed ahead and asks for a claim
    // of one more (with its ACK). That write is planned past the deadline: the flush ends
    // there. Before its commit comes back, the second answer arrives: the row still claimed
    // ahead must not go out.
    let (mut w, _) = first_answer_before_a_deadline();
    while let Some(i) = w.find(A, |r| !matches!(r, Request::Write { .. } | Request::Wait { .. })) {
        w.step(A, i, &mut truthful);
    }
    assert_eq!(w.server.received.len(), 3, "the row claimed ahead went out before the deadline");
    w.advance(A, 100);
    let mut results = Vec::new();
    while let Some(i) = w.find(A, |r| matches!(r, Request::Write { .. })) {
        results.push(w.write_unhandled(A, i));
    }
    assert!(!results.is_empty());
    w.deliver(A, 0);
    assert!(!w.tabs[A].inbox.iter().any(is_send), "a send after the deadline: {:?}", w.tabs[A].inbox);
    for (token, r) in results {
        w.written(A, token, r);
    }
    let rep = w.drain(A, &mut truthful);
    assert_eq!(w.server.received.len(), 3, "nothing sent after the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (3, 3, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 0, "every claim handed back or answered");
}

#[test]
fn s8_a_claim_planned_before_the_deadline_and_committed_after_it_sends_nothing() {
    // The first answer (before the deadline) sends a row claimed ahead and asks for a claim
    // of one more. That claim is planned before the deadline and commits after it (its
    // transaction waited for another tab's, or for a slow disk), while the other answers,
    // also before the deadline, left room among the sends: the row it claimed must not go
    // out; it is handed back.
    let (mut w, now) = first_answer_before_a_deadline();
    make_sends(&mut w);
    let claim = w.find(A, |r| matches!(r, Request::Write { .. })).expect("the claim of one more row");
    let (token, r) = w.write_unhandled(A, claim);
    while !w.tabs[A].air.is_empty() {
        w.deliver(A, 0);
        make_sends(&mut w);
    }
    assert_eq!(w.server.received.len(), 4, "every row claimed before went out before the deadline");
    assert_eq!(claimed_now(&w), 5, "the claim committed (and the four answers are not written yet)");
    w.advance(A, 100);
    w.written(A, token, r);
    let rep = nothing_more_sent(&mut w, 4, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (4, 4, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 0, "the claim handed back");
    assert_eq!(rep.next_due_at, Some(now + 100), "the rows left are sendable at once");
}

/// Carries out every send tab A's flush has asked for (before any deadline).
fn make_sends(w: &mut World) {
    while let Some(i) = w.find(A, is_send) {
        w.step(A, i, &mut truthful);
    }
}

/// Tab A's flush asks for no send now and, drained, has sent `sent` rows in all: nothing
/// after `stop`. Its report.
fn nothing_more_sent(w: &mut World, sent: usize, stop: &str) -> outbox_core::FlushReport {
    assert!(!w.tabs[A].inbox.iter().any(is_send), "a send after {stop}: {:?}", w.tabs[A].inbox);
    let rep = w.drain(A, &mut truthful);
    assert_eq!(w.server.received.len(), sent, "nothing sent after {stop}");
    rep
}

/// Stores `row` as claimed by another tab (a claim of it by tab A is then stale).
fn claimed_by_another_tab(w: &mut World, mut row: serde_json::Value) {
    row["state"] = json!("sending");
    row["claim"] = json!({"tabId": "tab-z", "expiresAt": w.tabs[A].now.0 + 10_000, "fence": 1});
    w.store.seed(row);
}

/// Hands the answer `idx` in the air to tab A's flush at the tab's time, without taking the
/// requests it asks for: a driver runs several steps before it looks at them.
fn hear(w: &mut World, idx: usize, outcome: Option<Outcome>) {
    let (token, heard) = w.tabs[A].air.remove(idx);
    let now = w.tabs[A].now;
    w.with_flush(A, |f, out| f.handle_sent(token, outcome.unwrap_or(heard), now, out));
}

/// Four rows of five claimed with concurrency 2 and a deadline 100 ms on: two sent, two
/// claimed ahead. The flush's start instant with the world.
fn two_out_two_ahead() -> (World, i64) {
    two_out_two_ahead_of(5)
}

/// As [`two_out_two_ahead`], of `n` rows, enqueued 1 ms apart (a claim batch's span of
/// the queue then names its rows).
fn two_out_two_ahead_of(n: usize) -> (World, i64) {
    let mut w = World::new(1);
    for i in 0..n {
        records_from(&mut w, i, 1);
        w.advance(A, 1);
    }
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| {
        o.deadline = Some(Millis(now + 100));
        o.concurrency = 2;
    });
    fill_air(&mut w);
    assert_eq!((w.tabs[A].air.len(), claimed_now(&w)), (2, 4));
    (w, now)
}

#[test]
fn s8_a_send_asked_for_but_not_taken_yet_when_an_answer_meets_the_deadline_does_not_go_out() {
    // The first answer (before the deadline) asks for the send of a row claimed ahead; the
    // second (at the deadline) comes before the driver has taken that send.
    let (mut w, now) = two_out_two_ahead();
    hear(&mut w, 0, None);
    w.advance(A, 100);
    hear(&mut w, 0, None);
    w.collect(A);
    let rep = nothing_more_sent(&mut w, 2, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (2, 2, 2), "{rep:?}");
    assert_eq!(claimed_now(&w), 0, "both rows claimed ahead handed back");
    assert_eq!(rep.next_due_at, Some(now + 100));
}

#[test]
fn s6_a_send_asked_for_but_not_taken_yet_when_an_auth_answer_arrives_does_not_go_out_nor_another() {
    // The first answer asks for the send of a row claimed ahead; the second, an auth answer,
    // comes before the driver has taken that send. Releasing it leaves room among the
    // sends: the other row claimed ahead must not take it.
    let (mut w, _) = two_out_two_ahead();
    hear(&mut w, 0, None);
    hear(&mut w, 0, Some(Outcome::Auth));
    w.collect(A);
    let rep = nothing_more_sent(&mut w, 2, "the auth answer");
    // Released: both rows claimed ahead, and the row of the claim the first answer asked
    // for (committed after the auth answer).
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (2, 1, 3), "{rep:?}");
    assert_eq!(claimed_now(&w), 0, "every claim handed back");
}

#[test]
fn s8_a_send_asked_for_but_not_taken_yet_when_a_plan_meets_the_deadline_does_not_go_out() {
    // The first answer (before the deadline) sends a row claimed ahead and asks for a claim
    // of one more row with its ACK. The second answer (before the deadline too) asks for the
    // send of the last row claimed ahead; before the driver has taken it, it plans that
    // write, past the deadline.
    let (mut w, _) = two_out_two_ahead();
    hear(&mut w, 0, None);
    w.collect(A);
    make_sends(&mut w);
    assert_eq!(w.server.received.len(), 3);
    hear(&mut w, 0, None);
    w.advance(A, 100);
    let write = w.find(A, |r| matches!(r, Request::Write { .. })).expect("the claim and the ACK");
    let (token, r) = w.write_unhandled(A, write);
    w.written(A, token, r);
    let rep = nothing_more_sent(&mut w, 3, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (3, 3, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 0, "the row claimed ahead handed back");
}

#[test]
fn s8_a_send_asked_for_but_not_taken_yet_when_a_read_meets_the_deadline_does_not_go_out() {
    // The first answer sends a row claimed ahead and asks for a claim of the last row, which
    // another tab takes first: the claim is stale, no candidate is left, and the queue is
    // read again while two sends are out. The second answer (before the deadline) asks for
    // the send of the last row claimed ahead; before the driver has taken it, the read comes
    // back, past the deadline.
    let (mut w, _) = two_out_two_ahead();
    hear(&mut w, 0, None);
    w.collect(A);
    make_sends(&mut w);
    let last = w.store.read_owner("alice").into_iter().find(|r| r.get("claim").is_none()).expect("a row not claimed");
    claimed_by_another_tab(&mut w, last);
    while let Some(i) = w.find(A, |r| matches!(r, Request::Write { .. })) {
        w.step(A, i, &mut truthful);
    }
    let read = w.find(A, |r| matches!(r, Request::ReadOwner { .. })).expect("the queue read again");
    assert_eq!(w.tabs[A].air.len(), 2, "two sends out");
    hear(&mut w, 0, None);
    w.advance(A, 100);
    w.step(A, read, &mut truthful);
    let rep = nothing_more_sent(&mut w, 3, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released, rep.stale), (3, 3, 1, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 1, "only the other tab's claim is left");
}

/// The place in tab A's inbox of the claim batch of a row no claim holds yet, and that row
/// (the batch's span of the queue names it: rows 1 ms apart).
fn claim_of_a_free_row(w: &World) -> Option<(usize, serde_json::Value)> {
    let rows = w.store.read_owner("alice");
    w.tabs[A].inbox.iter().enumerate().find_map(|(i, r)| match r {
        Request::Write { scopes, .. } => scopes.iter().find_map(|s| match s {
            outbox_core::Scope::Span { from, to, .. } => rows
                .iter()
                .find(|r| r.get("claim").is_none() && r["savedAt"].as_f64().is_some_and(|t| t >= *from && t <= *to))
                .map(|r| (i, r.clone())),
            _ => None,
        }),
        _ => None,
    })
}

#[test]
fn s8_a_send_withdrawn_by_a_read_past_the_deadline_with_nothing_else_under_way_is_released() {
    // Six rows, concurrency 2: four claimed, two sent. The first answer sends a row claimed
    // ahead and asks for a claim of a fifth row, which another tab takes first; the second
    // answer sends the other row claimed ahead and asks for a claim of the sixth. The stale
    // claim leaves no candidate: the queue is read again. Every send made answers and is
    // written. Then, in one step of the driver, the sixth row's claim commits (its send is
    // asked for) and the read comes back past the deadline: that send does not go out,
    // and with nothing else under way the row is released at once, not left claimed.
    let (mut w, _) = two_out_two_ahead_of(6);
    hear(&mut w, 0, None);
    w.collect(A);
    let (_, fifth) = claim_of_a_free_row(&w).expect("the fifth row's claim");
    claimed_by_another_tab(&mut w, fifth);
    make_sends(&mut w);
    hear(&mut w, 0, None);
    w.collect(A);
    let (last, _) = claim_of_a_free_row(&w).expect("the sixth row's claim");
    let (token, r) = w.write_unhandled(A, last);
    loop {
        if let Some(i) = w.find(A, |r| matches!(r, Request::Write { .. }) || is_send(r)) {
            w.step(A, i, &mut truthful);
        } else if !w.tabs[A].air.is_empty() {
            w.deliver(A, 0);
        } else {
            break;
        }
    }
    let read = w.find(A, |r| matches!(r, Request::ReadOwner { .. })).expect("the queue read again");
    let now = w.tabs[A].now;
    w.with_flush(A, |f, out| f.handle_written(token, r, now, out));
    w.advance(A, 100);
    w.step(A, read, &mut truthful);
    let rep = nothing_more_sent(&mut w, 4, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released, rep.stale), (4, 4, 1, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 1, "only the other tab's claim is left");
}

/// Four rows, `maxRows` 3, concurrency 2 and a deadline 100 ms on: three rows claimed, two
/// sent; the first answer asks for the last send `maxRows` allows, and the driver has not
/// taken it yet.
fn last_send_of_max_rows_not_taken() -> World {
    let mut w = World::new(1);
    records(&mut w, 4);
    let now = w.tabs[A].now.0;
    w.start_flush_with(A, "alice", |o| {
        o.deadline = Some(Millis(now + 100));
        o.concurrency = 2;
        o.max_rows = Some(3);
    });
    fill_air(&mut w);
    assert_eq!((w.tabs[A].air.len(), claimed_now(&w)), (2, 3));
    hear(&mut w, 0, None);
    w
}

#[test]
fn s8_the_last_send_max_rows_allows_not_taken_yet_when_an_answer_meets_the_deadline_does_not_go_out() {
    let mut w = last_send_of_max_rows_not_taken();
    w.advance(A, 100);
    hear(&mut w, 0, None);
    w.collect(A);
    let rep = nothing_more_sent(&mut w, 2, "the deadline");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (2, 2, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 0);
}

#[test]
fn s6_the_last_send_max_rows_allows_not_taken_yet_when_an_auth_answer_arrives_does_not_go_out() {
    let mut w = last_send_of_max_rows_not_taken();
    hear(&mut w, 0, Some(Outcome::Auth));
    w.collect(A);
    let rep = nothing_more_sent(&mut w, 2, "the auth answer");
    assert_eq!((rep.claimed, rep.succeeded, rep.released), (2, 1, 1), "{rep:?}");
    assert_eq!(claimed_now(&w), 0);
}
