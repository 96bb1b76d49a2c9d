//! The binding on a real IndexedDB in headless Chromium (`wasm-pack test --headless
//! --chrome`). Every test opens a database of its own.
#![cfg(target_arch = "wasm32")]

use futures_util::future::join_all;
use js_sys::{Function, Object, Promise, Reflect};
use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use outbox_idb::convert::{from_js, to_js};
use outbox_idb::idb::{Durability, Store};
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn code_of(p: js_sys::Promise) -> String {
    sync_code(settle(p).await)
}

/// The `code` of the `Error` a call threw.
fn sync_code<T: std::fmt::Debug>(r: Result<T, JsValue>) -> String {
    coded(&r.expect_err("call fails")).0
}

fn flush_opts(owner: &str, send: JsValue) -> JsValue {
    let o = obj(json!({"owner": owner}));
    set(&o, "send", &send);
    o
}

async fn all_rows(store: &std::rc::Rc<Store>) -> Vec<Value> {
    store.read_all().await.unwrap()
}

#[wasm_bindgen_test]
async fn replace_concurrent_plans_on_one_expected_state_exactly_one_commits() {
    let store = Store::open(&db_name("concurrent")).await.unwrap();
    let row = json!({"id": "r1", "owner": "o", "target": "t", "kind": "update", "body": {"n": 0}, "savedAt": 1,
                     "state": "queued"});
    let seed = ReplacePlan {
        scopes: vec![],
        expected: vec![],
        deletes: vec![],
        puts: vec![row.clone()],
        ..Default::default()
    };
    let r = store.transact(&[], Durability::Strict, |_| Some(seed)).await.unwrap();
    assert_eq!(r, Some(ReplaceOutcome::Committed));
    let scope = vec![Scope::target("o", "t")];
    let read = store.read(&scope).await.unwrap();
    let attempts = (0..8).map(|i| {
        let (store, scope, read) = (store.clone(), scope.clone(), read.clone());
        async move {
            store
                .transact(&scope.clone(), Durability::Default, move |current| {
                    // Planned from the row as re-read inside the transaction (a counter bump),
                    // expecting the state all eight read before: only the first can match.
                    let mut put = current.first()?.clone();
                    put["body"]["n"] = json!(put["body"]["n"].as_i64()? + 1);
                    put["body"]["writer"] = json!(i);
                    Some(ReplacePlan {
                        scopes: scope,
                        expected: read,
                        deletes: vec![],
                        puts: vec![put],
                        ..Default::default()
                    })
                })
                .await
                .unwrap()
        }
    });
    let results = join_all(attempts).await;
    let committed = results.iter().filter(|r| **r == Some(ReplaceOutcome::Committed)).count();
    assert_eq!(committed, 1, "{results:?}");
    assert_eq!(results.iter().filter(|r| **r == Some(ReplaceOutcome::Stale)).count(), 7);
    let stored = all_rows(&store).await;
    let winner = results.iter().position(|r| *r == Some(ReplaceOutcome::Committed)).unwrap();
    assert_eq!(stored[0]["body"], json!({"n": 1, "writer": winner}), "one bump, by the one that committed");
}

