//! Issue 34, the network's comings and goings, through the binding: `flush({offline: true})`
//! claims, attempts and changes nothing and resolves at once (§8 offline), and
//! `flush({onlineSince})` / `selectSendable(…, onlineSince)` send a row deferred by a network
//! failure at once once the network is back, while other rows keep their backoff (§10). The
//! report carries `offline` and `nextDueAt` (§8 when to flush next).
#![cfg(target_arch = "wasm32")]

use js_sys::Array;
use outbox_idb::convert::from_js;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Every stored row as JSON, in key order.
async fn stored(db: &str) -> Vec<Value> {
    let mut rows: Vec<Value> = raw_all(db).await.iter().map(|v| from_js(&v, "row").unwrap()).collect();
    rows.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    rows
}

/// Flush options whose `send` counts its calls in `globalThis[counter]` and answers `answer`
/// (a JS expression over `op`).
fn counting(owner: &str, counter: &str, answer: &str) -> JsValue {
    flush_opts(owner, &format!("globalThis.{counter} = (globalThis.{counter} || 0) + 1; return {answer};"))
}

fn sends(counter: &str) -> f64 {
    get(&js_sys::global(), counter).as_f64().unwrap_or(0.0)
}

/// SPEC §8 offline: nothing claimed, attempted or changed; the report is zeros with
/// `offline: true` and `nextDueAt: null`; and it resolves at once, though another tab's flush
/// holds the owner's turn (waited for, it would take `turnWaitMs`, 1000 ms).
#[wasm_bindgen_test]
async fn s8_an_offline_flush_writes_nothing_and_resolves_at_once() {
    let db = db_name("network-offline");
    let a = open(&db, "tab-a").await;
    let b = open(&db, "tab-b").await;
    // Tab b's flush claims alice's only row and holds her turn, its send never answering.
    enqueue_update(&a, "alice", "hold:1", json!({"n": 1})).await;
    let _held = b.flush(flush_opts("alice", "globalThis.networkHeld = true; return new Promise(() => {});"));
    while get(&js_sys::global(), "networkHeld").as_bool() != Some(true) {
        let _ = within(js_sys::Promise::new(&mut |_, _| {}), 10).await;
    }
    ok(a.enqueue(obj(json!({"owner": "alice", "kind": "create", "body": {"t": "milk"}})), JsValue::UNDEFINED)).await;
    enqueue_update(&a, "alice", "doc:1", json!({"n": 1})).await;
    let before = stored(&db).await;
    let o = counting("alice", "networkOfflineSent", "{type: 'success', receipt: {}}");
    set(&o, "offline", &true.into());
    set(&o, "onlineSince", &T0.into());
    let r = within(a.flush(o), 500).await.expect("resolves at once").expect("resolves");
    let r: Value = from_js(&r, "report").unwrap();
    assert_eq!(sends("networkOfflineSent"), 0.0);
    assert_eq!(r["offline"], json!(true));
    assert_eq!(r["nextDueAt"], Value::Null);
    for k in ["claimed", "released", "succeeded", "deferred", "held", "blocked", "conflicts", "stale", "skipped"] {
        assert_eq!(r[k].as_f64(), Some(0.0), "{k}");
    }
    assert_eq!(r["receipts"], json!([]));
    assert_eq!(stored(&db).await, before, "no row changed");
    b.close();
}

/// SPEC §8 offline, with no other tab: the rows are exactly as before, and a create deleted
/// offline sends nothing at all.
#[wasm_bindgen_test]
async fn s8_a_create_deleted_offline_is_never_sent() {
    let db = db_name("network-offline-create");
    let a = open(&db, "tab-a").await;
    let create =
        ok(a.enqueue(obj(json!({"owner": "alice", "kind": "create", "body": {"t": "milk"}})), JsValue::UNDEFINED))
            .await;
    let before = stored(&db).await;
    for _ in 0..3 {
        let o = counting("alice", "networkCreateSent", "{type: 'transient', code: 'NETWORK'}");
        set(&o, "offline", &true.into());
        let r = ok(a.flush(o)).await;
        assert_eq!((r["offline"].clone(), r["claimed"].as_f64()), (json!(true), Some(0.0)));
    }
    assert_eq!(stored(&db).await, before, "no attempt recorded, no backoff grown");
    let del = a.enqueue(
        obj(json!({"owner": "alice", "kind": "delete", "target": create["target"], "body": null})),
        JsValue::UNDEFINED,
    );
    assert_eq!(ok(del).await, Value::Null, "cancelled");
    let r = ok(a.flush(counting("alice", "networkCreateSent", "{type: 'success', receipt: {}}"))).await;
    assert_eq!(r["offline"], json!(false));
    assert_eq!(sends("networkCreateSent"), 0.0, "no request at all");
    assert!(stored(&db).await.is_empty());
}

