//! Values as stored and sent: opaque revisions (§3, §9), integers stored as floats (§3,
//! §5), error codes (§6) and non-object bodies (§3, §7).

mod sim;

use outbox_core::ack::{plan_ack, AckDecision, AckDraws};
use outbox_core::claim::{plan_claim, ClaimSkip};
use outbox_core::classify::classify_http;
use outbox_core::codec::{decode, DecodeError};
use outbox_core::fingerprint::fingerprint;
use outbox_core::input::{InputError, NewOperation};
use outbox_core::retry::Backoff;
use outbox_core::{Kind, Millis, Outcome, RowState, SendOp, Tab, Ticket};
use serde_json::{json, Value};
use sim::*;

const A: usize = 0;
const NOW: Millis = Millis(1_000_000);

/// A row claimed by `tab-a` with fence 2, third attempt, last failure `HTTP_500`.
fn claimed_row() -> Value {
    json!({"id": "r1", "owner": "alice", "target": "doc:1", "kind": "update", "body": {"w": 1},
           "revision": 4, "savedAt": 10, "state": "sending", "sentAt": 999_000,
           "claim": {"tabId": "tab-a", "expiresAt": 1_009_000, "fence": 2},
           "evidence": {"attemptCount": 3, "lastAttemptAt": 999_000, "lastErrorCode": "HTTP_500"},
           "writer": {"bundle": "outbox-core@test", "at": 999_000}})
}

fn ticket() -> Ticket {
    Ticket { tab_id: "tab-a".into(), fence: 2 }
}

fn draws() -> AckDraws {
    AckDraws { random: 0.5, new_id: "succ-1".into() }
}

fn ack(rows: &[Value], outcome: Outcome) -> AckDecision {
    plan_ack("alice", "r1", rows, &ticket(), &outcome, NOW, &Backoff::default(), &draws())
}

/// Drains tab A, recording every request sent; `answer` decides each answer.
fn drain_recording(w: &mut World, mut answer: impl FnMut(&mut Server, &SendOp) -> Outcome) -> Vec<SendOp> {
    let mut sent = Vec::new();
    w.start_flush(A, "alice");
    w.drain(A, &mut |s, op| {
        sent.push(op.clone());
        answer(s, op)
    });
    sent
}

// ---------------------------------------------------------------------------------------
// Item 4: revisions are opaque JSON scalars, end to end.

#[test]
fn s3_a_string_revision_is_stored_fingerprinted_and_sent_as_the_same_value() {
    let mut w = World::new(1);
    let op = json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"t": "x"}, "revision": "7"});
    let row = w.enqueue(A, op).row.unwrap();
    let fp = fingerprint(Kind::Update, "doc:1", &json!({"t": "x"}), Some(&json!("7")));
    assert_eq!(row.revision, Some(json!("7")));
    assert_eq!(row.fingerprint, fp);
    let raw = w.raw(&row.id).unwrap();
    assert_eq!(raw["revision"], json!("7"));
    assert_eq!(decode(&raw).unwrap().revision, Some(json!("7")), "read back as the same value");
    let sent = drain_recording(&mut w, |_, _| Outcome::success(json!({})));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].revision, json!("7"), "sent as stored, not as null");
    assert_eq!(sent[0].fingerprint, fp);
}

#[test]
fn s3_enqueue_accepts_number_string_or_null_revisions_and_refuses_other_types() {
    let op = |rev: Value| json!({"owner": "a", "kind": "update", "target": "t", "body": {}, "revision": rev});
    let rev_of = |v: Value| NewOperation::from_json(&op(v)).map(|o| o.revision);
    assert_eq!(rev_of(json!(3)), Ok(Some(json!(3))));
    assert_eq!(rev_of(json!(2.5)), Ok(Some(json!(2.5))));
    assert_eq!(rev_of(json!("W/\"etag\"")), Ok(Some(json!("W/\"etag\""))));
    assert_eq!(rev_of(json!("")), Ok(Some(json!(""))));
    assert_eq!(rev_of(Value::Null), Ok(None), "null means no revision");
    for bad in [json!({"v": 1}), json!([1]), json!(true), json!(false)] {
        let err = rev_of(bad.clone()).unwrap_err();
        assert_eq!(err, InputError::BadRevision, "{bad}");
        assert!(err.to_string().contains("number or a string"), "{err}");
    }
}

