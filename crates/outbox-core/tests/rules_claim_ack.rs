//! §5 claim and §6 ACK details the other tests left open: a claim waits for its
//! predecessor as read, writes `writer`, and an answer applies only with the same tab
//! **and** fence.

use outbox_core::ack::{claim_is_mine, plan_ack, AckDecision, AckDraws};
use outbox_core::claim::{plan_claim, ClaimSkip};
use outbox_core::retry::Backoff;
use outbox_core::select::Unsendable;
use outbox_core::tab::BUNDLE;
use outbox_core::{decode, Millis, Outcome, Tab, Ticket};
use serde_json::{json, Value};

const NOW: Millis = Millis(1_000_000);

fn row(id: &str, extra: Value) -> Value {
    let mut v = json!({"id": id, "owner": "alice", "target": "doc:1", "kind": "update", "body": {},
                       "savedAt": 1, "state": "queued"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn s6_an_answer_applies_only_with_the_same_tab_and_the_same_fence() {
    let raw = row(
        "r",
        json!({"state": "sending", "sentAt": NOW.0, "claim": {"tabId": "tab-a", "expiresAt": NOW.0 + 10, "fence": 3},
                               "writer": {"bundle": "b", "at": NOW.0}}),
    );
    let r = decode(&raw).unwrap();
    let t = |tab: &str, fence: u64| Ticket { tab_id: tab.into(), fence };
    assert!(claim_is_mine(&r, &t("tab-a", 3)));
    assert!(!claim_is_mine(&r, &t("tab-a", 2)), "an older claim of the same tab");
    assert!(!claim_is_mine(&r, &t("tab-b", 3)), "another tab with the same fence number");
    let draws = AckDraws { random: 0.0, new_id: "n".into() };
    for ticket in [t("tab-a", 2), t("tab-b", 3)] {
        let d = plan_ack(
            "alice",
            "r",
            std::slice::from_ref(&raw),
            &ticket,
            &Outcome::transient("X"),
            NOW,
            &Backoff::default(),
            &draws,
        );
        assert_eq!(d, AckDecision::NotMine, "{ticket:?}");
    }
}

#[test]
fn s5_a_claim_waits_for_its_predecessor_as_read_unless_it_is_blocked() {
    let tab = Tab::new("tab-a");
    let succ = row("s", json!({"successorOf": "p", "savedAt": 2}));
    let claim = |pred: Option<&Value>| plan_claim("alice", Some(&succ), pred, &tab, NOW, None);
    let waits = Err(ClaimSkip::NotSendable(Unsendable::WaitsFor("p".into())));
    assert_eq!(claim(Some(&row("p", json!({})))).map(|c| c.ticket), waits.clone(), "predecessor queued");
    assert_eq!(claim(Some(&row("p", json!({"state": "held"})))).map(|c| c.ticket), waits.clone());
    let undecodable = json!({"id": "p", "owner": "alice", "kind": "upsert"});
    assert_eq!(claim(Some(&undecodable)).map(|c| c.ticket), waits, "what cannot be read is never overtaken");
    // Blocked or gone: the successor goes, and the claim compares the predecessor as read.
    let blocked = row("p", json!({"state": "blocked"}));
    let cp = claim(Some(&blocked)).unwrap();
    assert!(cp.plan.expected.contains(&blocked));
    assert!(claim(None).is_ok(), "predecessor gone");
    // A row given as predecessor that is not the one named is not it.
    assert!(claim(Some(&row("other", json!({})))).is_ok());
}

#[test]
fn s8_a_claim_waits_for_a_blocked_predecessor_when_either_is_a_command() {
    // §7/§8: a `noMerge` chain keeps its order through a failure, so a blocked link still
    // holds the row after it, whichever of the two is the command.
    let tab = Tab::new("tab-a");
    let waits = Err(ClaimSkip::NotSendable(Unsendable::WaitsFor("p".into())));
    let blocked = row("p", json!({"state": "blocked"}));
    let blocked_command = row("p", json!({"state": "blocked", "noMerge": true}));
    let succ = row("s", json!({"successorOf": "p", "savedAt": 2}));
    let command = row("s", json!({"successorOf": "p", "savedAt": 2, "noMerge": true}));
    let claim = |s: &Value, p: &Value| plan_claim("alice", Some(s), Some(p), &tab, NOW, None).map(|c| c.ticket);
    assert_eq!(claim(&succ, &blocked_command), waits.clone(), "behind a failed command");
    assert_eq!(claim(&command, &blocked), waits.clone(), "a command behind a failed row");
    assert_eq!(claim(&command, &blocked_command), waits);
    assert!(claim(&succ, &blocked).is_ok(), "outside a chain, a blocked row lets its successor go");
}

#[test]
fn s5_a_claim_writes_writer_and_keeps_its_unknown_fields() {
    let raw = row("r", json!({"writer": {"bundle": "old@1", "at": 5, "host": "x"}}));
    let tab = Tab::new("tab-a");
    let cp = plan_claim("alice", Some(&raw), None, &tab, NOW, None).unwrap();
    let put = &cp.plan.puts[0];
    assert_eq!(put["writer"], json!({"bundle": BUNDLE, "at": NOW.0, "host": "x"}));
    assert_eq!(put["claim"], json!({"tabId": "tab-a", "expiresAt": NOW.0 + tab.lease_ms, "fence": 1}));
    assert_eq!(put["state"], "sending");
    assert_eq!(put["sentAt"], NOW.0);
}