#[wasm_bindgen_test]
async fn replace_with_a_stale_plan_writes_nothing() {
    let store = Store::open(&db_name("stale")).await.unwrap();
    let row =
        json!({"id": "r1", "owner": "o", "target": "t", "kind": "update", "body": {}, "savedAt": 1, "state": "queued"});
    let seed = ReplacePlan { puts: vec![row.clone()], ..ReplacePlan::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    let mut wrong = row.clone();
    wrong["state"] = json!("sending");
    let plan = ReplacePlan {
        scopes: vec![Scope::target("o", "t")],
        expected: vec![wrong],
        deletes: vec!["r1".into()],
        puts: vec![json!({"id": "r2", "owner": "o", "target": "t"})],
        ..Default::default()
    };
    let r = store.transact(&[Scope::target("o", "t")], Durability::Default, |_| Some(plan)).await.unwrap();
    assert_eq!(r, Some(ReplaceOutcome::Stale));
    assert_eq!(all_rows(&store).await, vec![row]);
}

#[wasm_bindgen_test]
async fn older_writer_rows_and_unknown_fields_survive_a_round_trip() {
    let db = db_name("compat");
    let ob = open(&db, "tab-a").await;
    let store = Store::open(&db).await.unwrap();
    let old = json!({"id": "old-1", "owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1},
                     "savedAt": T0 as i64 - 50_000, "state": "sending", "sentAt": T0 as i64 - 60_000,
                     "futureField": {"deep": [1, {"x": null}]}});
    store
        .transact(&[], Durability::Default, |_| Some(ReplacePlan { puts: vec![old.clone()], ..Default::default() }))
        .await
        .unwrap();
    let rep = ok(ob.flush(flush_opts("alice", js_fn("op", "return {type: 'transient', code: 'HTTP_503'};")))).await;
    assert_eq!(rep["claimed"], 1);
    let row = &ok(ob.rows("alice".into())).await[0];
    assert_eq!(row["futureField"], old["futureField"]);
    assert_eq!(row["claim"]["fence"], 1);
    assert_eq!(row["claim"]["tabId"], "tab-a");
    assert_eq!(row["evidence"]["attemptCount"], 1);
    assert_eq!(row["evidence"]["lastErrorCode"], "HTTP_503");
    assert_eq!(row["writer"]["at"], json!(T0 as i64));
    assert_eq!(row["state"], "queued");
    assert_eq!(row["savedAt"], old["savedAt"]);
}

#[wasm_bindgen_test]
async fn enqueue_claim_ack_follow_the_contract() {
    let db = db_name("claim");
    let a = open(&db, "tab-a").await;
    let b = open(&db, "tab-b").await;
    let row = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 80}})),
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(row["state"], "queued");
    assert_eq!(row["fingerprint"].as_str().unwrap().len(), 64);
    let id: JsValue = row["id"].as_str().unwrap().into();

    let t1 = ok(a.claim("alice".into(), id.clone())).await;
    assert_eq!(t1, json!({"tabId": "tab-a", "fence": 1}));
    assert_eq!(ok(b.claim("alice".into(), id.clone())).await, Value::Null, "in flight: no second claim");
    assert_eq!(ok(b.claim("bob".into(), id.clone())).await, Value::Null, "another owner's row");

    // An edit while it is in flight becomes its successor.
    let succ = ok(b.enqueue(
        obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 81}})),
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(succ["successorOf"], row["id"]);

    // Lease over: B takes over with fence 2; A's late answers change nothing.
    advance(&db, 10_001.0);
    let t2 = ok(b.claim("alice".into(), id.clone())).await;
    assert_eq!(t2["fence"], 2);
    let before = ok(a.rows("alice".into())).await;
    let transient = obj(json!({"type": "transient", "code": "HTTP_500"}));
    assert_eq!(ok(a.ack("alice".into(), id.clone(), to_js(&t1), transient, JsValue::UNDEFINED)).await, "not-mine");
    let success = obj(json!({"type": "success", "receipt": {"revision": 2}}));
    assert_eq!(
        ok(a.ack("alice".into(), id.clone(), to_js(&t1), success.clone(), JsValue::UNDEFINED)).await,
        "not-mine"
    );
    assert_eq!(ok(a.rows("alice".into())).await, before);
    // A late permanent answer is an attempt of A's, but quarantines nothing (§12).
    let permanent = obj(json!({"type": "permanent", "code": "INVALID"}));
    assert_eq!(ok(a.ack("alice".into(), id.clone(), to_js(&t1), permanent, JsValue::UNDEFINED)).await, "not-mine");
    let m = ok(a.metrics("alice".into())).await;
    assert_eq!((m["attempts"]["permanent"].clone(), m["permanentFailures"].clone()), (json!(1), json!(0)));

    assert_eq!(ok(b.ack("alice".into(), id.clone(), to_js(&t2), success, JsValue::UNDEFINED)).await, "applied");
    let left = ok(a.rows("alice".into())).await;
    assert_eq!(left.as_array().unwrap().len(), 1, "only the successor is left");
    let m = ok(b.metrics("alice".into())).await;
    assert_eq!(m["attempts"]["success"], 1);
    assert_eq!(m["byState"]["queued"], 1);
}

