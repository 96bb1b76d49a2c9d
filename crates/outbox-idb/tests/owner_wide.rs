//! The owner-wide commands (`resumeHeld`, `purgeOwner`) over a queue of thousands of rows:
//! one replace over the owner's `[owner, savedAt]` range (`Scope::Owner`), every row of it
//! compared, only that owner's decodable rows changed (SPEC §3, §6, §11).
#![cfg(target_arch = "wasm32")]

use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use outbox_idb::idb::{Durability, Store};
use serde_json::{json, Value};
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn row(id: &str, owner: &str, state: &str, at: i64) -> Value {
    json!({"id": id, "owner": owner, "target": format!("doc:{id}"), "kind": "update", "body": {"n": at},
           "savedAt": at, "state": state})
}

const N: usize = 3_000;

/// `N` rows of alice (every other one held), 50 held rows of bob, and two odd rows of alice:
/// one undecodable inside her range, one whose `savedAt` is not a number (outside it).
async fn seeded(db: &str) -> std::rc::Rc<Store> {
    let store = Store::open(db).await.unwrap();
    let mut puts: Vec<Value> = (0..N)
        .map(|i| row(&format!("a{i:05}"), "alice", if i % 2 == 0 { "held" } else { "queued" }, i as i64))
        .collect();
    puts.extend((0..50).map(|i| row(&format!("b{i:02}"), "bob", "held", i)));
    puts.push(row("a-bad", "alice", "paused", 7));
    let mut no_time = row("a-no-time", "alice", "queued", 0);
    no_time["savedAt"] = json!("yesterday");
    puts.push(no_time);
    let seed = ReplacePlan { puts, ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    store
}

fn count(rows: &[Value], owner: &str, state: &str) -> usize {
    rows.iter().filter(|r| r["owner"] == owner && r["state"] == state).count()
}

#[wasm_bindgen_test]
async fn resume_held_and_purge_owner_change_thousands_of_one_owners_rows_in_one_replace() {
    let db = db_name("owner-wide");
    let store = seeded(&db).await;
    let a = open(&db, "tab-a").await;

    assert_eq!(ok(a.resume_held("alice".into())).await, json!(N / 2));
    let stored = store.read_all().await.unwrap();
    assert_eq!((count(&stored, "alice", "held"), count(&stored, "alice", "queued")), (0, N / 2 + N / 2 + 1));
    assert_eq!(count(&stored, "bob", "held"), 50, "another owner's held rows stay held");

    assert_eq!(ok(a.purge_owner("alice".into())).await, json!(N));
    let mut left: Vec<String> =
        store.read_all().await.unwrap().iter().map(|r| r["id"].as_str().unwrap().into()).collect();
    left.retain(|id| id.starts_with('a'));
    assert_eq!(left, ["a-bad", "a-no-time"], "undecodable rows are kept (§3)");
    assert_eq!(store.read_all().await.unwrap().len(), 52);
}

#[wasm_bindgen_test]
async fn an_owner_scope_reads_the_owners_range_and_a_change_in_it_makes_the_replace_stale() {
    let db = db_name("owner-scope");
    let store = seeded(&db).await;
    let scope = [Scope::Owner("alice".into())];
    let range = store.read(&scope).await.unwrap();
    // Every row of alice with a numeric savedAt, the undecodable one too; nothing else.
    assert_eq!(range.len(), N + 1);
    assert!(range.iter().all(|r| r["owner"] == "alice" && r["savedAt"].is_number()));

    let plan = ReplacePlan {
        scopes: scope.to_vec(),
        expected: range.clone(),
        deletes: vec!["a00000".into()],
        ..Default::default()
    };
    // A row of alice written since the read: the replace is stale and deletes nothing.
    let other = ReplacePlan { puts: vec![row("a-late", "alice", "queued", 9)], ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(other)).await.unwrap();
    assert_eq!(
        store.transact(&scope, Durability::Default, |_| Some(plan.clone())).await.unwrap(),
        Some(ReplaceOutcome::Stale)
    );
    assert_eq!(store.read(&[Scope::Id("a00000".into())]).await.unwrap().len(), 1);
    // A row of bob does not touch alice's range: planned on what is there now, it commits.
    let bob = ReplacePlan { puts: vec![row("b-late", "bob", "queued", 9)], ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(bob)).await.unwrap();
    let now = store.read(&scope).await.unwrap();
    let plan = ReplacePlan { expected: now, ..plan };
    assert_eq!(
        store.transact(&scope, Durability::Default, |_| Some(plan)).await.unwrap(),
        Some(ReplaceOutcome::Committed)
    );
    assert!(store.read(&[Scope::Id("a00000".into())]).await.unwrap().is_empty());
}

#[wasm_bindgen_test]
async fn a_span_reads_the_first_count_rows_of_its_bounds_in_index_order_as_the_in_memory_store_does() {
    // The planner's tests read spans through `MemStore`; the flush reads them here. Both must
    // give the same rows: the owner's, `savedAt` within the bounds (a fraction too), in the
    // index's order (ties by key), the first `count` of them.
    let db = db_name("span-read");
    let store = Store::open(&db).await.unwrap();
    let mut rows = Vec::new();
    for (id, owner, at) in [
        ("a3", "alice", json!(5)),
        ("a1", "alice", json!(5)),
        ("a2", "alice", json!(5.0)),
        ("a4", "alice", json!(6)),
        ("a5", "alice", json!(6.5)),
        ("a6", "alice", json!(7)),
        ("b1", "bob", json!(5)),
        ("b2", "bob", json!(6)),
    ] {
        let mut r = row(id, owner, "queued", 0);
        r["savedAt"] = at;
        rows.push(r);
    }
    let seed = ReplacePlan { puts: rows.clone(), ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    let mut mem = outbox_core::memstore::MemStore::new();
    for r in rows {
        mem.seed(r);
    }
    let ids = |rows: Vec<Value>| rows.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let span = |from: f64, to: f64, count: u32| [Scope::Span { owner: "alice".into(), from, to, count }];
    for (scope, want) in [
        (span(5.0, 6.0, 2), vec!["a1", "a2"]),
        (span(5.0, 7.0, 100), vec!["a1", "a2", "a3", "a4", "a5", "a6"]),
        (span(6.0, 6.5, 1), vec!["a4"]),
        (span(6.25, 7.0, 2), vec!["a5", "a6"]),
        (span(8.0, 9.0, 3), vec![]),
    ] {
        assert_eq!(ids(store.read(&scope).await.unwrap()), want, "{scope:?}");
        let mut from_mem = ids(mem.read(&scope));
        from_mem.sort();
        assert_eq!(from_mem, want, "the in-memory store, {scope:?}");
    }
}