#[test]
fn s3_a_stored_revision_of_another_type_makes_the_row_undecodable() {
    // Treating it as absent would send the row without its base revision: a blind write.
    for bad in [json!({"v": 1}), json!([1]), json!(true)] {
        let mut raw = claimed_row();
        raw["revision"] = bad.clone();
        assert_eq!(decode(&raw), Err(DecodeError::WrongType("revision")), "{bad}");
    }
    let mut raw = claimed_row();
    raw["revision"] = Value::Null;
    assert_eq!(decode(&raw).unwrap().revision, None, "null is no revision");
}

#[test]
fn s9_a_string_actual_revision_is_stored_fingerprinted_and_sent_by_the_successor() {
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    let op = json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"t": 1}, "revision": 1});
    let original = w.enqueue(A, op).row.unwrap();
    let mut first = true;
    let sent = drain_recording(&mut w, |_, _| {
        if std::mem::take(&mut first) {
            Outcome::Conflict { actual_revision: json!("7") }
        } else {
            Outcome::success(json!({}))
        }
    });
    assert_eq!(sent.len(), 2, "the original, then its conflict successor");
    let succ = &sent[1];
    assert_ne!(succ.id, original.id);
    assert_eq!(succ.revision, json!("7"));
    assert_eq!(succ.fingerprint, fingerprint(Kind::Update, "doc:1", &json!({"t": 1}), Some(&json!("7"))));
}

#[test]
fn s9_a_conflict_without_an_actual_revision_blocks_the_row_revision_unknown() {
    let rows = [claimed_row()];
    for actual in [Value::Null, json!({"v": 1}), json!([3]), json!(true)] {
        let AckDecision::Apply { plan, successor } = ack(&rows, Outcome::Conflict { actual_revision: actual.clone() })
        else {
            panic!("the claim is mine: the answer applies");
        };
        assert!(successor.is_none(), "{actual}: no successor may be sent without a base revision");
        assert!(plan.deletes.is_empty(), "{actual}: the original is kept");
        assert_eq!(plan.puts.len(), 1);
        let put = &plan.puts[0];
        assert_eq!(put["id"], "r1");
        assert_eq!(put["state"], "blocked");
        assert_eq!(put["blockedCode"], "REVISION_UNKNOWN");
        assert_eq!(put["blockedAt"], NOW.0);
        assert_eq!(put["revision"], 4, "its own base revision is kept");
        assert_eq!(put["claim"]["expiresAt"], NOW.0, "claim expired");
        assert_eq!(put["claim"]["fence"], 2, "fence kept");
        assert!(put.get("sentAt").is_none());
    }
}

#[test]
fn s10_a_412_revision_conflict_without_actual_revision_is_permanent_revision_unknown() {
    let c = |body: Value| classify_http(412, &[], &body, Millis(0));
    let unknown = Outcome::Permanent { code: "REVISION_UNKNOWN".into() };
    assert_eq!(c(json!({"code": "REVISION_CONFLICT"})), unknown);
    // A 412 that is not the gate's revision conflict is just another 4xx (§10).
    assert_eq!(c(json!({"actualRevision": 3})), Outcome::Permanent { code: "HTTP_412".into() });
    assert_eq!(c(json!({"code": "REVISION_CONFLICT", "actualRevision": null})), unknown);
    assert_eq!(c(json!({"code": "REVISION_CONFLICT", "actualRevision": {"v": 1}})), unknown);
    assert_eq!(
        c(json!({"code": "REVISION_CONFLICT", "actualRevision": "7"})),
        Outcome::Conflict { actual_revision: json!("7") }
    );
    assert_eq!(
        c(json!({"code": "REVISION_CONFLICT", "actualRevision": 0})),
        Outcome::Conflict { actual_revision: json!(0) }
    );
}

