//! §7/§8 chains of intents (edits of a record whose create has no receipt yet) keep their
//! order through the failure paths: a link that stays an intent (its conversion failed, or
//! it is an orphan still being looked up) holds the links after it, which are converted
//! after it, also when the user re-issues it with retryBlocked.

mod sim;

use outbox_core::{Request, RowState, Scope};
use serde_json::json;
use sim::*;

const A: usize = 0;

/// Drains `tab`, answering sends truly, but `prepareSuccessor` throws for intents in `fail`.
fn drain_failing_prepare(w: &mut World, tab: usize, fail: &[String]) {
    use outbox_core::Request;
    while w.flushing(tab) {
        if let Some(idx) = w.find(tab, |r| matches!(r, Request::Prepare { intent, .. } if fail.contains(&intent.id))) {
            let Request::Prepare { token, .. } = w.tabs[tab].inbox.remove(idx) else { unreachable!() };
            w.with_flush(tab, |f, out| f.handle_prepared(token, Err("port threw".into()), out));
            w.collect(tab);
        } else if !w.tabs[tab].inbox.is_empty() {
            w.step(tab, 0, &mut truthful);
        } else if !w.tabs[tab].air.is_empty() {
            w.deliver(tab, 0);
        } else {
            panic!("stuck");
        }
    }
}

fn retry_blocked(w: &mut World, id: &str, target: &str, new_id: &str) {
    use outbox_core::{ReplaceOutcome, Scope};
    let scope = w.store.read(&[Scope::target("alice", target)]);
    let plan = outbox_core::admin::plan_retry_blocked("alice", id, None, &scope, new_id).expect("blocked row");
    assert_eq!(w.store.replace(&plan), ReplaceOutcome::Committed);
}

/// A noMerge chain of intents N1, N2; N1 fails to convert (its port threw) and is blocked.
/// N2 stays an intent behind it (once converted into the record's scope, a retry of N1,
/// re-issued in the `pending:` scope under a new id, could not re-point it, and N2 went
/// first). After retryBlocked(N1), command 1 reaches the server before command 2.
#[test]
fn s7_a_command_after_a_blocked_command_intent_waits_for_it_and_for_its_retry() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"n": 0}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful); // C reaches the server; answer in the air
    let cmd =
        |n: i64| json!({"owner": "alice", "target": c.target, "kind": "update", "body": {"op": n}, "merge": false});
    let n1 = w.enqueue(A, cmd(1)).row.unwrap();
    let n2 = w.enqueue(A, cmd(2)).row.unwrap();
    assert_eq!(n2.successor_of.as_deref(), Some(n1.id.as_str()));
    w.deliver(A, 0);
    drain_failing_prepare(&mut w, A, std::slice::from_ref(&n1.id));
    assert!(w.row(&c.id).is_none(), "create acked");
    assert_eq!(w.row(&n1.id).unwrap().state, RowState::Blocked);
    let n2_row = w.row(&n2.id).unwrap();
    assert_eq!(n2_row.successor_of.as_deref(), Some(n1.id.as_str()), "N2 waits for the blocked command N1");
    assert!(n2_row.is_intent(), "and is converted after it");
    assert_eq!(w.server.times_applied(&n2.id), 0);
    // The user retries N1.
    retry_blocked(&mut w, &n1.id, &c.target, "n1-again");
    w.flush(A, "alice");
    w.flush(A, "alice");
    // applied[0] is the create; the next effect must be command 1 (n1-again or its
    // conflict successor), not command 2.
    assert_eq!(w.server.applied.len(), 3, "{:?}", w.server.applied);
    assert_ne!(w.server.applied[1], n2.id, "command 2 reached the server before command 1: {:?}", w.server.applied);
}

/// Edit I0, then commands N1, N2 of a record whose create is in flight. On the receipt I0
/// is converted; N1's conversion fails (its port threw) and N1 is blocked; N2 is not
/// converted past it (it once was, behind I0', and went out while N1 was blocked), and the
/// create's answer is applied all the same.
#[test]
fn s7_a_blocked_command_intent_holds_the_commands_after_it() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"n": 0}))).row.unwrap();
    w.start_flush(A, "alice");
    run_until_sent(&mut w, A, &mut truthful);
    let i0 = w.enqueue(A, update("alice", &c.target, json!({"title": "x"}))).row.unwrap();
    let cmd =
        |n: i64| json!({"owner": "alice", "target": c.target, "kind": "update", "body": {"op": n}, "merge": false});
    let n1 = w.enqueue(A, cmd(1)).row.unwrap();
    let n2 = w.enqueue(A, cmd(2)).row.unwrap();
    assert_eq!(n1.successor_of.as_deref(), Some(i0.id.as_str()));
    assert_eq!(n2.successor_of.as_deref(), Some(n1.id.as_str()));
    w.deliver(A, 0);
    drain_failing_prepare(&mut w, A, std::slice::from_ref(&n1.id));
    w.flush(A, "alice");
    assert_eq!(w.row(&n1.id).unwrap().state, RowState::Blocked, "N1 blocked SUCCESSOR_UNPREPARED");
    // Only the create and I0 may have reached the server; "c0-1" is N2's conflict successor.
    assert_eq!(
        w.server.applied,
        vec![c.id.clone(), i0.id.clone()],
        "command N2 (or its conflict successor) applied while command N1 before it is blocked"
    );
}

