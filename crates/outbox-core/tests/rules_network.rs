//! Issue 34: the network's comings and goings. §8 offline: a flush told the network is down
//! claims, attempts and changes nothing (so rows keep coalescing, §7). §10 the network's
//! return: a queued row deferred by a network failure before `onlineSince` is due at once;
//! every other row keeps its backoff; one rule decides it for selecting and for claiming.
//! §8 when to flush next: the report's `nextDueAt`.

mod sim;

use outbox_core::claim::{plan_claim, ClaimSkip};
use outbox_core::codec::Stored;
use outbox_core::retry::{waits_until, NETWORK_CODES};
use outbox_core::select::{select, select_sendable, Unsendable};
use outbox_core::{decode, Millis, Outcome, Request, Tab};
use proptest::prelude::*;
use serde_json::{json, Value};
use sim::*;

const NOW: Millis = Millis(1_000_000);
const BACK: Millis = Millis(NOW.0 - 1_000); // the network came back a second ago

/// A queued row of alice's deferred at `deferred_at` by a failure coded `code`, not to be
/// sent again before NOW + 60 s.
fn deferred(id: &str, code: Option<&str>, deferred_at: Option<i64>) -> Value {
    let mut v = json!({"id": id, "owner": "alice", "target": format!("doc:{id}"), "kind": "update",
                       "body": {"n": 1}, "savedAt": 10, "state": "queued", "nextAttemptAt": NOW.0 + 60_000,
                       "evidence": {"attemptCount": 3, "lastAttemptAt": NOW.0 - 6_000},
                       "claim": {"tabId": "tab-x", "expiresAt": NOW.0 - 5_000, "fence": 3},
                       "writer": {"bundle": "test", "at": NOW.0 - 6_000}});
    if let Some(c) = code {
        v["evidence"]["lastErrorCode"] = json!(c);
    }
    if let Some(d) = deferred_at {
        v["deferredAt"] = json!(d);
    }
    v
}

fn picked(rows: &[Value], online_since: Option<Millis>) -> Vec<String> {
    let stored: Vec<Stored> = rows.iter().map(Stored::from_value).collect();
    select_sendable(&stored, "tab-a", NOW, 10_000, online_since).iter().map(|r| r.id.clone()).collect()
}

#[test]
fn s10_a_row_deferred_by_the_network_before_it_came_back_is_due_at_once() {
    for code in NETWORK_CODES {
        let row = deferred("r", Some(code), Some(NOW.0 - 5_000));
        assert!(picked(std::slice::from_ref(&row), None).is_empty(), "{code}: without onlineSince the backoff holds");
        assert_eq!(
            picked(std::slice::from_ref(&row), Some(BACK)),
            ["r"],
            "{code}: deferred before the network came back"
        );
        let r = decode(&row).unwrap();
        assert_eq!(waits_until(&r, NOW, Some(BACK)), None);
        assert_eq!(waits_until(&r, NOW, None), Some(Millis(NOW.0 + 60_000)));
    }
    // Deferred exactly when the network came back, or after it: it failed again since, and
    // keeps its backoff (the rule never loops).
    for at in [BACK.0, BACK.0 + 1, NOW.0] {
        assert!(picked(&[deferred("r", Some("NETWORK"), Some(at))], Some(BACK)).is_empty(), "deferred at {at}");
    }
    assert_eq!(picked(&[deferred("r", Some("NETWORK"), Some(BACK.0 - 1))], Some(BACK)), ["r"]);
}

#[test]
fn s10_other_rows_keep_their_backoff_when_the_network_comes_back() {
    let early = Some(NOW.0 - 5_000);
    // Another code: the server answered (a 503 and its Retry-After included), the send threw.
    for code in [Some("HTTP_503"), Some("SEND_FAILED"), Some("IN_PROGRESS"), Some("network"), None] {
        assert!(picked(&[deferred("r", code, early)], Some(BACK)).is_empty(), "{code:?}");
    }
    // No `deferredAt`.
    assert!(picked(&[deferred("r", Some("NETWORK"), None)], Some(BACK)).is_empty());
    // Not queued: held and blocked rows are parked whatever their backoff; a `sending` row
    // (an expired claim: its tab died mid-send) is not a deferred one.
    for state in ["held", "blocked", "sending"] {
        let mut row = deferred("r", Some("NETWORK"), early);
        row["state"] = json!(state);
        row["sentAt"] = json!(NOW.0 - 50_000);
        let r = decode(&row).unwrap();
        assert_eq!(waits_until(&r, NOW, Some(BACK)), Some(Millis(NOW.0 + 60_000)), "{state}");
        assert!(picked(&[row], Some(BACK)).is_empty(), "{state}");
    }
    // A row whose `nextAttemptAt` has passed is due anyway, with or without the rule.
    let mut row = deferred("r", Some("HTTP_503"), early);
    row["nextAttemptAt"] = json!(NOW.0);
    assert_eq!(picked(std::slice::from_ref(&row), None), ["r"]);
    assert_eq!(waits_until(&decode(&row).unwrap(), NOW, Some(BACK)), None);
}