#[wasm_bindgen_test]
async fn flush_drains_successors_and_intents_in_one_call() {
    let db = db_name("flush");
    let a = open(&db, "tab-a").await;
    let c = ok(a.enqueue(obj(json!({"owner": "alice", "kind": "create", "body": {"name": "x"}})), JsValue::UNDEFINED))
        .await;
    let target = c["target"].as_str().unwrap().to_owned();
    assert_eq!(target, format!("pending:{}", c["id"].as_str().unwrap()));
    // Another tab claims the create by hand (outcome unknown), so the edit becomes an
    // intent. (This tab's own claim would keep its flushes off the record until its `ack`,
    // §8: one tab never has two attempts of a row outstanding.)
    let b = open(&db, "tab-b").await;
    let ticket = ok(b.claim("alice".into(), c["id"].as_str().unwrap().into())).await;
    let u = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": target, "kind": "update", "body": {"name": "y"}})),
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(u["successorOf"], c["id"]);
    // Tab b's answer never came; later its lease ends and tab a's flush resends it.
    let _ = ticket;
    advance(&db, 10_001.0);
    let sent = js_sys::Array::new();
    let sent2 = sent.clone();
    let send = Closure::<dyn FnMut(JsValue) -> JsValue>::new(move |op: JsValue| {
        sent2.push(&op);
        let kind = Reflect::get(&op, &"kind".into()).unwrap().as_string().unwrap();
        let receipt =
            if kind == "create" { json!({"serverId": "rec:9", "revision": 1}) } else { json!({"revision": 2}) };
        obj(json!({"type": "success", "receipt": receipt}))
    })
    .into_js_value();
    let o = flush_opts("alice", send);
    set(
        &o,
        "prepareSuccessor",
        &js_fn("a", "return {target: a.receipt.serverId, body: a.intent.body, revision: a.receipt.revision};"),
    );
    let rep = ok(a.flush(o)).await;
    assert_eq!((rep["succeeded"].clone(), rep["converted"].clone()), (json!(2), json!(1)));
    let sent: Vec<Value> = sent.iter().map(|v| from_js(&v, "op").unwrap()).collect();
    assert_eq!(sent[0]["id"], c["id"]);
    assert_eq!(sent[0]["attempt"], 2);
    assert_eq!(sent[1]["id"], u["id"]);
    assert_eq!(sent[1]["target"], "rec:9");
    assert_eq!(sent[1]["revision"], 1);
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}

#[wasm_bindgen_test]
async fn undecodable_rows_are_left_untouched_and_reported() {
    let db = db_name("undecodable");
    let a = open(&db, "tab-a").await;
    let store = Store::open(&db).await.unwrap();
    let bad = json!({"id": "bad", "owner": "alice", "target": "w:1", "kind": "upsert", "state": "queued", "savedAt": 1, "body": {}});
    let orphan = json!({"id": "noowner", "savedAt": 2});
    let seed = ReplacePlan { puts: vec![bad.clone(), orphan.clone()], ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    ok(a.enqueue(obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED))
        .await;
    ok(a.flush(flush_opts("alice", js_fn("op", "return {type: 'success', receipt: {}};")))).await;
    assert_eq!(ok(a.purge_owner("alice".into())).await, 0);
    let stored = all_rows(&store).await;
    assert!(stored.contains(&bad) && stored.contains(&orphan) && stored.len() == 2, "{stored:?}");
    let und = ok(a.undecodable()).await;
    assert_eq!(und.as_array().unwrap().len(), 2);
    // Each entry a plain object with these keys in this order; an owner that cannot be
    // read is `null`, not absent.
    let und_js: js_sys::Array = settle(a.undecodable()).await.unwrap().unchecked_into();
    for entry in und_js.iter() {
        let entry: Object = entry.unchecked_into();
        let keys: Vec<String> = Object::keys(&entry).iter().map(|k| k.as_string().unwrap()).collect();
        assert_eq!(keys, ["id", "owner", "undecodable", "error", "raw"]);
        let plain = js("e", "return Object.getPrototypeOf(e) === Object.prototype;").call1(&JsValue::NULL, &entry);
        assert_eq!(plain.unwrap(), JsValue::TRUE);
    }
    let orphan_entry = und.as_array().unwrap().iter().find(|e| e["id"] == "noowner").unwrap();
    assert_eq!(orphan_entry["owner"], Value::Null);
    assert_eq!(orphan_entry["raw"], orphan);
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["undecodable"], true);
    assert_eq!(rows[0]["error"], "unknown kind `upsert`");
    assert_eq!(rows[0]["owner"], "alice");
    let m = ok(a.metrics(JsValue::UNDEFINED)).await;
    assert_eq!((m["undecodable"].clone(), m["total"].clone()), (json!(2), json!(0)));
    assert_eq!(ok(a.discard(JsValue::NULL, "noowner".into(), JsValue::UNDEFINED)).await, true);
    assert_eq!(ok(a.discard("bob".into(), "bad".into(), JsValue::UNDEFINED)).await, false);
    assert_eq!(ok(a.discard("alice".into(), "bad".into(), JsValue::UNDEFINED)).await, true);
    assert!(all_rows(&store).await.is_empty());
}