/// A vanished create (an older tab deleted it without converting); two chained intents I1,
/// I2 (JSON Patch bodies cannot be merged, so I2 waits behind I1) and an edit Y already made
/// with the server id. The orphan lookups are port calls answered in any order: when I2's
/// come first, I2 is not converted past I1, which is still an intent (it once was, behind
/// Y, and I1 then behind it); it is converted after I1, and the patches go out in order.
#[test]
fn s7_orphan_intents_of_one_chain_are_converted_in_its_order() {
    use outbox_core::Request;
    let mut w = World::new(1);
    applied_create(&mut w.server, "gone"); // server id rec:1
    w.server.seed_record("rec:1", 1);
    let now = w.tabs[A].now.0;
    let patch = |n: i64| json!([{"op": "add", "path": "/log/-", "value": n}]);
    w.store.seed(json!({"id": "i1", "owner": "alice", "target": "pending:gone", "kind": "update",
                        "body": patch(1), "savedAt": now, "state": "queued", "successorOf": "gone"}));
    w.store.seed(json!({"id": "i2", "owner": "alice", "target": "pending:gone", "kind": "update",
                        "body": patch(2), "savedAt": now + 1, "state": "queued", "successorOf": "i1"}));
    w.store.seed(json!({"id": "y", "owner": "alice", "target": "rec:1", "kind": "update",
                        "body": {"title": "t"}, "savedAt": now + 2, "state": "queued"}));
    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // read the queue: y is a candidate, i1 and i2 are orphans
                                 // The driver answers i2's port calls before i1's (they are network calls).
                                 // Find the two FindReceipt requests; do the second (i2's) first.
    let finds: Vec<usize> =
        (0..w.tabs[A].inbox.len()).filter(|&i| matches!(w.tabs[A].inbox[i], Request::FindReceipt { .. })).collect();
    assert_eq!(finds.len(), 2, "{:?}", w.tabs[A].inbox);
    // Hold the claim/sends back: handle only i2's path until its write is done.
    w.step(A, finds[1], &mut truthful); // i2's find
    let p = w.find(A, |r| matches!(r, Request::Prepare { intent, .. } if intent.id == "i2")).unwrap();
    w.step(A, p, &mut truthful);
    let wr = w.tabs[A].inbox.iter().rposition(|r| matches!(r, Request::Write { .. })).unwrap();
    w.step(A, wr, &mut truthful); // i2 converted
    w.drain(A, &mut truthful);
    w.flush(A, "alice");
    w.flush(A, "alice");
    // Both patches conflict once on the receipt's revision and go out again as conflict
    // successors ("c0-*"); the first request of each tells the order they were sent in.
    let pos = |id: &str| w.server.received.iter().position(|(a, _, _)| a == id);
    assert!(pos("i1").is_some() && pos("i2").is_some(), "{:?}", w.server.received);
    assert!(pos("i1") < pos("i2"), "patch 1 must reach the server before patch 2: {:?}", w.server.received);
}

/// Two chained orphan intents are looked up together; when the second one's lookup and
/// preparation answer first, its conversion waits for the first (§7). Once the first is
/// converted, the second is tried again in the same flush (§8: a flush drains).
#[test]
fn s8_an_orphan_intent_refused_while_the_one_it_waits_for_converts_is_converted_in_the_same_flush() {
    let mut w = World::new(1);
    applied_create(&mut w.server, "c"); // the create went through (an older tab), its row is gone
    let mut i1 = orphan_intent("i1", "c", T0);
    i1["body"] = json!([{"op": "replace", "path": "/w", "value": 1}]); // cannot be absorbed
    let mut i2 = orphan_intent("i2", "c", T0 + 1);
    i2["successorOf"] = json!("i1");
    w.store.seed(i1);
    w.store.seed(i2);

    w.start_flush(A, "alice");
    w.step(A, 0, &mut truthful); // the read: two orphan lookups
    let finds: Vec<usize> =
        (0..w.tabs[A].inbox.len()).filter(|&i| matches!(w.tabs[A].inbox[i], Request::FindReceipt { .. })).collect();
    assert_eq!(finds.len(), 2);
    // i2's lookup and preparation answer first (the app's ports run concurrently).
    w.step(A, finds[1], &mut truthful);
    let p2 = w.find(A, |r| matches!(r, Request::Prepare { intent, .. } if intent.id == "i2")).unwrap();
    w.step(A, p2, &mut truthful);
    let w2 =
        w.find(A, |r| matches!(r, Request::Write { scopes, .. } if scopes.contains(&Scope::Id("i2".into())))).unwrap();
    w.step(A, w2, &mut truthful); // refused: i1 is still an intent
    assert!(w.row("i2").unwrap().is_intent());
    let rep = w.drain(A, &mut truthful);

    assert_eq!(rep.converted, 2, "{rep:?}");
    let sent: Vec<&str> =
        w.server.received.iter().map(|(id, _, _)| id.as_str()).filter(|id| id.starts_with('i')).collect();
    assert_eq!(sent, ["i1", "i2"], "both sent, in their order, in this flush");
    assert!(w.row("i2").is_none_or(|r| !r.is_intent()), "i2 is no intent any more");
}
