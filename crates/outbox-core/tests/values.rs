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
use outbox_core::{Kind, Millis, Outcome, SendOp, Tab, Ticket};
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
    plan_ack("r1", rows, &ticket(), &outcome, NOW, &Backoff::default(), &draws())
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
    let cp = plan_claim("alice", Some(&raw), None, &Tab::new("tab-a"), NOW).unwrap();
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
        let skip = plan_claim("alice", Some(&raw), None, &Tab::new("tab-a"), NOW).unwrap_err();
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