#[test]
fn s7_a_prepared_request_whose_revision_is_not_a_revision_is_not_usable() {
    use outbox_core::intent::{plan_convert, IntentSkip, Prepared};
    let prepared = |revision: Option<Value>| Prepared { target: "rec:1".into(), body: json!({}), revision };
    for ok in [None, Some(Value::Null), Some(json!(2)), Some(json!("etag"))] {
        assert!(prepared(ok.clone()).is_valid(), "{ok:?}");
    }
    let intent = json!({"id": "i", "owner": "alice", "target": "pending:c", "kind": "update", "body": {},
                        "savedAt": 1, "state": "queued", "successorOf": "c"});
    for bad in [json!({"v": 1}), json!([2]), json!(true)] {
        let p = prepared(Some(bad.clone()));
        assert!(!p.is_valid(), "{bad}");
        assert_eq!(plan_convert(&intent, None, std::slice::from_ref(&intent), &p), Err(IntentSkip::Unusable));
    }
    let converted = plan_convert(&intent, None, std::slice::from_ref(&intent), &prepared(Some(json!("e1")))).unwrap();
    assert_eq!(converted.puts[0]["revision"], "e1");
}

// ---------------------------------------------------------------------------------------
// Item 5: the error code of the latest answer, not of an older one.

#[test]
fn s6_a_transient_answer_without_a_code_clears_the_previous_error_code() {
    let rows = [claimed_row()];
    let AckDecision::Apply { plan, .. } = ack(&rows, Outcome::Transient { code: None, retry_after_ms: None }) else {
        panic!("mine");
    };
    let ev = &plan.puts[0]["evidence"];
    assert!(ev.get("lastErrorCode").is_none(), "stale code kept: {ev}");
    assert_eq!(ev["attemptCount"], 3);
    let AckDecision::Apply { plan, .. } = ack(&rows, Outcome::transient("HTTP_503")) else { panic!("mine") };
    assert_eq!(plan.puts[0]["evidence"]["lastErrorCode"], "HTTP_503");
    // A code stored in a shape this version does not read is cleared too.
    let mut odd = claimed_row();
    odd["evidence"]["lastErrorCode"] = json!(500);
    let AckDecision::Apply { plan, .. } = ack(&[odd], Outcome::Transient { code: None, retry_after_ms: None }) else {
        panic!("mine");
    };
    assert!(plan.puts[0]["evidence"].get("lastErrorCode").is_none());
}

// ---------------------------------------------------------------------------------------
// Item 6: integers stored as floats.

#[test]
fn s3_integers_stored_as_floats_read_as_the_same_integers() {
    let mut raw = claimed_row();
    raw["savedAt"] = json!(1.0);
    raw["claim"] = json!({"tabId": "tab-b", "expiresAt": 5.0e3, "fence": 2.0});
    raw["evidence"] = json!({"attemptCount": 3.0, "lastAttemptAt": 4.0e3});
    raw["writer"] = json!({"bundle": "old", "at": 4.0e3});
    raw["sentAt"] = json!(4.0e3);
    let row = decode(&raw).unwrap();
    assert_eq!(row.saved_at, Millis(1));
    let claim = row.claim.as_ref().unwrap();
    assert_eq!((claim.fence, claim.expires_at), (2, Millis(5_000)));
    let ev = row.evidence.as_ref().unwrap();
    assert_eq!((ev.attempt_count, ev.last_attempt_at), (3, Some(Millis(4_000))));
    let cp = plan_claim("alice", Some(&raw), None, &Tab::new("tab-a"), NOW, None).unwrap();
    assert_eq!(cp.ticket.fence, 3, "the fence only grows");
    assert_eq!(cp.plan.puts[0]["claim"]["fence"], 3);
    assert_eq!(cp.plan.puts[0]["evidence"]["attemptCount"], 4);
}

