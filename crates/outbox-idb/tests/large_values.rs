//! A body as large as the app may give (§3 rule 4: at most 1,000,000 parts) is stored,
//! read back and sent whole: the walk of a stored row allows for the row around the body,
//! so nothing this library wrote reads back opaque (and so unsendable). Its own test file:
//! a million parts take seconds in a debug build.
#![cfg(target_arch = "wasm32")]

use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_body_at_the_size_limit_is_stored_and_sent_whole() {
    let db = db_name("large-body");
    let a = open(&db, "tab-a").await;
    let n = outbox_idb::convert::MAX_NODES - 2; // the body and its list are parts too
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    let body = js("n", "return { list: new Array(n).fill(0) };").call1(&JsValue::NULL, &(n as f64).into()).unwrap();
    set(&op, "body", &body);
    settle(a.enqueue(op, JsValue::UNDEFINED)).await.expect("stored");
    let send = "globalThis.largeSent = op.body.list.length; return { type: 'success', receipt: {} };";
    let report = ok(a.flush(flush_opts("alice", send))).await;
    assert_eq!(report["succeeded"], 1, "{report}");
    let sent = js("", "return globalThis.largeSent;").call0(&JsValue::NULL).unwrap();
    assert_eq!(sent.as_f64(), Some(n as f64), "the list went whole");
}

/// The budget counts every part, also one past a container whose own items fitted: a body
/// of exactly 1,000,000 parts is JSON, one more part after a full list is refused, naming
/// the limit (the walk's per-part count, not only each container's look ahead at its items).
#[wasm_bindgen_test]
fn one_part_past_a_full_list_is_over_the_limit() {
    let max = outbox_idb::convert::MAX_NODES;
    // The body, its `list` and `last` are parts: `len` items make `len + 3` in all.
    let body = |len: usize| {
        js("n", "return { list: new Array(n).fill(0), last: 0 };").call1(&JsValue::NULL, &(len as f64).into()).unwrap()
    };
    assert!(outbox_idb::convert::from_js(&body(max - 3), "body").is_ok(), "exactly at the limit");
    let err = outbox_idb::convert::from_js(&body(max - 2), "body").expect_err("one part over");
    assert!(err.message.contains("more than 1000000 parts"), "{}", err.message);
}