#[test]
fn s10_the_claim_decides_due_by_the_same_rule() {
    let tab = Tab::new("tab-a");
    let raw = deferred("r", Some("TIMEOUT"), Some(NOW.0 - 5_000));
    let skip = plan_claim("alice", Some(&raw), None, &tab, NOW, None).unwrap_err();
    assert_eq!(skip, ClaimSkip::NotSendable(Unsendable::NotYet(Millis(NOW.0 + 60_000))));
    let cp = plan_claim("alice", Some(&raw), None, &tab, NOW, Some(BACK)).expect("due: the network is back");
    assert_eq!(cp.ticket.fence, 4);
    assert_eq!(cp.row.evidence.as_ref().unwrap().attempt_count, 4);
    // Another code is refused with onlineSince too.
    let raw = deferred("r", Some("HTTP_500"), Some(NOW.0 - 5_000));
    assert!(plan_claim("alice", Some(&raw), None, &tab, NOW, Some(BACK)).is_err());
}

/// A world whose tab 0 sent alice's row once and heard `code` with a one-minute Retry-After.
fn deferred_in_world(code: &str) -> (World, String) {
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    let id = w.enqueue(0, update("alice", "doc:1", json!({"a": 1}))).row.unwrap().id;
    w.start_flush(0, "alice");
    let code = code.to_owned();
    let report = w.drain(0, &mut |_, _| Outcome::Transient { code: Some(code.clone()), retry_after_ms: Some(60_000) });
    assert_eq!(report.deferred, 1);
    (w, id)
}

#[test]
fn s10_a_flush_given_online_since_sends_the_network_deferred_row_at_once() {
    let (mut w, id) = deferred_in_world("NETWORK");
    let deferred_at = w.row(&id).unwrap().deferred_at.unwrap();
    let next = w.row(&id).unwrap().next_attempt_at.unwrap();
    assert_eq!(next, deferred_at.plus(60_000));
    w.advance(0, 2_000);
    // Without onlineSince: nothing goes out, and the report says when the row is due.
    let r = w.flush(0, "alice");
    assert_eq!((r.claimed, r.next_due_at), (0, Some(next.0)));
    // The network came back after the failure: the row goes out now.
    let back = deferred_at.plus(1);
    w.start_flush_with(0, "alice", |o| o.online_since = Some(back));
    let r = w.drain(0, &mut |s, op| s.handle(op));
    assert_eq!((r.claimed, r.succeeded, r.next_due_at), (1, 1, None));
    assert!(w.row(&id).is_none());
    assert_eq!(w.server.times_applied(&id), 1);
}

#[test]
fn s10_a_flush_given_online_since_keeps_a_server_deferred_row_waiting() {
    let (mut w, id) = deferred_in_world("HTTP_503");
    let row = w.row(&id).unwrap();
    w.advance(0, 2_000);
    w.start_flush_with(0, "alice", |o| o.online_since = Some(row.deferred_at.unwrap().plus(1)));
    let r = w.drain(0, &mut |s, op| s.handle(op));
    assert_eq!((r.claimed, r.next_due_at), (0, Some(row.next_attempt_at.unwrap().0)));
    assert_eq!(w.row(&id).unwrap(), row, "untouched");
}

#[test]
fn s8_an_offline_flush_claims_attempts_and_changes_nothing() {
    // A row deferred by the network, and a create never attempted.
    let (mut w, deferred_id) = deferred_in_world("NETWORK");
    let create = w.enqueue(0, create("alice", json!({"title": "milk"}))).row.unwrap();
    let before = w.store.read_owner("alice");
    w.start_flush_with(0, "alice", |o| {
        o.offline = true;
        o.online_since = Some(NOW); // ignored: nothing is read
    });
    // Done at once: it asked for nothing (no read, no claim, no port call).
    assert!(!w.flushing(0));
    let r = w.tabs[0].reports.last().unwrap().clone();
    assert!(r.offline);
    assert_eq!(r.next_due_at, None);
    assert_eq!(
        (r.claimed, r.released, r.succeeded, r.deferred, r.held, r.blocked, r.conflicts, r.stale, r.skipped),
        (0, 0, 0, 0, 0, 0, 0, 0, 0)
    );
    assert_eq!((r.converted, r.applied, r.receipts.len(), r.counters), (0, 0, 0, Default::default()));
    assert_eq!(w.store.read_owner("alice"), before, "no row changed");
    // The create was never attempted, so a delete still cancels it (§7): nothing is sent.
    let del = w.enqueue(0, delete("alice", &create.target));
    assert!(del.row.is_none(), "the unsent create and its delete cancel");
    assert!(w.row(&create.id).is_none());
    // Back online: the network-deferred row goes out at once, and the report is no
    // offline one.
    w.advance(0, 1_000);
    let back = w.tabs[0].now; // after the failure
    w.start_flush_with(0, "alice", |o| o.online_since = Some(back));
    let r = w.drain(0, &mut |s, op| s.handle(op));
    assert!(!r.offline);
    assert_eq!((r.claimed, r.succeeded), (1, 1));
    assert!(w.row(&deferred_id).is_none());
}