#[test]
fn s5_a_fence_or_attempt_count_that_cannot_be_read_makes_the_row_undecodable() {
    // Read as absent, the fence would restart at 1 and an old answer could match a new
    // claim (§6); an unreadable attempt history would make a sent row look never attempted.
    let cases = [
        (json!({"tabId": "t", "expiresAt": 1, "fence": 2.5}), "claim"),
        (json!({"tabId": "t", "expiresAt": 1, "fence": -1}), "claim"),
        (json!({"tabId": "t", "expiresAt": 1, "fence": 1e20}), "claim"),
        (json!({"tabId": "t", "expiresAt": 1e300, "fence": 2}), "claim"),
        (json!({"tabId": "t", "expiresAt": 1, "fence": "2"}), "claim"),
        (json!({"tabId": "t", "expiresAt": 1}), "claim"),
        (json!({"tabId": "t", "fence": 2}), "claim"),
        (json!({"expiresAt": 1, "fence": 2}), "claim"),
        (json!("tab-a"), "claim"),
        (json!([1]), "claim"),
    ];
    for (claim, field) in cases {
        let mut raw = claimed_row();
        raw["claim"] = claim.clone();
        assert_eq!(decode(&raw), Err(DecodeError::WrongType(field)), "{claim}");
        let skip = plan_claim("alice", Some(&raw), None, &Tab::new("tab-a"), NOW, None).unwrap_err();
        assert!(matches!(skip, ClaimSkip::Undecodable(_)), "{claim}: never claimed");
    }
    for evidence in [json!({"attemptCount": 1.5}), json!({"attemptCount": -3}), json!({"attemptCount": "3"}), json!(7)]
    {
        let mut raw = claimed_row();
        raw["evidence"] = evidence.clone();
        assert_eq!(decode(&raw), Err(DecodeError::WrongType("evidence")), "{evidence}");
    }
    // `null` is absent, as for every optional field.
    let mut raw = claimed_row();
    raw["claim"] = Value::Null;
    raw["evidence"] = Value::Null;
    let row = decode(&raw).unwrap();
    assert!(row.claim.is_none() && row.evidence.is_none());
}

#[test]
fn s3_times_stored_as_floats_are_read_and_out_of_range_ones_are_not() {
    assert_eq!(Millis::from_json(&json!(5.0e3)), Some(Millis(5_000)));
    assert_eq!(Millis::from_json(&json!(-2.0)), Some(Millis(-2)));
    assert_eq!(Millis::from_json(&json!(1e300)), None);
    assert_eq!(Millis::from_json(&json!("5")), None);
    let mut raw = claimed_row();
    raw["savedAt"] = json!(1e300);
    assert_eq!(decode(&raw), Err(DecodeError::WrongType("savedAt")));
}

// ---------------------------------------------------------------------------------------
// Item 7: any JSON body; non-object bodies are never merged.

#[test]
fn s3_create_and_update_accept_any_json_body_but_not_a_missing_one() {
    for body in [json!([{"op": "replace", "path": "/a", "value": 1}]), json!("text"), json!(3), json!(true), json!({})]
    {
        for kind in ["create", "update"] {
            let op = json!({"owner": "a", "kind": kind, "target": "t", "body": body});
            assert_eq!(NewOperation::from_json(&op).map(|o| o.body), Ok(body.clone()), "{kind} {body}");
        }
    }
    for kind in ["create", "update"] {
        let missing = json!({"owner": "a", "kind": kind, "target": "t"});
        let null = json!({"owner": "a", "kind": kind, "target": "t", "body": null});
        for op in [missing, null] {
            let err = NewOperation::from_json(&op).unwrap_err();
            assert!(err.to_string().contains("body"), "{op}: {err}");
        }
    }
}

fn patch(path: &str, value: i64) -> Value {
    json!([{"op": "replace", "path": path, "value": value}])
}