/// Seeds alice's good row, alice's value whose `savedAt` is no key (so no `[owner,
/// savedAt]` index entry), bob's row and a value without an owner; then checks what
/// `rows("alice")` and `metrics("alice")` see.
async fn assert_owner_reads(db: &str, a: &Outbox) {
    let store = Store::open(db).await.unwrap();
    let good = json!({"id": "good", "owner": "alice", "target": "w:1", "kind": "update", "state": "queued", "savedAt": 5, "body": {}});
    let bad = json!({"id": "bad", "owner": "alice", "target": "w:2", "kind": "update", "state": "queued", "savedAt": "soon", "body": {}});
    let bobs = json!({"id": "bobs", "owner": "bob", "target": "w:1", "kind": "update", "state": "queued", "savedAt": 1, "body": {}});
    let orphan = json!({"id": "noowner", "savedAt": 2});
    let seed = ReplacePlan { puts: vec![good, bad, bobs, orphan], ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(seed)).await.unwrap();
    let rows = ok(a.rows("alice".into())).await;
    let ids: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    // A value without a usable `savedAt` sorts first (§3 order of stored values).
    assert_eq!(ids, vec!["bad", "good"], "alice's values only, the undecodable one included: {rows}");
    assert_eq!(rows[0]["undecodable"], true);
    let m = ok(a.metrics("alice".into())).await;
    assert_eq!((m["total"].clone(), m["undecodable"].clone()), (json!(1), json!(1)));
    let all = ok(a.metrics(JsValue::UNDEFINED)).await;
    assert_eq!((all["total"].clone(), all["undecodable"].clone()), (json!(2), json!(2)));
}

#[wasm_bindgen_test]
async fn an_owners_rows_and_metrics_are_read_through_its_index_undecodable_values_included() {
    let db = db_name("owner-index");
    let a = open(&db, "tab-a").await;
    assert_owner_reads(&db, &a).await;
}

#[wasm_bindgen_test]
async fn without_the_owner_index_a_newer_schema_is_read_whole_and_still_filtered() {
    // A newer version upgraded the database to version 10 and has no `byOwner` index.
    let db = db_name("no-owner-index");
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(name, 10);
        r.onupgradeneeded = () => {
            const s = r.result.createObjectStore('outbox', { keyPath: 'id' });
            s.createIndex('byOwnerTarget', ['owner', 'target']);
            s.createIndex('byOwnerSavedAt', ['owner', 'savedAt']);
        };
        r.onsuccess = () => { r.result.close(); ok(); }; r.onerror = () => err(r.error); });";
    let made: Promise = js("name", script).call1(&JsValue::NULL, &db.as_str().into()).unwrap().unchecked_into();
    settle(made).await.unwrap();
    let a = open(&db, "tab-a").await;
    assert_owner_reads(&db, &a).await;
}

