//! A flush that fails part way (SPEC §6, §15): it rejects with its code, and the error
//! carries the report so far, so the receipt of an answer already applied (its row gone)
//! reaches the app.
#![cfg(target_arch = "wasm32")]

use serde_json::json;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn a_flush_that_fails_after_an_answer_was_applied_rejects_with_that_receipt_in_its_report() {
    let db = db_name("failed-flush");
    let a = Rc::new(open(&db, "tab-a").await);
    let mut ids = vec![];
    for n in [1, 2, 3] {
        let op = obj(json!({"owner": "alice", "kind": "create", "body": {"n": n}}));
        ids.push(ok(a.enqueue(op, JsValue::UNDEFINED)).await["id"].as_str().unwrap().to_owned());
    }
    // Concurrency 1: two rows claimed (one ahead of its send), both answered and their
    // answers written with the third row's claim. The third send closes the outbox before
    // it answers: applying that answer fails.
    let close = Closure::<dyn FnMut()>::new({
        let a = a.clone();
        move || a.close()
    });
    js_sys::Reflect::set(&js_sys::global(), &"__close".into(), close.as_ref()).unwrap();
    let opts = obj(json!({"owner": "alice", "concurrency": 1}));
    set(
        &opts,
        "send",
        &js_fn(
            "op",
            "globalThis.__sends = (globalThis.__sends || 0) + 1;
             if (globalThis.__sends === 3) globalThis.__close();
             return {type: 'success', receipt: {serverId: 'srv-' + op.id}};",
        ),
    );
    let err = settle(a.flush(opts)).await.expect_err("the flush fails");
    assert_eq!(coded(&err).0, "CLOSED");
    let report = outbox_idb::convert::from_js(&get(&err, "report"), "report").expect("the error carries a report");
    assert_eq!(report["succeeded"], json!(2), "{report}");
    let receipts = report["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 2, "{report}");
    // Rows of one `savedAt` go in id order: any two may be the first.
    let mut applied = vec![];
    for r in receipts {
        let id = r["id"].as_str().unwrap().to_owned();
        assert!(ids.contains(&id), "{report}");
        assert_eq!(r["receipt"]["serverId"], json!(format!("srv-{id}")), "{report}");
        applied.push(id);
    }
    // Those rows are gone (their answers applied), the third is still stored.
    let again = open(&db, "tab-b").await;
    let left = ok(again.rows("alice".into())).await;
    assert_eq!(left.as_array().map(|r| r.len()), Some(1), "{left}");
    assert!(!applied.iter().any(|id| left[0]["id"] == json!(id)), "{left}");
}