/// SPEC §10 the network's return: a row deferred by `NETWORK` goes out at once in a flush
/// given `onlineSince` after its failure; a row deferred by a `503` keeps its backoff; the
/// report's `nextDueAt` is the backoff end while a row waits, `null` after.
#[wasm_bindgen_test]
async fn s10_a_network_deferred_row_goes_out_at_once_after_online_since() {
    let db = db_name("network-return");
    let a = open(&db, "tab-a").await;
    let net = enqueue_update(&a, "alice", "net:1", json!({"n": 1})).await;
    let busy = enqueue_update(&a, "alice", "busy:1", json!({"n": 1})).await;
    let answer = "op.target === 'net:1' ? {type: 'transient', code: 'NETWORK', retryAfterMs: 60000} \
                  : {type: 'transient', code: 'HTTP_503', retryAfterMs: 90000}";
    let r = ok(a.flush(counting("alice", "networkReturnSent", answer))).await;
    assert_eq!(r["deferred"].as_f64(), Some(2.0));
    assert_eq!(r["offline"], json!(false));
    assert_eq!(r["nextDueAt"].as_f64(), Some(T0 + 60_000.0), "the earlier backoff end");

    advance(&db, 2_000.0);
    let success = "{type: 'success', receipt: {}}";
    let r = ok(a.flush(counting("alice", "networkReturnSent", success))).await;
    assert_eq!(r["claimed"].as_f64(), Some(0.0), "without onlineSince both rows wait");
    assert_eq!(r["nextDueAt"].as_f64(), Some(T0 + 60_000.0));

    // selectSendable applies the same rule.
    let rows = a.rows("alice".into());
    let rows = wasm_bindgen_futures::JsFuture::from(rows).await.unwrap();
    let now = JsValue::from(T0 + 2_000.0);
    let pick = |since: JsValue| -> Vec<Value> {
        let p: Array =
            outbox_idb::select_sendable_js(rows.clone(), "tab-a".into(), now.clone(), JsValue::UNDEFINED, since)
                .unwrap()
                .into();
        p.iter().map(|v| from_js(&v, "row").unwrap()["id"].clone()).collect()
    };
    assert!(pick(JsValue::UNDEFINED).is_empty());
    assert_eq!(pick((T0 + 1_000.0).into()), vec![net["id"].clone()]);
    assert!(pick(T0.into()).is_empty(), "deferred at onlineSince, not before it");

    let o = counting("alice", "networkReturnSent", success);
    set(&o, "onlineSince", &(T0 + 1_000.0).into());
    let r = ok(a.flush(o)).await;
    assert_eq!((r["claimed"].as_f64(), r["succeeded"].as_f64()), (Some(1.0), Some(1.0)));
    assert_eq!(r["nextDueAt"].as_f64(), Some(T0 + 90_000.0), "the 503 row keeps its backoff");
    let left = stored(&db).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], busy["id"]);
    assert_eq!(sends("networkReturnSent"), 3.0);
}

/// SPEC §8 / §3 rule 4: `offline` not a boolean, `onlineSince` not a finite number →
/// INVALID_ARGUMENT, nothing sent or written (a string `"false"` must not read as true, a
/// `Date` not as a time); `selectSendable` refuses a non-numeric `onlineSince` too.
#[wasm_bindgen_test]
async fn s8_invalid_offline_or_online_since_is_refused() {
    let db = db_name("network-invalid");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "doc:1", json!({"n": 1})).await;
    let before = stored(&db).await;
    let bad: [(&str, JsValue); 7] = [
        ("offline", "false".into()),
        ("offline", 0.into()),
        ("offline", expr("{}")),
        ("onlineSince", "5".into()),
        ("onlineSince", f64::NAN.into()),
        ("onlineSince", f64::INFINITY.into()),
        ("onlineSince", expr("new Date(0)")),
    ];
    for (k, v) in bad {
        let o = counting("alice", "networkInvalidSent", "{type: 'success', receipt: {}}");
        set(&o, k, &v);
        let e = settle(a.flush(o)).await.expect_err("refused");
        assert_eq!(coded(&e).0, "INVALID_ARGUMENT", "{k}: {v:?}");
    }
    assert_eq!(sends("networkInvalidSent"), 0.0);
    assert_eq!(stored(&db).await, before);
    let e = outbox_idb::select_sendable_js(Array::new().into(), "t".into(), T0.into(), JsValue::UNDEFINED, "x".into())
        .expect_err("refused");
    assert_eq!(coded(&e).0, "INVALID_ARGUMENT");
    // `offline: false` and `null` are an ordinary flush.
    for v in [JsValue::FALSE, JsValue::NULL] {
        let o = counting("alice", "networkInvalidSent", "{type: 'success', receipt: {}}");
        set(&o, "offline", &v);
        set(&o, "onlineSince", &JsValue::NULL);
        let r = ok(a.flush(o)).await;
        assert_eq!(r["offline"], json!(false));
    }
    assert_eq!(sends("networkInvalidSent"), 1.0);
}