#[wasm_bindgen_test]
async fn bad_arguments_give_coded_errors_and_write_nothing() {
    let db = db_name("badargs");
    let a = open(&db, "tab-a").await;
    let store = Store::open(&db).await.unwrap();
    let bad_ops = [
        json!({"target": "w:1", "kind": "update", "body": {}}),
        json!({"owner": "alice", "target": "w:1", "kind": "upsert", "body": {}}),
        json!({"owner": "alice", "target": "w:1", "kind": "update", "body": null}),
        json!({"owner": "alice", "kind": "update", "body": {}}),
        json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}, "revision": {"v": 1}}),
    ];
    for op in bad_ops {
        assert_eq!(code_of(a.enqueue(obj(op), JsValue::UNDEFINED)).await, "INVALID_ARGUMENT");
    }
    let cyclic = Object::new();
    set(&cyclic, "owner", &"alice".into());
    set(&cyclic, "kind", &"create".into());
    set(&cyclic, "body", &js_fn("", "return 1;"));
    assert_eq!(code_of(a.enqueue(cyclic.into(), JsValue::UNDEFINED)).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.rows("".into())).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.rows(JsValue::from(3))).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.claim("alice".into(), JsValue::UNDEFINED)).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.flush(obj(json!({"owner": "alice"})))).await, "INVALID_ARGUMENT");
    let bad_ticket = obj(json!({"tab": 1}));
    let outcome = obj(json!({"type": "success", "receipt": {}}));
    assert_eq!(
        code_of(a.ack("alice".into(), "x".into(), bad_ticket, outcome, JsValue::UNDEFINED)).await,
        "INVALID_ARGUMENT"
    );
    let ticket = obj(json!({"tabId": "t", "fence": 1}));
    assert_eq!(
        code_of(a.ack("alice".into(), "x".into(), ticket, obj(json!({"type": "maybe"})), JsValue::UNDEFINED)).await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(code_of(a.resume_held(JsValue::NULL)).await, "INVALID_ARGUMENT");
    assert_eq!(
        code_of(a.retry_blocked("alice".into(), "x".into(), js_fn("", ""), JsValue::UNDEFINED)).await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(code_of(a.discard("".into(), "x".into(), JsValue::UNDEFINED)).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.purge_owner(JsValue::UNDEFINED)).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(a.metrics(JsValue::from(false))).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(Outbox::open(obj(json!({"dbName": ""})))).await, "INVALID_ARGUMENT");
    assert_eq!(code_of(Outbox::open(obj(json!({"dbName": "x", "leaseMs": -1})))).await, "INVALID_ARGUMENT");
    // Longer than a timer waits: claims would expire past what a row can hold.
    assert_eq!(
        code_of(Outbox::open(obj(json!({"dbName": "x", "leaseMs": 2_147_483_648u64})))).await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        code_of(Outbox::open(obj(json!({"dbName": "x", "backoff": {"capMs": 1e19}})))).await,
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        code_of(Outbox::open(obj(json!({"dbName": "x", "backoff": {"baseMs": 3e9}})))).await,
        "INVALID_ARGUMENT"
    );
    let invalid = "INVALID_ARGUMENT";
    let classify = outbox_idb::classify_http_js;
    assert_eq!(sync_code(classify("x".into(), JsValue::UNDEFINED, JsValue::NULL, JsValue::UNDEFINED)), invalid);
    assert_eq!(sync_code(classify(200.into(), JsValue::from(5), JsValue::NULL, JsValue::UNDEFINED)), invalid);
    let select = outbox_idb::select_sendable_js;
    assert_eq!(
        sync_code(select(JsValue::from(1), "t".into(), T0.into(), JsValue::UNDEFINED, JsValue::UNDEFINED)),
        invalid
    );
    assert_eq!(
        sync_code(select(
            js_sys::Array::new().into(),
            JsValue::NULL,
            T0.into(),
            JsValue::UNDEFINED,
            JsValue::UNDEFINED
        )),
        invalid
    );
    assert_eq!(sync_code(outbox_idb::is_row_in_flight_js(obj(json!({})), "soon".into(), JsValue::UNDEFINED)), invalid);
    assert_eq!(sync_code(a.subscribe(JsValue::from(1))), invalid);
    assert!(all_rows(&store).await.is_empty(), "nothing was written");
    a.close();
    assert_eq!(code_of(a.rows("alice".into())).await, "CLOSED");
}

#[wasm_bindgen_test]
async fn opening_upgrades_an_earlier_schema_without_losing_rows() {
    let db = db_name("upgrade");
    // Version 1 of the schema, written with rexie as an older app did: the store without
    // indexes, holding one row and an index of its own that this version does not know.
    let old = rexie::Rexie::builder(&db)
        .version(1)
        .add_object_store(
            rexie::ObjectStore::new("outbox").key_path("id").add_index(rexie::Index::new("legacyIndex", "legacy")),
        )
        .build()
        .await
        .unwrap();
    let tx = old.transaction(&["outbox"], rexie::TransactionMode::ReadWrite).unwrap();
    let row = json!({"id": "v1", "owner": "alice", "target": "w:1", "kind": "update", "body": {}, "savedAt": 1, "state": "queued", "legacy": 1});
    tx.store("outbox").unwrap().put(&obj(row), None).await.unwrap();
    tx.done().await.unwrap();
    old.close();
    let a = open(&db, "tab-a").await;
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["id"], "v1");
    let rep = ok(a.flush(flush_opts("alice", js_fn("op", "return {type: 'success', receipt: {}};")))).await;
    assert_eq!(rep["succeeded"], 1, "the new [owner, savedAt] index finds the old row");
    // The older app's own index survived the upgrade.
    let script = format!(
        "return new Promise((ok) => {{ const r = indexedDB.open('{db}'); r.onsuccess = () => {{
            const names = [...r.result.transaction('outbox').objectStore('outbox').indexNames]; r.result.close(); ok(names.join(',')); }}; }});"
    );
    let names = settle(Function::new_no_args(&script).call0(&JsValue::NULL).unwrap().unchecked_into()).await.unwrap();
    assert_eq!(names.as_string().unwrap(), "byOwner,byOwnerSavedAt,byOwnerTarget,legacyIndex");
}

#[wasm_bindgen_test]
async fn another_tabs_upgrade_is_not_blocked_and_this_tab_reopens() {
    let db = db_name("versionchange");
    let a = open(&db, "tab-a").await;
    ok(a.enqueue(obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED))
        .await;
    let script = format!(
        "return new Promise((ok, err) => {{
            const r = indexedDB.open('{db}', 50);
            r.onblocked = () => err(new Error('blocked'));
            r.onsuccess = () => {{ r.result.close(); ok('upgraded'); }};
            r.onerror = () => err(r.error);
        }});"
    );
    let v = settle(Function::new_no_args(&script).call0(&JsValue::NULL).unwrap().unchecked_into()).await;
    assert_eq!(v.unwrap().as_string().as_deref(), Some("upgraded"));
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows.as_array().unwrap().len(), 1, "reopened at the newer version, rows intact");
}

