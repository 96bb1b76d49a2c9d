//! §11 accounts, planner by planner: a call made for one owner never claims, rewrites,
//! re-points, converts, resumes, re-issues or deletes another owner's row, even when that
//! row has the same target and is handed to the planner among the rows it reads.

use outbox_core::ack::{plan_ack, AckDecision, AckDraws};
use outbox_core::admin::{plan_discard, plan_purge_owner, plan_resume_held, plan_retry_blocked, DiscardSkip};
use outbox_core::claim::{plan_claim, ClaimSkip};
use outbox_core::enqueue::plan_enqueue;
use outbox_core::input::NewOperation;
use outbox_core::retry::Backoff;
use outbox_core::select::select_sendable;
use outbox_core::{Flush, FlushOptions, Millis, Outcome, Outstanding, ReplacePlan, Request, Stored, Tab, Ticket};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);
const LEASE: i64 = 10_000;

fn row(id: &str, owner: &str, target: &str, extra: Value) -> Value {
    let mut v = json!({"id": id, "owner": owner, "target": target, "kind": "update", "body": {"w": 1},
                       "savedAt": 10, "state": "queued"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// A row claimed by `tab-a` with fence 1, still in flight at [`NOW`].
fn claimed(id: &str, owner: &str, target: &str, extra: Value) -> Value {
    let mut v = row(id, owner, target, extra);
    v["state"] = json!("sending");
    v["sentAt"] = json!(NOW.0 - 100);
    v["claim"] = json!({"tabId": "tab-a", "expiresAt": NOW.0 + 5_000, "fence": 1});
    v["evidence"] = json!({"attemptCount": 1, "lastAttemptAt": NOW.0 - 100});
    v["writer"] = json!({"bundle": "test", "at": NOW.0 - 100});
    v
}

fn ticket() -> Ticket {
    Ticket { tab_id: "tab-a".into(), fence: 1 }
}

/// Every id a plan compares, writes or deletes that belongs to `owner`.
fn touched_by(plan: &ReplacePlan, owner: &str) -> Vec<String> {
    let of_owner = |v: &Value| v["owner"] == owner;
    let mut ids: Vec<String> =
        plan.expected.iter().chain(&plan.puts).filter(|v| of_owner(v)).map(|v| v["id"].to_string()).collect();
    ids.extend(plan.deletes.iter().filter(|d| d.starts_with(owner)).cloned());
    ids
}

fn ack(rows: &[Value], id: &str, outcome: Outcome) -> AckDecision {
    let draws = AckDraws { random: 0.5, new_id: "alice-succ".into() };
    plan_ack("alice", id, rows, &ticket(), &outcome, NOW, &Backoff::default(), &draws)
}

#[test]
fn s11_claim_refuses_another_owners_row_and_plans_nothing() {
    let bob = row("bob-1", "bob", "doc:1", json!({}));
    let tab = Tab::new("tab-a").with_lease(LEASE);
    assert_eq!(plan_claim("alice", Some(&bob), None, &tab, NOW, None).unwrap_err(), ClaimSkip::OtherOwner);
    // The same row for its own owner is claimable: the refusal is the owner filter alone.
    assert!(plan_claim("bob", Some(&bob), None, &tab, NOW, None).is_ok());
}

#[test]
fn s11_an_ack_never_touches_another_owners_rows_of_the_same_target() {
    let mine = claimed("alice-1", "alice", "doc:1", json!({"revision": 1}));
    let my_next = row("alice-2", "alice", "doc:1", json!({"successorOf": "alice-1", "savedAt": 11}));
    let bobs = row("bob-1", "bob", "doc:1", json!({"successorOf": "alice-1"}));
    let rows = [mine, my_next, bobs];
    let outcomes = [
        Outcome::success(json!({})),
        Outcome::transient("HTTP_500"),
        Outcome::Auth,
        Outcome::Permanent { code: "INVALID".into() },
        Outcome::Conflict { actual_revision: json!(5) },
    ];
    for outcome in outcomes {
        let AckDecision::Apply { plan, .. } = ack(&rows, "alice-1", outcome.clone()) else {
            panic!("{outcome:?}: the claim is mine");
        };
        assert!(touched_by(&plan, "bob").is_empty(), "{outcome:?} touches bob's row: {plan:?}");
        assert!(!plan.puts.is_empty() || !plan.deletes.is_empty());
    }
    // The conflict successor takes over alice's waiting row only.
    let AckDecision::Apply { plan, .. } = ack(&rows, "alice-1", Outcome::Conflict { actual_revision: json!(5) }) else {
        panic!("mine");
    };
    let repointed: Vec<&Value> = plan.puts.iter().filter(|p| p["successorOf"] == "alice-succ").collect();
    assert_eq!(repointed.len(), 1);
    assert_eq!(repointed[0]["id"], "alice-2");
}

#[test]
fn s11_an_ack_converts_only_its_own_owners_intents() {
    let create = claimed("alice-c", "alice", "pending:alice-c", json!({"kind": "create"}));
    let bob_intent = row("bob-i", "bob", "pending:alice-c", json!({"successorOf": "alice-c"}));
    let my_intent = row("alice-i", "alice", "pending:alice-c", json!({"successorOf": "alice-c", "savedAt": 11}));
    let receipt = Outcome::success(json!({"serverId": "rec:1"}));
    match ack(&[create.clone(), bob_intent.clone(), my_intent], "alice-c", receipt.clone()) {
        AckDecision::ConvertFirst(intents) => {
            let ids: Vec<&str> = intents.iter().map(|(r, _)| r.id.as_str()).collect();
            assert_eq!(ids, ["alice-i"]);
        }
        other => panic!("alice's intent first: {other:?}"),
    }
    // With only bob's row waiting, alice's create is simply deleted and bob's row left alone.
    let AckDecision::Apply { plan, .. } = ack(&[create, bob_intent], "alice-c", receipt) else {
        panic!("nothing of alice's to convert");
    };
    assert_eq!(plan.deletes, ["alice-c"]);
    assert!(touched_by(&plan, "bob").is_empty(), "{plan:?}");
}

#[test]
fn s11_resume_held_and_purge_owner_change_only_that_owners_rows() {
    let rows = [
        row("alice-h", "alice", "doc:1", json!({"state": "held"})),
        row("bob-h", "bob", "doc:1", json!({"state": "held"})),
        row("bob-q", "bob", "doc:2", json!({})),
    ];
    let (plan, n) = plan_resume_held("alice", &rows).unwrap();
    assert_eq!(n, 1);
    assert_eq!(plan.puts.len(), 1);
    assert_eq!(plan.puts[0]["id"], "alice-h");
    assert!(touched_by(&plan, "bob").is_empty());
    assert!(plan_resume_held("carol", &rows).is_none());

    let (plan, n) = plan_purge_owner("alice", &rows).unwrap();
    assert_eq!((n, plan.deletes.clone()), (1, vec!["alice-h".to_owned()]));
    assert!(touched_by(&plan, "bob").is_empty());
    assert!(plan_purge_owner("carol", &rows).is_none());
}

#[test]
fn s11_discard_refuses_another_owners_row_decodable_or_not() {
    let bob = row("bob-1", "bob", "doc:1", json!({}));
    assert_eq!(plan_discard(Some("alice"), Some(&bob), NOW, LEASE), Err(DiscardSkip::OtherOwner));
    assert_eq!(plan_discard(None, Some(&bob), NOW, LEASE), Err(DiscardSkip::OtherOwner));
    let bobs_broken = json!({"id": "bob-x", "owner": "bob", "kind": "upsert"});
    assert_eq!(plan_discard(Some("alice"), Some(&bobs_broken), NOW, LEASE), Err(DiscardSkip::OtherOwner));
    assert_eq!(plan_discard(None, Some(&bobs_broken), NOW, LEASE), Err(DiscardSkip::OtherOwner));
    assert_eq!(plan_discard(Some("bob"), Some(&bob), NOW, LEASE).unwrap().deletes, ["bob-1"]);
}

#[test]
fn s11_retry_blocked_reissues_only_its_owners_row_and_repoints_only_its_owners_rows() {
    let blocked =
        |id: &str, owner: &str| row(id, owner, "doc:1", json!({"state": "blocked", "blockedCode": "INVALID"}));
    let rows = [
        blocked("alice-b", "alice"),
        row("alice-next", "alice", "doc:1", json!({"successorOf": "alice-b", "savedAt": 11})),
        blocked("bob-b", "bob"),
        row("bob-next", "bob", "doc:1", json!({"successorOf": "alice-b"})),
    ];
    assert!(plan_retry_blocked("alice", "bob-b", None, &rows, "new").is_none(), "bob's blocked row");
    let plan = plan_retry_blocked("alice", "alice-b", None, &rows, "new").unwrap();
    assert!(touched_by(&plan, "bob").is_empty(), "{plan:?}");
    let next = plan.puts.iter().find(|p| p["id"] == "alice-next").unwrap();
    assert_eq!(next["successorOf"], "new");
}

#[test]
fn s11_enqueue_never_absorbs_or_follows_another_owners_rows() {
    let rows = [
        row("bob-q", "bob", "doc:1", json!({})),
        claimed("bob-f", "bob", "doc:1", json!({})),
        row("alice-q", "alice", "doc:1", json!({"body": {"a": 1}})),
    ];
    let op = NewOperation::from_json(&json!({"owner": "alice", "target": "doc:1", "kind": "update", "body": {"b": 2}}))
        .unwrap();
    let p = plan_enqueue(&op, "alice-new", "alice-re", &rows, &Tab::new("tab-b"), NOW);
    assert_eq!(p.absorbed, ["alice-q"]);
    let new = p.row.unwrap();
    assert_eq!(new.successor_of, None, "bob's row in flight is not alice's predecessor");
    assert_eq!(new.body, json!({"a": 1, "b": 2}));
    assert!(touched_by(&p.plan, "bob").is_empty(), "{:?}", p.plan);
}

#[test]
fn s11_owner_wide_commands_replace_the_owners_whole_range_in_one_scope() {
    use outbox_core::memstore::MemStore;
    use outbox_core::{ReplaceOutcome, Scope};
    let bad = row("alice-bad", "alice", "doc:3", json!({"state": "paused"})); // undecodable, in the range
    let no_time = row("alice-t", "alice", "doc:4", json!({"savedAt": "yesterday"})); // outside the range
    let rows = [
        row("alice-h", "alice", "doc:1", json!({"state": "held"})),
        row("alice-q", "alice", "doc:2", json!({})),
        bad.clone(),
        no_time,
        row("bob-h", "bob", "doc:1", json!({"state": "held"})),
    ];
    let mut store = MemStore::new();
    for r in &rows {
        store.seed(r.clone());
    }
    let ids = |v: &[Value]| v.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let (resume, n) = plan_resume_held("alice", &rows).unwrap();
    let (purge, m) = plan_purge_owner("alice", &rows).unwrap();
    for plan in [&resume, &purge] {
        // One scope for the owner's range, however many rows: not one read per row.
        assert_eq!(plan.scopes, vec![Scope::Owner("alice".into())]);
        // Every row of the range is compared, the undecodable one too; nothing outside it.
        assert_eq!(ids(&plan.expected), ["alice-h", "alice-q", "alice-bad"]);
    }
    assert_eq!((n, ids(&resume.puts)), (1, vec!["alice-h".to_owned()]));
    assert_eq!((m, purge.deletes.clone()), (2, vec!["alice-h".to_owned(), "alice-q".to_owned()]));

    // A row of the owner written after the read makes the replace stale: nothing is purged.
    let mut later = store.clone();
    later.seed(row("alice-new", "alice", "doc:5", json!({})));
    assert_eq!(later.replace(&purge), ReplaceOutcome::Stale);
    assert!(later.get("alice-q").is_some());
    // Another owner's row does not.
    let mut other = store.clone();
    other.seed(row("bob-new", "bob", "doc:5", json!({})));
    assert_eq!(other.replace(&purge), ReplaceOutcome::Committed);
    assert_eq!(store.replace(&purge), ReplaceOutcome::Committed);
    for kept in ["alice-bad", "alice-t", "bob-h"] {
        assert!(store.get(kept).is_some(), "{kept} is kept");
    }
    assert!(store.get("alice-h").is_none() && store.get("alice-q").is_none());
}

#[test]
fn s11_an_answer_for_alice_never_changes_bobs_row_even_with_this_tabs_ticket() {
    // The planner refuses it itself (issue 32 item 5): the binding's own check is not the
    // only one between an ACK and another account's row.
    let bob = claimed("bob-1", "bob", "doc:1", json!({}));
    for outcome in [Outcome::Permanent { code: "INVALID".into() }, Outcome::success(json!({})), Outcome::Auth] {
        assert_eq!(ack(std::slice::from_ref(&bob), "bob-1", outcome), AckDecision::NotMine);
    }
    // Through the flush machine, as `ack(owner, rowId, ticket, outcome)` drives it.
    let tab = Tab::new("tab-a").with_lease(LEASE);
    let mut out = Outstanding::new();
    let opts = FlushOptions::new("alice", tab);
    let row = outbox_core::decode(&bob).unwrap();
    let outcome = Outcome::Permanent { code: "INVALID".into() };
    let mut f = Flush::for_answer(opts, row, ticket(), outcome, &mut out);
    let Some(Request::Write { token, .. }) = f.poll_request() else { panic!("the ACK's write") };
    assert_eq!(f.plan(token, std::slice::from_ref(&bob), NOW, &mut Fixed), None, "nothing planned for bob's row");
    f.handle_written(token, None, NOW, &mut out);
    assert!(f.is_done());
    assert_eq!((f.report().applied, f.report().blocked), (0, 0));
}

struct Fixed;
impl outbox_core::Draws for Fixed {
    fn unit(&mut self) -> f64 {
        0.5
    }
    fn new_id(&mut self) -> String {
        "fresh".into()
    }
}

#[test]
fn s8_s11_selection_and_claim_agree_on_an_undecodable_predecessor_of_another_owner() {
    // Alice's row names a predecessor whose owner reads `bob` and which is undecodable
    // (issue 32 item 2): invisible to alice, so no predecessor, for selection and claim
    // alike. The same value under alice's name holds the row, for both.
    let tab = Tab::new("tab-a").with_lease(LEASE);
    let succ = row("a-2", "alice", "doc:1", json!({"successorOf": "p"}));
    // An owner that is no string (42) reads as no one's: invisible too (the owner's reads
    // never list it, so a flush's selection could not see it either).
    for (owner, holds) in [(json!("bob"), false), (json!(42), false), (json!("alice"), true)] {
        let pred = json!({"id": "p", "owner": owner, "target": "doc:1", "kind": "upsert", "body": {},
                          "savedAt": 5, "state": "queued"});
        let stored: Vec<Stored> = [&succ, &pred].into_iter().map(Stored::from_value).collect();
        let selected = !select_sendable(&stored, "tab-a", NOW, LEASE, None).is_empty();
        let claimed = plan_claim("alice", Some(&succ), Some(&pred), &tab, NOW, None).is_ok();
        assert_eq!((selected, claimed), (!holds, !holds), "predecessor owned by {owner}");
    }
}
