//! `merge: false` through the JS API (SPEC §7): commands are stored as `noMerge` rows,
//! chained, and sent one at a time in order; a `merge` that is not a boolean is refused.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect};
use outbox_idb::convert::from_js;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn command(n: i64) -> JsValue {
    obj(
        json!({"owner": "alice", "target": "workout:1", "kind": "update", "body": {"append": {"reps": n}}, "merge": false}),
    )
}

#[wasm_bindgen_test]
async fn s7_two_merge_false_updates_are_two_rows_chained_and_sent_in_order() {
    let db = db_name("no-merge");
    let a = open(&db, "tab-a").await;
    let first = ok(a.enqueue(command(5), JsValue::UNDEFINED)).await;
    let second = ok(a.enqueue(command(8), JsValue::UNDEFINED)).await;
    assert_eq!(first["noMerge"], true);
    assert_eq!(second["noMerge"], true);
    assert_ne!(first["id"], second["id"], "two rows, not one merged");
    assert_eq!(second["successorOf"], first["id"]);
    assert_eq!(second["body"], json!({"append": {"reps": 8}}), "its own body, nothing folded in");
    assert_eq!(ok(a.rows("alice".into())).await.as_array().unwrap().len(), 2);

    let sent = Array::new();
    let sent2 = sent.clone();
    let send = Closure::<dyn FnMut(JsValue) -> JsValue>::new(move |op: JsValue| {
        sent2.push(&op);
        obj(json!({"type": "success", "receipt": {"n": sent2.length()}}))
    })
    .into_js_value();
    let o = obj(json!({"owner": "alice"}));
    set(&o, "send", &send);
    let rep = ok(a.flush(o)).await;
    assert_eq!(rep["succeeded"], 2);
    let sent: Vec<Value> = sent.iter().map(|v| from_js(&v, "op").unwrap()).collect();
    let ids: Vec<&Value> = sent.iter().map(|s| &s["id"]).collect();
    assert_eq!(ids, vec![&first["id"], &second["id"]], "in enqueue order");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}

#[wasm_bindgen_test]
async fn s3_a_merge_that_is_not_a_boolean_is_refused() {
    let db = db_name("no-merge-bad");
    let a = open(&db, "tab-a").await;
    let bad = obj(json!({"owner": "alice", "target": "t", "kind": "update", "body": {}, "merge": "no"}));
    let err = settle(a.enqueue(bad, JsValue::UNDEFINED)).await.expect_err("refused");
    let (code, message) = coded(&err);
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("merge"), "{message}");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]), "nothing written");
    let _ = Reflect::get(&err, &"code".into());
}