#[wasm_bindgen_test]
async fn subscribe_hears_changes_and_unsubscribe_stops_it() {
    let db = db_name("subscribe");
    let a = open(&db, "tab-a").await;
    let heard = js_sys::Array::new();
    let h = heard.clone();
    let cb = Closure::<dyn FnMut(JsValue)>::new(move |n: JsValue| {
        h.push(&n);
    })
    .into_js_value();
    let unsubscribe: Function = a.subscribe(cb).unwrap().unchecked_into();
    ok(a.enqueue(obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED))
        .await;
    assert_eq!(heard.length(), 1);
    assert_eq!(from_js(&heard.get(0), "n").unwrap()["change"], "enqueue");
    unsubscribe.call0(&JsValue::NULL).unwrap();
    ok(a.enqueue(obj(json!({"owner": "alice", "target": "w:2", "kind": "update", "body": {}})), JsValue::UNDEFINED))
        .await;
    assert_eq!(heard.length(), 1);
    // A second call (an effect's cleanup run twice, say) does nothing and does not throw.
    unsubscribe.call0(&JsValue::NULL).expect("unsubscribing again is harmless");
}

#[wasm_bindgen_test]
fn classify_http_reads_headers_objects_and_retry_after() {
    let headers = obj(json!({"Retry-After": "3"}));
    let out =
        from_js(&outbox_idb::classify_http_js(503.into(), headers, JsValue::NULL, T0.into()).unwrap(), "o").unwrap();
    assert_eq!(out, json!({"type": "transient", "code": "HTTP_503", "retryAfterMs": 3000}));
    // A plain object's header may be a number: read as JavaScript writes it.
    let headers = obj(json!({"Retry-After": 4}));
    let out =
        from_js(&outbox_idb::classify_http_js(503.into(), headers, JsValue::NULL, T0.into()).unwrap(), "o").unwrap();
    assert_eq!(out, json!({"type": "transient", "code": "HTTP_503", "retryAfterMs": 4000}));
    let h = web_sys_headers(&[("idempotent-replayed", "true")]);
    let out =
        from_js(&outbox_idb::classify_http_js(200.into(), h, obj(json!({"id": 1})), JsValue::UNDEFINED).unwrap(), "o")
            .unwrap();
    assert_eq!(out, json!({"type": "success", "receipt": {"id": 1}, "replayed": true}));
}

fn web_sys_headers(pairs: &[(&str, &str)]) -> JsValue {
    let ctor: Function = Reflect::get(&js_sys::global(), &"Headers".into()).unwrap().unchecked_into();
    let h: JsValue = Reflect::construct(&ctor, &js_sys::Array::new()).unwrap();
    let append: Function = Reflect::get(&h, &"append".into()).unwrap().unchecked_into();
    for (k, v) in pairs {
        append.call2(&h, &(*k).into(), &(*v).into()).unwrap();
    }
    h
}

/// An engine older than the `durability` option (Safari before it, older Firefox):
/// `transaction()` takes only (stores, mode) and its transactions have no `durability`.
/// Strict writes then commit with the engine's default flush: no exception, and claims and
/// answers work as anywhere (they rest on the transaction being all or nothing).
#[wasm_bindgen_test]
async fn an_engine_without_durability_commits_with_its_default() {
    let db = db_name("no-durability");
    let engine = js(
        "db",
        "const orig = IDBDatabase.prototype.transaction;
        const desc = Object.getOwnPropertyDescriptor(IDBTransaction.prototype, 'durability');
        const offered = [];
        IDBDatabase.prototype.transaction = function (stores, mode) {
            if (this.name === db) offered.push(arguments.length > 2);
            return orig.call(this, stores, mode);
        };
        if (desc) delete IDBTransaction.prototype.durability;
        return {offered, restore: () => {
            IDBDatabase.prototype.transaction = orig;
            if (desc) Object.defineProperty(IDBTransaction.prototype, 'durability', desc);
        }};",
    )
    .call1(&JsValue::NULL, &db.as_str().into())
    .unwrap();
    let a = Outbox::open_with(options(&db, "tab-a")).await;
    let outcome = match &a {
        Ok(a) => {
            let row = settle(a.enqueue(
                obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1}})),
                JsValue::UNDEFINED,
            ))
            .await;
            let rep = settle(a.flush(flush_opts("alice", js_fn("op", "return {type: 'success', receipt: {}};")))).await;
            let left = settle(a.rows("alice".into())).await;
            Ok((row, rep, left))
        }
        Err(e) => Err(e.clone()),
    };
    js("e", "e.restore();").call1(&JsValue::NULL, &engine).unwrap();
    let (row, rep, left) = outcome.expect("opens");
    assert_eq!(from_js(&row.expect("enqueue commits"), "row").unwrap()["state"], "queued");
    let rep = from_js(&rep.expect("flush runs"), "report").unwrap();
    assert_eq!((rep["claimed"].clone(), rep["succeeded"].clone()), (json!(1), json!(1)));
    assert_eq!(left.expect("rows").unchecked_into::<js_sys::Array>().length(), 0);
    let offered = from_js(&get(&engine, "offered"), "offered").unwrap();
    assert!(offered.as_array().unwrap().contains(&json!(true)), "strict was asked for: {offered}");
}

