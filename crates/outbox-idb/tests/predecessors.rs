//! A successor whose predecessor the flush's read of the owner's queue does not list
//! (SPEC §3 rule 3, §8, §11): an undecodable predecessor outside the `[owner, savedAt]`
//! index holds it, another owner's row does not, and either way the flush ends. Both once
//! made the claim look stale for good, so the flush started its round again and again
//! (about 800 transactions a second) and never settled.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Puts `rows` into the outbox store of `db` directly, as another writer would.
async fn put_raw(db: &str, rows: Value) {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const tx = r.result.transaction('outbox', 'readwrite');
          for (const row of rows) tx.objectStore('outbox').put(row);
          tx.oncomplete = () => { r.result.close(); ok(); }; tx.onerror = () => err(tx.error); }; });";
    let p: Promise = js("db, rows", script).call2(&JsValue::NULL, &db.into(), &obj(rows)).unwrap().unchecked_into();
    settle(p).await.expect("raw put");
}

/// A flush of these few rows takes well under a second; the looping flush this guards
/// against never ends. (3 s was once too short for a debug build in Firefox on a busy
/// machine: 10 s.)
const FLUSH_ENDS_MS: u32 = 10_000;

/// Flushes alice's rows with a `send` that records the ids it is given and succeeds.
async fn flush_alice(a: &outbox_idb::Outbox) -> (Value, Vec<String>) {
    js("", "globalThis.__sent = [];").call0(&JsValue::NULL).unwrap();
    let opts = obj(json!({"owner": "alice"}));
    set(&opts, "send", &js_fn("op", "globalThis.__sent.push(op.id); return {type: 'success', receipt: {}};"));
    let report = within(a.flush(opts), FLUSH_ENDS_MS).await.expect("the flush ends").expect("the flush succeeds");
    let sent = js("", "return globalThis.__sent;").call0(&JsValue::NULL).unwrap();
    let sent = Array::from(&sent).iter().map(|v| v.as_string().unwrap()).collect();
    (outbox_idb::convert::from_js(&report, "report").unwrap(), sent)
}

fn row(id: &str, owner: &str, target: &str, saved_at: Value, successor_of: Option<&str>) -> Value {
    let mut r = json!({"id": id, "owner": owner, "target": target, "kind": "update", "body": {},
                       "savedAt": saved_at, "state": "queued"});
    if let Some(p) = successor_of {
        r["successorOf"] = json!(p);
    }
    r
}

#[wasm_bindgen_test]
async fn an_undecodable_predecessor_outside_the_owners_queue_holds_its_successor_and_the_flush_ends() {
    let db = db_name("pred-undecodable");
    let a = open(&db, "tab-a").await;
    // `p`'s `savedAt` is text (a newer writer's format, say): it is undecodable, and not in
    // the `[owner, savedAt]` index the flush reads the owner's queue through.
    put_raw(
        &db,
        json!([row("p", "alice", "w:1", json!("2024-01-01"), None), row("s", "alice", "w:1", json!(5), Some("p"))]),
    )
    .await;
    ok(a.enqueue(
        obj(json!({"owner": "alice", "target": "w:2", "kind": "update", "body": {"n": 1}})),
        JsValue::UNDEFINED,
    ))
    .await;
    let (report, sent) = flush_alice(&a).await;
    assert_eq!(sent.len(), 1, "only the row of w:2 goes: {sent:?}");
    assert!(!sent.contains(&"s".to_owned()));
    assert_eq!(report["stale"], json!(0), "{report}");
    let ids: Vec<String> = Array::from(&settle(a.rows("alice".into())).await.unwrap())
        .iter()
        .map(|r| get(&r, "id").as_string().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "p and s stay: {ids:?}");
}

#[wasm_bindgen_test]
async fn another_owners_row_named_as_predecessor_holds_nothing_and_the_flush_ends() {
    let db = db_name("pred-other-owner");
    let a = open(&db, "tab-a").await;
    put_raw(&db, json!([row("p", "bob", "w:1", json!(1), None), row("s", "alice", "w:1", json!(5), Some("p"))])).await;
    let (report, sent) = flush_alice(&a).await;
    assert_eq!(sent, vec!["s".to_owned()], "bob's row is invisible to alice's flush (§11)");
    assert_eq!(report["stale"], json!(0), "{report}");
}