#[test]
fn s7_a_patch_update_over_a_queued_patch_update_is_chained_not_merged() {
    let mut w = World::new(1);
    w.server.seed_record("doc:1", 1);
    let u1 = w.enqueue(A, update("alice", "doc:1", patch("/a", 1))).row.unwrap();
    let p = w.enqueue(A, update("alice", "doc:1", patch("/b", 2)));
    assert!(p.absorbed.is_empty(), "nothing is lost: the earlier patch stays");
    let u2 = p.row.unwrap();
    assert_eq!(u2.body, patch("/b", 2));
    assert_eq!(u2.successor_of.as_deref(), Some(u1.id.as_str()), "sent after it");
    assert_eq!(w.store.len(), 2);
    let sent = drain_recording(&mut w, truthful);
    let order: Vec<(&str, Value)> = sent.iter().map(|s| (s.id.as_str(), s.body.clone())).collect();
    assert_eq!(order, vec![(u1.id.as_str(), patch("/a", 1)), (u2.id.as_str(), patch("/b", 2))]);
    assert!(w.store.is_empty());
}

#[test]
fn s7_object_and_non_object_updates_never_merge_either_way() {
    let mut w = World::new(1);
    let u1 = w.enqueue(A, update("alice", "doc:1", json!({"a": 1}))).row.unwrap();
    let u2 = w.enqueue(A, update("alice", "doc:1", json!("whole new value"))).row.unwrap();
    assert_eq!(u2.successor_of.as_deref(), Some(u1.id.as_str()));
    assert_eq!(u2.body, json!("whole new value"));
    let u3 = w.enqueue(A, update("alice", "doc:1", json!({"b": 2}))).row.unwrap();
    assert_eq!(u3.successor_of.as_deref(), Some(u2.id.as_str()));
    assert_eq!(u3.body, json!({"b": 2}), "nothing merged from a non-object body");
    // Object updates after the last non-object one still coalesce among themselves.
    let p = w.enqueue(A, update("alice", "doc:1", json!({"c": 3})));
    assert_eq!(p.absorbed, vec![u3.id.clone()]);
    let u4 = p.row.unwrap();
    assert_eq!(u4.body, json!({"b": 2, "c": 3}));
    assert_eq!(u4.successor_of.as_deref(), Some(u2.id.as_str()));
    assert_eq!(w.store.len(), 3);
    // A delete still replaces everything not in flight.
    let p = w.enqueue(A, delete("alice", "doc:1"));
    assert_eq!(p.absorbed.len(), 3);
    assert!(p.row.unwrap().successor_of.is_none());
    assert_eq!(w.store.len(), 1);
}

#[test]
fn s7_a_patch_of_an_unsent_create_is_an_intent_not_merged_into_the_create() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"name": "n"}))).row.unwrap();
    let i1 = w.enqueue(A, update("alice", &c.target, patch("/a", 1))).row.unwrap();
    assert_eq!(w.row(&c.id).unwrap().body, json!({"name": "n"}), "the create is sent as created");
    assert!(i1.is_intent());
    assert_eq!(i1.successor_of.as_deref(), Some(c.id.as_str()));
    let i2 = w.enqueue(A, update("alice", &c.target, patch("/b", 2))).row.unwrap();
    assert!(i2.is_intent());
    assert_eq!(i2.successor_of.as_deref(), Some(i1.id.as_str()), "chained behind the first patch");
    // An object edit cannot be merged into the create past the patches either.
    let i3 = w.enqueue(A, update("alice", &c.target, json!({"x": 1}))).row.unwrap();
    assert_eq!(i3.successor_of.as_deref(), Some(i2.id.as_str()));
    assert_eq!(w.row(&c.id).unwrap().body, json!({"name": "n"}));

    let sent = drain_recording(&mut w, truthful);
    // The fake app prepares every intent on the create's receipt revision, so the later ones
    // meet a §9 conflict and go again under a new id: compare what the server applied.
    let applied: Vec<(String, Value)> = w
        .server
        .applied
        .iter()
        .map(|id| sent.iter().find(|s| &s.id == id).map(|s| (s.target.clone(), s.body.clone())).unwrap())
        .collect();
    let expected = [json!({"name": "n"}), patch("/a", 1), patch("/b", 2), json!({"x": 1})];
    assert_eq!(applied.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(), expected);
    assert!(applied[1..].iter().all(|(t, _)| t == "rec:1"), "converted onto the server id");
    assert!(w.store.is_empty());
}

