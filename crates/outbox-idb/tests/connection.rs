//! Storage failures in a real Chromium: a write that fails midway writes nothing (SPEC §4),
//! and a full disk has its own code.
#![cfg(target_arch = "wasm32")]

use js_sys::Reflect;
use outbox_core::ReplacePlan;
use outbox_idb::error::OutboxError;
use outbox_idb::idb::{Durability, Store};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn db_name(test: &str) -> String {
    format!("{test}-{}", uuid::Uuid::new_v4())
}

fn code(err: &JsValue) -> String {
    Reflect::get(err, &"code".into()).ok().and_then(|c| c.as_string()).unwrap_or_else(|| format!("no code: {err:?}"))
}

fn row(id: &str) -> Value {
    json!({"id": id, "owner": "o", "target": "t", "kind": "update", "body": {}, "savedAt": 1, "state": "queued"})
}

fn put(rows: Vec<Value>) -> ReplacePlan {
    ReplacePlan { puts: rows, ..ReplacePlan::default() }
}

// Item 13: a write that fails midway writes nothing; a full disk is `QUOTA`.

#[wasm_bindgen_test]
async fn a_write_that_fails_midway_writes_nothing() {
    let db = db_name("half-write");
    let store = Store::open(&db).await.unwrap();
    // The second put has no `id`, the store's key path: IndexedDB refuses it (DataError)
    // after the first put was issued in the same transaction.
    let no_key = json!({"owner": "o", "target": "t", "kind": "update", "body": {}, "savedAt": 2, "state": "queued"});
    let r = store.transact(&[], Durability::Strict, |_| Some(put(vec![row("first"), no_key]))).await;
    let err = r.expect_err("the write fails");
    assert_eq!(code(&err.into()), "STORAGE");
    assert_eq!(store.read_all().await.unwrap(), Vec::<Value>::new(), "the first put was not committed");
}

#[wasm_bindgen_test]
fn a_quota_exceeded_error_is_its_own_code() {
    // Filling a real disk in a test is impractical: the mapping is checked on the
    // DOMException IndexedDB raises when the origin's quota is used up.
    let full = web_sys::DomException::new_with_message_and_name("disk full", "QuotaExceededError").unwrap();
    assert_eq!(code(&OutboxError::storage("commit", &full).into()), "QUOTA");
    let other = web_sys::DomException::new_with_message_and_name("nope", "UnknownError").unwrap();
    assert_eq!(code(&OutboxError::storage("commit", &other).into()), "STORAGE");
}
