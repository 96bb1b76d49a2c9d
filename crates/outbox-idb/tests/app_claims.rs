//! The app's own `claim` and `ack` (SPEC §6, §8): an answer is applied only with this tab's
//! own ticket, and a record this tab's flush is sending gets no second attempt from the app.
#![cfg(target_arch = "wasm32")]

use js_sys::Promise;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn enqueue(a: &outbox_idb::Outbox) -> String {
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"n": 1}}));
    ok(a.enqueue(op, JsValue::UNDEFINED)).await["id"].as_str().unwrap().to_owned()
}

fn success() -> JsValue {
    obj(json!({"type": "success", "receipt": {"serverId": "s1"}}))
}

async fn stored(a: &outbox_idb::Outbox) -> Vec<Value> {
    match ok(a.rows("alice".into())).await {
        Value::Array(rows) => rows,
        other => panic!("rows: {other}"),
    }
}

#[wasm_bindgen_test]
async fn an_answer_with_another_tabs_ticket_is_not_mine_and_changes_nothing() {
    let db = db_name("ack-foreign-ticket");
    let (a, b) = (open(&db, "tab-a").await, open(&db, "tab-b").await);
    let id = enqueue(&a).await;
    let ticket = ok(a.claim("alice".into(), id.clone().into())).await;
    assert_eq!(ticket["tabId"], json!("tab-a"));
    let before = stored(&a).await;

    let r = ok(b.ack("alice".into(), id.clone().into(), obj(ticket.clone()), success(), JsValue::UNDEFINED)).await;
    assert_eq!(r, json!("not-mine"), "tab-b cannot answer tab-a's claim");
    assert_eq!(stored(&a).await, before);

    let r = ok(a.ack("alice".into(), id.into(), obj(ticket), success(), JsValue::UNDEFINED)).await;
    assert_eq!(r, json!("applied"));
    assert_eq!(stored(&a).await, Vec::<Value>::new());
}

#[wasm_bindgen_test]
async fn a_record_this_tabs_flush_is_sending_is_not_claimed_by_the_app_even_after_the_lease() {
    let db = db_name("claim-outstanding");
    let (a, b) = (open(&db, "tab-a").await, open(&db, "tab-b").await);
    let id = enqueue(&a).await;
    // A send that answers only when the test says so.
    js("", "globalThis.__answer = null;").call0(&JsValue::NULL).unwrap();
    let opts = obj(json!({"owner": "alice"}));
    set(
        &opts,
        "send",
        &js_fn(
            "op",
            "return new Promise((done) => { globalThis.__answer = () => done({type: 'success', receipt: {}}); });",
        ),
    );
    let flush: Promise = a.flush(opts);
    while js("", "return globalThis.__answer === null;").call0(&JsValue::NULL).unwrap().is_truthy() {
        settle(js("", "return new Promise((done) => setTimeout(done, 5));").call0(&JsValue::NULL).unwrap().into())
            .await
            .unwrap();
    }
    // The send outlives its lease (10 s): the row is claimable again, by other tabs.
    advance(&db, 20_000.0);
    assert_eq!(ok(a.claim("alice".into(), id.clone().into())).await, Value::Null, "this tab's flush is sending it");
    let taken = ok(b.claim("alice".into(), id.into())).await;
    assert_eq!(taken["tabId"], json!("tab-b"), "another tab takes it over (§5)");

    js("", "globalThis.__answer();").call0(&JsValue::NULL).unwrap();
    settle(flush).await.expect("the flush ends");
}

#[wasm_bindgen_test]
async fn a_row_the_app_claimed_is_not_sent_by_a_flush_of_its_tab_until_the_app_answers() {
    // Issue 32 item 3: the app's send outlives the lease; a flush of the same tab must not
    // claim the row at fence 2 and send a second attempt (§8).
    let db = db_name("claim-held-by-app");
    let a = open(&db, "tab-a").await;
    let id = enqueue(&a).await;
    let ticket = ok(a.claim("alice".into(), id.clone().into())).await;
    assert_eq!(ticket["fence"], json!(1));
    advance(&db, 20_000.0); // past the lease
    js("", "globalThis.__sent = 0;").call0(&JsValue::NULL).unwrap();
    let send = js_fn("op", "globalThis.__sent += 1; return {type: 'success', receipt: {}};");
    let opts = obj(json!({"owner": "alice"}));
    set(&opts, "send", &send);
    let rep = ok(a.flush(opts.clone())).await;
    assert_eq!((rep["claimed"].clone(), rep["skipped"].clone()), (json!(0), json!(1)), "{rep}");
    assert_eq!(js("", "return globalThis.__sent;").call0(&JsValue::NULL).unwrap().as_f64(), Some(0.0));
    // The app's answer (a transient failure) frees the record; the next flush sends it.
    let transient = obj(json!({"type": "transient", "code": "NETWORK"}));
    assert_eq!(
        ok(a.ack("alice".into(), id.into(), obj(ticket), transient, JsValue::UNDEFINED)).await,
        json!("applied")
    );
    advance(&db, 400_000.0); // past the backoff
    let rep = ok(a.flush(opts)).await;
    assert_eq!(rep["succeeded"], json!(1), "{rep}");
}
