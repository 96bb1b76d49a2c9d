//! Early rows (`src/idb/view.rs`): a replace that puts a guessed row with its reads commits
//! exactly what its plans asked for, whatever the guess.
#![cfg(target_arch = "wasm32")]

use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use outbox_idb::idb::replace::{Planner, RecordPort};
use outbox_idb::idb::Durability;
use outbox_idb::idb::Store;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn row(id: &str, target: &str, n: i64) -> Value {
    json!({"id": id, "owner": "o", "target": target, "kind": "update", "body": {"n": n}, "savedAt": n, "state": "queued"})
}

async fn seeded(test: &str, rows: Vec<Value>) -> Rc<Store> {
    let store = Store::open(&db_name(test)).await.unwrap();
    let seed = ReplacePlan { puts: rows, ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    store
}

/// One replace over `scopes` with `early` put with its reads; `plan` gets the rows its
/// planner was given. Returns the outcome, the ids of the rows returned as put, and what
/// the planner saw.
async fn replace(
    store: &Rc<Store>,
    scopes: Vec<Scope>,
    early: &[Value],
    plan: impl FnOnce(&[Value]) -> Option<ReplacePlan> + 'static,
) -> (Option<ReplaceOutcome>, Vec<String>, Vec<Value>) {
    let seen = Rc::new(RefCell::new(vec![]));
    let s = seen.clone();
    let planner: Planner<'_> = Box::new(move |rows| {
        *s.borrow_mut() = rows.to_vec();
        plan(rows)
    });
    let done = store
        .transact_records(vec![(scopes, planner)], Durability::Strict, &RecordPort::default(), early)
        .await
        .unwrap();
    let puts = done.puts.iter().map(|(id, _)| id.clone()).collect();
    let seen = seen.borrow().clone();
    (done.outcomes[0], puts, seen)
}

fn insert(scope: Scope, r: &Value) -> impl FnOnce(&[Value]) -> Option<ReplacePlan> {
    let r = r.clone();
    move |_| Some(ReplacePlan { scopes: vec![scope], puts: vec![r], ..Default::default() })
}

#[wasm_bindgen_test]
async fn an_early_row_written_as_guessed_stands_once_and_is_returned() {
    let store = seeded("early-stands", vec![]).await;
    let r = row("new", "t", 1);
    let (outcome, puts, seen) =
        replace(&store, vec![Scope::target("o", "t")], std::slice::from_ref(&r), insert(Scope::target("o", "t"), &r))
            .await;
    assert_eq!(outcome, Some(ReplaceOutcome::Committed));
    assert_eq!(seen, Vec::<Value>::new(), "the planner sees the scope as it was before the early put");
    assert_eq!(puts, vec!["new".to_owned()]);
    assert_eq!(store.read_all().await.unwrap(), vec![r]);
}

#[wasm_bindgen_test]
async fn an_early_row_the_plan_does_not_write_is_deleted() {
    let old = row("old", "t", 1);
    let store = seeded("early-unwritten", vec![old.clone()]).await;
    let merged = row("old", "t", 2);
    let m = merged.clone();
    let exp = old.clone();
    // The plan merges into the row it found and never writes the guessed one.
    let plan = move |_: &[Value]| {
        Some(ReplacePlan {
            scopes: vec![Scope::target("o", "t")],
            expected: vec![exp],
            puts: vec![m],
            ..Default::default()
        })
    };
    let (outcome, puts, seen) = replace(&store, vec![Scope::target("o", "t")], &[row("new", "t", 9)], plan).await;
    assert_eq!(outcome, Some(ReplaceOutcome::Committed));
    assert_eq!(seen, vec![old], "only the stored row, not the early one");
    assert_eq!(puts, vec!["old".to_owned()]);
    assert_eq!(store.read_all().await.unwrap(), vec![merged]);
}