#[test]
fn s7_a_non_object_create_body_is_never_merged_and_a_delete_still_cancels() {
    let mut w = World::new(1);
    let op = json!({"owner": "alice", "target": "list:1", "kind": "create", "body": [1, 2]});
    let c = w.enqueue(A, op).row.unwrap();
    let u = w.enqueue(A, update("alice", "list:1", json!({"x": 1}))).row.unwrap();
    assert_ne!(u.id, c.id);
    assert_eq!(u.successor_of.as_deref(), Some(c.id.as_str()), "an ordinary successor of the create");
    assert!(!u.is_intent());
    assert_eq!(w.row(&c.id).unwrap().body, json!([1, 2]));
    let p = w.enqueue(A, delete("alice", "list:1"));
    assert!(p.row.is_none(), "never sent: the delete cancels the create and its edits");
    assert!(w.store.is_empty());
}

#[test]
fn s7_object_edits_of_an_unsent_create_still_merge() {
    let mut w = World::new(1);
    let c = w.enqueue(A, create("alice", json!({"a": 1}))).row.unwrap();
    let m = w.enqueue(A, update("alice", &c.target, json!({"b": 2}))).row.unwrap();
    assert_eq!((m.id.as_str(), m.body.clone()), (c.id.as_str(), json!({"a": 1, "b": 2})));
    assert_eq!(m.state, RowState::Queued);
}

#[test]
fn s7_chained_intents_are_converted_after_the_intent_they_wait_for() {
    use outbox_core::ack::pending_intents;
    let intent = |id: &str, saved: i64, after: &str, state: &str| {
        json!({"id": id, "owner": "alice", "target": "pending:c", "kind": "update", "body": [id],
               "savedAt": saved, "state": state, "successorOf": after})
    };
    let create = json!({"id": "c", "owner": "alice", "target": "pending:c", "kind": "create", "body": {},
                        "savedAt": 1, "state": "sending"});
    let rows = [
        create.clone(),
        // "i1" was converted in an earlier pass: it left the pending scope, "z" still waits behind it.
        intent("z", 5, "i1", "queued"),
        intent("a", 5, "z", "queued"), // same savedAt, smaller id, but behind "z"
        intent("blk", 6, "a", "blocked"),
        intent("after-blk", 7, "blk", "queued"),
        intent("first", 2, "c", "queued"),
        json!({"id": "bob-i", "owner": "bob", "target": "pending:c", "kind": "update", "body": {},
               "savedAt": 0, "state": "queued", "successorOf": "c"}),
    ];
    let ids: Vec<String> = pending_intents(&decode(&create).unwrap(), &rows).into_iter().map(|(r, _)| r.id).collect();
    assert_eq!(ids, ["first", "z", "a", "after-blk"]);
}

#[test]
fn s3_decode_errors_say_which_field_and_why() {
    // `undecodable()` shows these messages to people (§3 rule 3).
    let cases = [
        (DecodeError::NotAnObject, "row is not an object"),
        (DecodeError::MissingField("body"), "field `body` is missing"),
        (DecodeError::WrongType("claim"), "field `claim` has the wrong type"),
        (DecodeError::UnknownKind("upsert".into()), "unknown kind `upsert`"),
        (DecodeError::UnknownState("paused".into()), "unknown state `paused`"),
    ];
    for (e, msg) in cases {
        assert_eq!(e.to_string(), msg);
    }
}