/// Tab A of `db`, with updates of `w:1`, `w:2` and `w:3` queued for alice.
async fn three_updates(db: &str) -> Outbox {
    let a = open(db, "tab-a").await;
    for t in ["w:1", "w:2", "w:3"] {
        ok(a.enqueue(
            obj(json!({"owner": "alice", "kind": "update", "target": t, "body": {"x": 1}})),
            JsValue::UNDEFINED,
        ))
        .await;
    }
    a
}

#[wasm_bindgen_test]
async fn flush_claims_nothing_from_its_deadline_on_and_leaves_the_rest_queued() {
    let db = db_name("deadline");
    let a = three_updates(&db).await;
    // Each send takes a second of the outbox's clock; the deadline is half a second away, so
    // the first send is made and answered, and no other row goes out after it: the one
    // claimed ahead of its send is released, the third is never claimed.
    let clock = db.clone();
    let send = Closure::<dyn FnMut(JsValue) -> JsValue>::new(move |_op: JsValue| {
        advance(&clock, 1_000.0);
        obj(json!({"type": "success", "receipt": null}))
    })
    .into_js_value();
    let o = flush_opts("alice", send.clone());
    set(&o, "deadline", &(T0 + 500.0).into());
    set(&o, "concurrency", &1.into());
    let rep = ok(a.flush(o)).await;
    assert_eq!(
        (rep["claimed"].clone(), rep["succeeded"].clone(), rep["released"].clone()),
        (json!(1), json!(1), json!(1))
    );
    let left = ok(a.rows("alice".into())).await;
    assert_eq!(left.as_array().unwrap().len(), 2);
    // Queued, never attempted, and not in flight: a released claim ends when it is released.
    let free = |r: &Value| r.get("claim").is_none_or(|c| c["expiresAt"].as_f64() <= Some(T0 + 1_000.0));
    assert!(
        left.as_array().unwrap().iter().all(|r| r["state"] == "queued" && r.get("evidence").is_none() && free(r)),
        "{left}"
    );
    // A deadline that is not a time is refused.
    let bad = flush_opts("alice", send);
    set(&bad, "deadline", &f64::NAN.into());
    assert_eq!(code_of(a.flush(bad)).await, "INVALID_ARGUMENT");
}

#[wasm_bindgen_test]
async fn a_claim_committed_after_the_deadline_sends_nothing() {
    // §8: the flush's clock is read when a write commits, not only when it is planned. Sends
    // answer at once, one at a time (concurrency 1): the first answer lets the row claimed
    // ahead go and asks for a claim of the third row, written with the first answer's ACK.
    // That ACK's `reconcile`, inside the transaction, moves the clock past the deadline: the
    // claim was planned before it and commits after it, and its row must not go out.
    let db = db_name("deadline-commit");
    let a = three_updates(&db).await;
    let key = format!("clock_{}", db.replace('-', "_"));
    let o = flush_opts("alice", js_fn("op", "return {type: 'success', receipt: null};"));
    let late = format!("globalThis.{key} = Math.max(globalThis.{key}, {}); return [];", T0 + 1_000.0);
    set(&o, "reconcile", &js_fn("a", &late));
    set(&o, "deadline", &(T0 + 500.0).into());
    set(&o, "concurrency", &1.into());
    let rep = ok(a.flush(o)).await;
    assert_eq!(
        (rep["claimed"].clone(), rep["succeeded"].clone(), rep["released"].clone()),
        (json!(2), json!(2), json!(1)),
        "{rep}"
    );
    let left = ok(a.rows("alice".into())).await;
    let left = left.as_array().unwrap();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0]["state"] == "queued" && left[0].get("evidence").is_none(), "never sent: {left:?}");
}