#[test]
fn s8_an_online_flush_reads_the_queue() {
    let mut w = World::new(1);
    let _ = w.enqueue(0, update("alice", "doc:1", json!({"a": 1})));
    w.start_flush_with(0, "alice", |o| o.offline = false);
    assert!(matches!(w.tabs[0].inbox[..], [Request::ReadOwner { .. }]));
}

/// A row of alice's with the given fields over a queued update.
fn row(id: &str, fields: Value) -> Value {
    let mut v = json!({"id": id, "owner": "alice", "target": format!("doc:{id}"), "kind": "update",
                       "body": {}, "savedAt": 10, "state": "queued"});
    for (k, x) in fields.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn next_due(rows: &[Value], online_since: Option<Millis>) -> Option<Millis> {
    let stored: Vec<Stored> = rows.iter().map(Stored::from_value).collect();
    select(&stored, "tab-a", NOW, 10_000, online_since).next_due_at
}

fn claim_of(tab: &str, expires_at: i64) -> Value {
    json!({"state": "sending", "sentAt": NOW.0 - 100, "claim": {"tabId": tab, "expiresAt": expires_at, "fence": 1},
           "writer": {"bundle": "test", "at": NOW.0 - 100}})
}

#[test]
fn s8_next_due_at_is_the_earliest_backoff_end_or_other_tabs_lease_end() {
    assert_eq!(next_due(&[], None), None);
    let later = row("a", json!({"nextAttemptAt": NOW.0 + 500}));
    let sooner = row("b", json!({"nextAttemptAt": NOW.0 + 200}));
    assert_eq!(next_due(&[later.clone(), sooner.clone()], None), Some(Millis(NOW.0 + 200)));
    assert_eq!(next_due(&[sooner.clone(), later.clone()], None), Some(Millis(NOW.0 + 200)));
    // Another tab's claim ends first.
    let other = row("c", claim_of("tab-b", NOW.0 + 50));
    assert_eq!(next_due(&[later.clone(), other.clone(), sooner.clone()], None), Some(Millis(NOW.0 + 50)));
    // An older writer's send: sentAt + the reading tab's lease.
    let older = row("d", json!({"state": "sending", "sentAt": NOW.0 - 9_990}));
    assert_eq!(next_due(&[later.clone(), older], None), Some(Millis(NOW.0 + 10)));
    // A sendable row does not count (it is due now), nor does this tab's own claim.
    let now_due = row("e", json!({"nextAttemptAt": NOW.0}));
    let mine = row("f", claim_of("tab-a", NOW.0 + 5));
    assert_eq!(next_due(&[now_due, mine, later.clone()], None), Some(Millis(NOW.0 + 500)));
    // A claim too far ahead to be honoured (§5) does not keep the row: it is sendable.
    let wild = row("g", claim_of("tab-b", NOW.0 + 3_600_001));
    assert_eq!(next_due(&[wild, later.clone()], None), Some(Millis(NOW.0 + 500)));
}

#[test]
fn s8_rows_waiting_for_something_other_than_time_never_count_in_next_due_at() {
    let soon = json!(NOW.0 + 1);
    let held = row("h", json!({"state": "held", "nextAttemptAt": soon, "heldAt": 1}));
    let blocked = row("b", json!({"state": "blocked", "nextAttemptAt": soon, "blockedAt": 1, "blockedCode": "X"}));
    let intent = row("i", json!({"target": "pending:c", "successorOf": "c"}));
    let pred = row("p", json!({"target": "doc:s", "savedAt": 1}));
    let succ = row("s", json!({"target": "doc:s", "successorOf": "p"}));
    assert_eq!(next_due(&[held, blocked, intent, pred, succ], None), None);
    // A row due at once by the network's return does not count either.
    let net = deferred("n", Some("NETWORK"), Some(NOW.0 - 5_000));
    assert_eq!(next_due(std::slice::from_ref(&net), Some(BACK)), None);
    assert_eq!(next_due(&[net], None), Some(Millis(NOW.0 + 60_000)));
}

#[test]
fn s8_the_report_gives_next_due_at_of_the_last_read_even_past_the_deadline() {
    let mut w = World::new(2);
    let id = w.enqueue(0, update("alice", "doc:1", json!({"a": 1}))).row.unwrap().id;
    // Tab 1 claims the row and keeps it on the wire.
    w.start_flush(1, "alice");
    while w.find(1, is_send).is_none() {
        w.step(1, 0, &mut |s, op| s.handle(op));
    }
    let end = w.row(&id).unwrap().claim.unwrap().expires_at;
    w.start_flush_with(0, "alice", |o| o.deadline = Some(Millis(T0)));
    let r = w.drain(0, &mut |s, op| s.handle(op));
    assert_eq!((r.claimed, r.next_due_at), (0, Some(end.0)));
}

// ---- property ---------------------------------------------------------------------------

fn arb_row(i: usize) -> impl Strategy<Value = Value> {
    (
        0..4u8,                     // state
        prop::option::of(-3i64..4), // nextAttemptAt, in s
        prop::option::of(prop::sample::select(vec!["NETWORK", "TIMEOUT", "HTTP_503"])),
        prop::option::of(-3i64..2),           // deferredAt, in s
        prop::option::of((0..3u8, -2i64..3)), // claim: tab, end in s
        prop::option::of(0..6usize),          // successorOf
    )
        .prop_map(move |(state, next, code, deferred, claim, succ)| {
            let state = ["queued", "sending", "held", "blocked"][state as usize];
            let mut v = json!({"id": format!("r{i}"), "owner": "alice", "target": format!("doc:{}", i % 3),
                               "kind": "update", "body": {}, "savedAt": i, "state": state,
                               "sentAt": NOW.0 - 3_000, "evidence": {"attemptCount": 1}});
            if let Some(n) = next {
                v["nextAttemptAt"] = json!(NOW.0 + n * 1_000);
            }
            if let Some(c) = code {
                v["evidence"]["lastErrorCode"] = json!(c);
            }
            if let Some(d) = deferred {
                v["deferredAt"] = json!(NOW.0 + d * 1_000);
            }
            if let Some((t, end)) = claim {
                v["claim"] = json!({"tabId": format!("tab-{}", ["a", "b", "c"][t as usize]),
                                    "expiresAt": NOW.0 + end * 1_000, "fence": 1});
                v["writer"] = json!({"bundle": "test", "at": NOW.0 - 3_000});
            }
            if let Some(p) = succ.filter(|p| *p != i) {
                v["successorOf"] = json!(format!("r{p}"));
            }
            v
        })
}

fn arb_rows() -> impl Strategy<Value = Vec<Value>> {
    (0..6usize).prop_flat_map(|n| (0..n).map(arb_row).collect::<Vec<_>>())
}

proptest! {
    /// §8: with no write in between, nothing that is not sendable now becomes sendable
    /// before `nextDueAt` (none at all when it is null), which is after now; §10: the
    /// network's return only adds rows, exactly the queued network-deferred ones.
    #[test]
    fn prop_nothing_becomes_sendable_before_next_due_at(
        rows in arb_rows(), back in prop::option::of(-3i64..2), later in 1i64..5_000,
    ) {
        let stored: Vec<Stored> = rows.iter().map(Stored::from_value).collect();
        let back = back.map(|b| Millis(NOW.0 + b * 1_000));
        let sel = select(&stored, "tab-a", NOW, 2_000, back);
        let ids = |s: &[&outbox_core::Row]| s.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        let now_ids = ids(&sel.sendable);
        if let Some(due) = sel.next_due_at {
            prop_assert!(due > NOW);
        }
        let t = Millis(NOW.0 + later);
        if sel.next_due_at.is_none_or(|due| t < due) {
            let then = ids(&select(&stored, "tab-a", t, 2_000, back).sendable);
            for id in &then {
                prop_assert!(now_ids.contains(id), "{id} became sendable at {t} before {:?}", sel.next_due_at);
            }
        }
        let without = ids(&select(&stored, "tab-a", NOW, 2_000, None).sendable);
        for id in &without {
            prop_assert!(now_ids.contains(id), "onlineSince took {id} away");
        }
        for id in now_ids.iter().filter(|id| !without.contains(id)) {
            let r = stored.iter().filter_map(Stored::row).find(|r| &r.id == id).unwrap();
            let code = r.evidence.as_ref().and_then(|e| e.last_error_code.as_deref());
            prop_assert!(r.state == outbox_core::RowState::Queued);
            prop_assert!(code.is_some_and(|c| NETWORK_CODES.contains(&c)));
            prop_assert!(r.deferred_at.is_some_and(|d| Some(d) < back));
        }
    }
}
