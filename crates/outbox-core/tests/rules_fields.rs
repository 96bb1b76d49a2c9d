//! Field by field: what an answer (§6) and a re-issue (§7) write into the stored row, for
//! the assignments no other test pinned. Each test reads the encoded put as the store
//! would keep it, so a field left over or not written shows up as a key of the JSON.

use outbox_core::ack::{plan_ack, AckDecision, AckDraws};
use outbox_core::admin::plan_retry_blocked;
use outbox_core::enqueue::plan_enqueue;
use outbox_core::fingerprint::fingerprint;
use outbox_core::input::NewOperation;
use outbox_core::memstore::MemStore;
use outbox_core::retry::Backoff;
use outbox_core::select::select_sendable;
use outbox_core::{decode, Kind, Millis, Outcome, ReplaceOutcome, ReplacePlan, RowState, Scope, Stored, Tab, Ticket};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);
const TICKET_FENCE: u64 = 3;

/// A row `tab-a` claimed (fence 3) and is sending: claimed at `NOW - 100`, a transient
/// answer before (deferredAt, lastErrorCode), an auth answer before that (heldAt), all
/// from earlier attempts. `extra` overrides or adds fields.
fn sending(extra: Value) -> Value {
    let mut v = json!({
        "id": "r", "owner": "alice", "target": "doc:1", "kind": "update", "body": {"w": 80},
        "savedAt": 10, "state": "sending", "sentAt": NOW.0 - 100,
        "deferredAt": NOW.0 - 50_000, "heldAt": NOW.0 - 90_000,
        "claim": {"tabId": "tab-a", "expiresAt": NOW.0 + 9_900, "fence": TICKET_FENCE},
        "evidence": {"attemptCount": 2, "lastAttemptAt": NOW.0 - 100, "lastErrorCode": "HTTP_500"},
        "writer": {"bundle": "outbox-core@0.1.0", "at": NOW.0 - 100},
        "futureField": {"kept": true}
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn ticket() -> Ticket {
    Ticket { tab_id: "tab-a".into(), fence: TICKET_FENCE }
}

/// The one put of an answer applied to row `r` alone, checked to be that replace.
fn applied_put(raw: &Value, outcome: &Outcome) -> Value {
    let draws = AckDraws { random: 0.5, new_id: "unused".into() };
    let d = plan_ack("alice", "r", std::slice::from_ref(raw), &ticket(), outcome, NOW, &Backoff::default(), &draws);
    let AckDecision::Apply { plan, successor: None } = d else { panic!("not applied as mine: {d:?}") };
    assert_eq!(plan.scopes, vec![Scope::Id("r".into())]);
    assert_eq!(plan.expected, vec![raw.clone()], "compared as read");
    assert!(plan.deletes.is_empty(), "{:?}", plan.deletes);
    assert_eq!(plan.puts.len(), 1, "{:?}", plan.puts);
    plan.puts[0].clone()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn s6_an_auth_answer_holds_the_row_drops_sent_at_stamps_held_and_deferred_at_now_and_expires_the_claim() {
    let raw = sending(json!({}));
    let put = applied_put(&raw, &Outcome::Auth);
    assert_eq!(put["state"], "held");
    assert!(put.get("sentAt").is_none(), "sentAt is dropped: {put}");
    assert_eq!(put["heldAt"], NOW.0, "heldAt is now, not the earlier hold");
    assert_eq!(put["deferredAt"], NOW.0, "deferredAt is now, not the earlier deferral");
    // Expired, never removed: same tab, same fence (§6: the fence only grows; an answer
    // never adds to it, only a claim does).
    assert_eq!(put["claim"], json!({"tabId": "tab-a", "expiresAt": NOW.0, "fence": TICKET_FENCE}));
    // The attempt's evidence stays; its error code is the auth answer's.
    assert_eq!(
        put["evidence"],
        json!({"attemptCount": 2, "lastAttemptAt": NOW.0 - 100, "lastErrorCode": "AUTH"}),
        "the code of the latest failure, not the older HTTP_500"
    );
    // Nothing else moves: no backoff, no quarantine, request fields and unknown fields as read.
    assert!(put.get("nextAttemptAt").is_none() && put.get("blockedAt").is_none() && put.get("blockedCode").is_none());
    for k in ["id", "owner", "target", "kind", "body", "savedAt", "writer", "futureField"] {
        assert_eq!(put[k], raw[k], "{k}");
    }
    assert_eq!(put["fingerprint"], decode(&raw).unwrap().fingerprint.as_str());
    let mut want = keys(&raw);
    want.retain(|k| *k != "sentAt");
    want.push("fingerprint");
    let mut got = keys(&put);
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);

    // As decoded: held, not in flight, and not "never attempted" (an edit of it waits, §7).
    let row = decode(&put).unwrap();
    assert_eq!(row.state, RowState::Held);
    assert!(!row.never_attempted());
}

#[test]
fn s6_an_auth_answer_on_a_first_attempt_writes_held_at_and_deferred_at_it_did_not_have() {
    // The first attempt of a row: no earlier answer left any stamp to overwrite.
    let mut raw = sending(json!({"evidence": {"attemptCount": 1, "lastAttemptAt": NOW.0 - 100}}));
    let m = raw.as_object_mut().unwrap();
    m.remove("deferredAt");
    m.remove("heldAt");
    let put = applied_put(&raw, &Outcome::Auth);
    assert_eq!((put["state"].as_str(), put.get("sentAt")), (Some("held"), None));
    assert_eq!((&put["heldAt"], &put["deferredAt"]), (&json!(NOW.0), &json!(NOW.0)));
    assert_eq!(put["evidence"]["lastErrorCode"], "AUTH");
    assert_eq!(put["claim"]["expiresAt"], NOW.0);
}

#[test]
fn s6_a_permanent_rejection_records_its_code_as_the_last_error_code_too() {
    // `blockedCode` says why it is quarantined; `evidence.lastErrorCode` is the code of the
    // latest failure, which is this rejection and not the transient HTTP_500 before it.
    for (outcome, code) in [
        (Outcome::Permanent { code: "INVALID".into() }, "INVALID"),
        (Outcome::Conflict { actual_revision: Value::Null }, "REVISION_UNKNOWN"),
    ] {
        let raw = sending(json!({}));
        let put = applied_put(&raw, &outcome);
        assert_eq!(put["state"], "blocked", "{outcome:?}");
        assert!(put.get("sentAt").is_none(), "{put}");
        assert_eq!(put["blockedAt"], NOW.0);
        assert_eq!(put["blockedCode"], code);
        assert_eq!(
            put["evidence"],
            json!({"attemptCount": 2, "lastAttemptAt": NOW.0 - 100, "lastErrorCode": code}),
            "{outcome:?}"
        );
        assert_eq!(put["claim"], json!({"tabId": "tab-a", "expiresAt": NOW.0, "fence": TICKET_FENCE}));
    }
}

/// A blocked create of `pending:c` carrying every trace of earlier attempts and answers.
fn blocked_create(extra: Value) -> Value {
    let mut v = json!({
        "id": "c", "owner": "alice", "target": "pending:c", "kind": "create", "body": {"title": "draft"},
        "savedAt": 10, "state": "blocked",
        "sentAt": NOW.0 - 400, "deferredAt": NOW.0 - 300, "heldAt": NOW.0 - 200,
        "blockedAt": NOW.0 - 100, "blockedCode": "INVALID", "nextAttemptAt": NOW.0 + 60_000,
        "claim": {"tabId": "tab-a", "expiresAt": NOW.0 - 100, "fence": 4},
        "evidence": {"attemptCount": 4, "lastAttemptAt": NOW.0 - 400, "lastErrorCode": "INVALID"},
        "futureField": [1, "x"]
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// The put of row `new_id` in `plan`.
fn put_of<'a>(plan: &'a ReplacePlan, new_id: &str) -> &'a Value {
    plan.puts.iter().find(|p| p["id"] == new_id).unwrap_or_else(|| panic!("no put of {new_id}: {:?}", plan.puts))
}

const ATTEMPT_FIELDS: [&str; 8] =
    ["claim", "evidence", "sentAt", "deferredAt", "heldAt", "blockedAt", "blockedCode", "nextAttemptAt"];

#[test]
fn s7_retry_blocked_reissues_the_row_without_any_trace_of_its_attempts() {
    let raw = blocked_create(json!({}));
    let plan = plan_retry_blocked("alice", "c", None, std::slice::from_ref(&raw), "c2").expect("a blocked row");
    assert_eq!(plan.deletes, vec!["c".to_owned()]);
    let put = put_of(&plan, "c2");
    for k in ATTEMPT_FIELDS {
        assert!(put.get(k).is_none(), "a re-issued row carries no `{k}`: {put}");
    }
    assert_eq!(put["state"], "queued");
    // Kept: where it goes, when it was saved, what it asks, and fields of newer writers.
    for k in ["owner", "target", "kind", "body", "savedAt", "futureField"] {
        assert_eq!(put[k], raw[k], "{k}");
    }
    assert_eq!(put["fingerprint"], fingerprint(Kind::Create, "pending:c", &json!({"title": "draft"}), None));
    let row = decode(put).unwrap();
    assert!(row.never_attempted(), "{row:?}");

    // Any blocked row, not only a create, and with a successorOf kept.
    let update = json!({
        "id": "u", "owner": "alice", "target": "doc:1", "kind": "update", "body": {"w": 1}, "savedAt": 20,
        "state": "blocked", "successorOf": "p", "revision": 7,
        "sentAt": NOW.0 - 400, "deferredAt": NOW.0 - 300, "heldAt": NOW.0 - 200,
        "blockedAt": NOW.0 - 100, "blockedCode": "FORBIDDEN", "nextAttemptAt": NOW.0 + 60_000,
        "claim": {"tabId": "tab-b", "expiresAt": NOW.0 - 100, "fence": 2},
        "evidence": {"attemptCount": 2, "lastAttemptAt": NOW.0 - 400, "lastErrorCode": "FORBIDDEN"}
    });
    let plan = plan_retry_blocked("alice", "u", Some(&json!({"w": 2})), std::slice::from_ref(&update), "u2").unwrap();
    let put = put_of(&plan, "u2");
    for k in ATTEMPT_FIELDS {
        assert!(put.get(k).is_none(), "a re-issued row carries no `{k}`: {put}");
    }
    assert_eq!((&put["successorOf"], &put["revision"], &put["body"]), (&json!("p"), &json!(7), &json!({"w": 2})));
}

#[test]
fn s7_a_retried_blocked_row_is_sendable_at_once_whatever_its_old_next_attempt_at() {
    // The old `nextAttemptAt` is an hour ahead (a clock that jumped, another tab's clock):
    // the re-issued row is a new operation, never attempted, and goes at the next flush.
    let raw = blocked_create(json!({"nextAttemptAt": NOW.0 + 3_600_000}));
    let plan = plan_retry_blocked("alice", "c", None, std::slice::from_ref(&raw), "c2").unwrap();
    let stored: Vec<Stored> = plan.puts.iter().map(Stored::from_value).collect();
    let ids: Vec<&str> = select_sendable(&stored, "tab-a", NOW, 10_000, None).iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec!["c2"]);
}

fn edit_of_pending_c(body: Value) -> NewOperation {
    NewOperation::from_json(&json!({"owner": "alice", "target": "pending:c", "kind": "update", "body": body})).unwrap()
}

/// Enqueues `op` under `id` into `store` as the binding does (one transaction).
fn enqueue(store: &mut MemStore, op: &NewOperation, id: &str, reissue_id: &str) -> outbox_core::enqueue::EnqueuePlan {
    let scope = Scope::target("alice", "pending:c");
    let mut out = None;
    let r = store.transact(&[scope], |rows| {
        let p = plan_enqueue(op, id, reissue_id, rows, &Tab::new("tab-a"), NOW);
        let plan = p.plan.clone();
        out = Some(p);
        Some(plan)
    });
    assert_eq!(r, Some(ReplaceOutcome::Committed));
    out.unwrap()
}

/// Asserts that `p` merged the edit into create `id` (§7 "never attempted": merge), not
/// wrote an intent row waiting for it, and that the store holds only that create.
fn assert_merged_into(store: &MemStore, p: &outbox_core::enqueue::EnqueuePlan, id: &str, body: Value) {
    let row = p.row.as_ref().expect("a row is stored");
    assert_eq!(
        (row.id.as_str(), row.kind, row.successor_of.as_deref()),
        (id, Kind::Create, None),
        "merged into the create, not an intent waiting for it: {row:?}"
    );
    assert_eq!(row.body, body);
    let ids: Vec<&str> = store.all().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![id], "no intent row written");
}

#[test]
fn s7_an_edit_of_a_retried_blocked_create_merges_into_it_as_never_attempted() {
    // C was sent, deferred, held and then refused: it carries sentAt, deferredAt, heldAt,
    // a claim and evidence. `retryBlocked` re-issues it as C2, a new operation never
    // attempted, so an edit of the record merges into C2 (§7 table, first row) instead of
    // waiting as an intent for a create whose outcome would look unknown.
    let mut store = MemStore::new();
    store.seed(blocked_create(json!({})));
    let scope = store.read(&[Scope::target("alice", "pending:c")]);
    let plan = plan_retry_blocked("alice", "c", None, &scope, "c2").unwrap();
    assert_eq!(store.replace(&plan), ReplaceOutcome::Committed);

    let p = enqueue(&mut store, &edit_of_pending_c(json!({"body": "text"})), "u1", "unused");
    assert_merged_into(&store, &p, "c2", json!({"title": "draft", "body": "text"}));
}

#[test]
fn s7_a_blocked_create_reissued_by_a_merge_takes_later_edits_as_never_attempted() {
    // The same through enqueue: the first edit merges into the blocked C and re-issues it
    // as C2 (§7); the second edit finds C2 never attempted and merges into it too.
    let mut store = MemStore::new();
    store.seed(blocked_create(json!({})));
    let p = enqueue(&mut store, &edit_of_pending_c(json!({"title": "fixed"})), "u1", "c2");
    assert_merged_into(&store, &p, "c2", json!({"title": "fixed"}));

    let p = enqueue(&mut store, &edit_of_pending_c(json!({"body": "text"})), "u2", "unused");
    assert_merged_into(&store, &p, "c2", json!({"title": "fixed", "body": "text"}));
    for k in ATTEMPT_FIELDS {
        assert!(store.get("c2").unwrap().get(k).is_none(), "`{k}` left on the re-issued create");
    }
}

#[test]
fn s3_an_error_code_of_a_shape_not_read_is_cleared_and_the_evidences_unknown_fields_keep_their_order() {
    // §3 rule 2: unknown fields survive as stored, their order too. A `lastErrorCode` this
    // version cannot read sits among them; the answer clears it without moving the others.
    let raw = sending(json!({"evidence": {
        "attemptCount": 2, "lastAttemptAt": NOW.0 - 100,
        "zeta": 1, "lastErrorCode": 500, "alpha": 2, "mid": 3
    }}));
    let put = applied_put(&raw, &Outcome::Transient { code: None, retry_after_ms: None });
    let ev = &put["evidence"];
    let unknown: Vec<&str> =
        keys(ev).into_iter().filter(|k| ["zeta", "alpha", "mid", "lastErrorCode"].contains(k)).collect();
    assert_eq!(unknown, ["zeta", "alpha", "mid"], "{ev}");
    assert_eq!((&ev["zeta"], &ev["alpha"], &ev["mid"]), (&json!(1), &json!(2), &json!(3)), "their values too");
}