#[wasm_bindgen_test]
async fn the_longest_lease_and_backoff_are_accepted() {
    let db = db_name("longest-lease");
    let o = options(&db, "tab-a");
    set(&o, "leaseMs", &3_600_000.0.into()); // one hour: a longer one is refused (§5)
    set(&o, "backoff", &obj(json!({"baseMs": 2_147_483_647.0, "capMs": 2_147_483_647.0})));
    let a = Outbox::open_with(o).await.expect("open");
    let row = ok(
        a.enqueue(obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED)
    )
    .await;
    let ticket = ok(a.claim("alice".into(), row["id"].as_str().unwrap().into())).await;
    assert!(ticket.is_object(), "{ticket}");
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["claim"]["expiresAt"].as_f64(), Some(T0 + 3_600_000.0));
    assert_eq!(ok(a.metrics(JsValue::UNDEFINED)).await["undecodable"], 0);
    let longer = options(&db_name("longer-lease"), "tab-a");
    set(&longer, "leaseMs", &3_600_001.0.into());
    assert_eq!(sync_code(Outbox::open_with(longer).await.map(|_| ()).map_err(JsValue::from)), "INVALID_ARGUMENT");
}

#[wasm_bindgen_test]
async fn a_clock_reading_that_is_no_instant_is_replaced_by_date_now() {
    // NaN cast to a row's instant was 1970 (every claim expired at once for the other tabs);
    // 1e19 was past what a row holds (the row written was undecodable, never sent).
    for (i, reading) in ["NaN", "Infinity", "-Infinity", "1e19", "-1e19", "'soon'"].iter().enumerate() {
        let db = db_name(&format!("odd-clock-{i}"));
        let o = obj(json!({"dbName": db, "tabId": "tab-a"}));
        set(&o, "now", &js_fn("", &format!("return {reading};")));
        let a = Outbox::open_with(o).await.expect("open");
        let before = js_sys::Date::now();
        let row = ok(a.enqueue(
            obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})),
            JsValue::UNDEFINED,
        ))
        .await;
        let at = row["savedAt"].as_f64().unwrap();
        assert!(at >= before.floor() && at <= js_sys::Date::now(), "{reading}: savedAt {at}");
        let rows = ok(a.rows("alice".into())).await;
        assert_eq!(rows.as_array().unwrap().len(), 1);
        assert_eq!(rows[0].get("undecodable"), None, "{reading}: {rows}");
        a.close();
    }
}

/// §12: `permanentFailures` counts the rows this tab's answers quarantined, when they are
/// written blocked: a permanent answer and a conflict without a usable revision (§9).
#[wasm_bindgen_test]
async fn permanent_failures_count_the_rows_a_flush_blocked() {
    let db = db_name("metrics-permanent");
    let a = open(&db, "tab-a").await;
    for t in ["w:1", "w:2", "w:3"] {
        ok(a.enqueue(obj(json!({"owner": "alice", "target": t, "kind": "update", "body": {}})), JsValue::UNDEFINED))
            .await;
    }
    let send = "return op.target === 'w:1' ? {type: 'permanent', code: 'INVALID'}
              : op.target === 'w:2' ? {type: 'conflict', actualRevision: null}
              : {type: 'success', receipt: {}};";
    let rep = ok(a.flush(flush_opts("alice", js_fn("op", send)))).await;
    assert_eq!((rep["blocked"].clone(), rep["succeeded"].clone()), (json!(2), json!(1)), "{rep}");
    let m = ok(a.metrics("alice".into())).await;
    assert_eq!(m["permanentFailures"], 2, "{m}");
    assert_eq!(m["byState"]["blocked"], 2, "{m}");
}

/// §12: an `ack()` of a permanent answer by the claim's own tab quarantines the row, and
/// counts it.
#[wasm_bindgen_test]
async fn an_ack_of_a_permanent_answer_counts_a_permanent_failure() {
    let db = db_name("metrics-ack-permanent");
    let a = open(&db, "tab-a").await;
    let row = ok(
        a.enqueue(obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED)
    )
    .await;
    let id = row["id"].as_str().unwrap().to_owned();
    let ticket = ok(a.claim("alice".into(), id.clone().into())).await;
    let permanent = obj(json!({"type": "permanent", "code": "INVALID"}));
    assert_eq!(ok(a.ack("alice".into(), id.into(), to_js(&ticket), permanent, JsValue::UNDEFINED)).await, "applied");
    let m = ok(a.metrics("alice".into())).await;
    assert_eq!((m["permanentFailures"].clone(), m["byState"]["blocked"].clone()), (json!(1), json!(1)), "{m}");
}