#[wasm_bindgen_test]
async fn an_early_row_the_plan_writes_otherwise_is_written_as_planned() {
    let store = seeded("early-rewritten", vec![]).await;
    let planned = row("new", "t", 2);
    let (outcome, puts, _) = replace(
        &store,
        vec![Scope::target("o", "t")],
        &[row("new", "t", 1)],
        insert(Scope::target("o", "t"), &planned),
    )
    .await;
    assert_eq!(outcome, Some(ReplaceOutcome::Committed));
    assert_eq!(puts, vec!["new".to_owned()]);
    assert_eq!(store.read_all().await.unwrap(), vec![planned]);
}

#[wasm_bindgen_test]
async fn a_stale_or_empty_plan_leaves_no_early_row() {
    let old = row("old", "t", 1);
    let store = seeded("early-stale", vec![old.clone()]).await;
    let stale = |_: &[Value]| {
        Some(ReplacePlan {
            scopes: vec![Scope::target("o", "t")],
            expected: vec![],
            puts: vec![row("new", "t", 1)],
            ..Default::default()
        })
    };
    let (outcome, puts, _) = replace(&store, vec![Scope::target("o", "t")], &[row("new", "t", 1)], stale).await;
    assert_eq!(outcome, Some(ReplaceOutcome::Stale));
    assert!(puts.is_empty());
    assert_eq!(store.read_all().await.unwrap(), vec![old.clone()]);
    let (outcome, _, _) = replace(&store, vec![Scope::target("o", "t")], &[row("new", "t", 1)], |_| None).await;
    assert_eq!(outcome, None);
    assert_eq!(store.read_all().await.unwrap(), vec![old]);
}

#[wasm_bindgen_test]
async fn a_scope_read_after_the_early_put_does_not_show_the_early_row() {
    let store = seeded("early-later-read", vec![]).await;
    let r = row("new", "t2", 1);
    // Nothing read first; the plan's own scopes (the target and the row's id) are read
    // after the early put, and both must still look empty to the comparison.
    let r2 = r.clone();
    let plan = move |_: &[Value]| {
        Some(ReplacePlan {
            scopes: vec![Scope::target("o", "t2"), Scope::Id("new".into())],
            puts: vec![r2],
            ..Default::default()
        })
    };
    let (outcome, puts, _) = replace(&store, vec![], std::slice::from_ref(&r), plan).await;
    assert_eq!(outcome, Some(ReplaceOutcome::Committed), "the early row is not taken for a row another writer put");
    assert_eq!(puts, vec!["new".to_owned()]);
    assert_eq!(store.read_all().await.unwrap(), vec![r]);
}

/// Through `enqueue`, which guesses an empty scope: the rows left and the row returned are
/// what the plan made, when the scope was not empty after all.
#[wasm_bindgen_test]
async fn enqueue_into_a_scope_that_holds_rows_keeps_only_what_the_plan_made() {
    let db = db_name("early-enqueue");
    let ob = open(&db, "tab-a").await;
    let enqueue = |op: Value| ob.enqueue(obj(op), wasm_bindgen::JsValue::UNDEFINED);
    let first = ok(enqueue(json!({"owner": "alice", "kind": "update", "target": "w:1", "body": {"a": 1}}))).await;
    let second = ok(enqueue(json!({"owner": "alice", "kind": "update", "target": "w:1", "body": {"b": 2}}))).await;
    assert_eq!(second["body"], json!({"a": 1, "b": 2}), "coalesced over the first");
    let rows = ok(ob.rows("alice".into())).await;
    assert_eq!(rows.as_array().unwrap(), &vec![second.clone()], "one row, as returned: {rows}");
    assert_ne!(rows[0]["id"], first["id"]);

    let create = ok(enqueue(json!({"owner": "alice", "kind": "create", "body": {"t": 1}}))).await;
    let target = create["target"].as_str().unwrap().to_owned();
    let cancel = ok(enqueue(json!({"owner": "alice", "kind": "delete", "target": target, "body": null}))).await;
    assert_eq!(cancel, Value::Null, "a delete cancels the unsent create");
    let ids: Vec<Value> =
        ok(ob.rows("alice".into())).await.as_array().unwrap().iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, vec![second["id"].clone()], "neither the create nor the delete's guessed row is left");
}
