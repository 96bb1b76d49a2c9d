//! Helpers shared by the browser test files: a database of its own per test, JS values from
//! JSON, a clock the test can move, and the outcome of a call.
#![allow(dead_code)]

use js_sys::{Function, Promise, Reflect};
use outbox_idb::convert::{from_js, to_js};
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

pub const T0: f64 = 1_700_000_000_000.0;

/// A fresh database name: tests never share one.
pub fn db_name(test: &str) -> String {
    format!("{test}-{}", uuid::Uuid::new_v4())
}

pub fn obj(v: Value) -> JsValue {
    to_js(&v)
}

pub fn set(o: &JsValue, k: &str, v: &JsValue) {
    Reflect::set(o, &k.into(), v).unwrap();
}

pub fn get(o: &JsValue, k: &str) -> JsValue {
    Reflect::get(o, &k.into()).unwrap()
}

/// A JS function with the named arguments and this body.
pub fn js(args: &str, body: &str) -> Function {
    Function::new_with_args(args, body)
}

pub fn js_fn(args: &str, body: &str) -> JsValue {
    js(args, body).into()
}

/// Options with a clock at `T0` that the test can move with [`advance`], and a fixed draw.
pub fn options(db: &str, tab: &str) -> JsValue {
    let o = obj(json!({"dbName": db, "tabId": tab, "leaseMs": 10_000}));
    let key = format!("clock_{}", db.replace('-', "_"));
    Reflect::set(&js_sys::global(), &key.clone().into(), &T0.into()).unwrap();
    set(&o, "now", &js_fn("", &format!("return globalThis.{key};")));
    set(&o, "random", &js_fn("", "return 0.5;"));
    o
}

/// Moves the clock of the outboxes opened on `db` by `ms`.
pub fn advance(db: &str, ms: f64) {
    let key: JsValue = format!("clock_{}", db.replace('-', "_")).into();
    let t = Reflect::get(&js_sys::global(), &key).unwrap().as_f64().unwrap();
    Reflect::set(&js_sys::global(), &key, &(t + ms).into()).unwrap();
}

pub async fn open(db: &str, tab: &str) -> Outbox {
    Outbox::open_with(options(db, tab)).await.expect("open")
}

pub async fn settle(p: Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

/// The value a call resolved with, as JSON (`null` for `undefined`).
pub async fn ok(p: Promise) -> Value {
    let v = settle(p).await.expect("call succeeds");
    if v.is_undefined() {
        Value::Null
    } else {
        from_js(&v, "result").unwrap()
    }
}

/// The `(code, message)` of the `Error` a call threw or rejected with.
pub fn coded(err: &JsValue) -> (String, String) {
    assert!(err.is_instance_of::<js_sys::Error>(), "an Error object: {err:?}");
    (get(err, "code").as_string().unwrap_or_default(), get(err, "message").as_string().unwrap_or_default())
}

/// Flush options for `owner` with `send(op)` given as a JS function body.
pub fn flush_opts(owner: &str, send: &str) -> JsValue {
    let o = obj(json!({"owner": owner}));
    set(&o, "send", &js_fn("op", send));
    o
}

/// Every stored value, read with plain IndexedDB (structured clone, no JSON).
pub async fn raw_all(db: &str) -> js_sys::Array {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const q = r.result.transaction('outbox').objectStore('outbox').getAll();
          q.onsuccess = () => { r.result.close(); ok(q.result); }; q.onerror = () => err(q.error); }; });";
    settle(js("db", script).call1(&JsValue::NULL, &db.into()).unwrap().unchecked_into()).await.unwrap().unchecked_into()
}

/// Enqueues an update of `target` for `owner`; the stored row.
pub async fn enqueue_update(a: &Outbox, owner: &str, target: &str, body: Value) -> Value {
    ok(a.enqueue(obj(json!({"owner": owner, "target": target, "kind": "update", "body": body})), JsValue::UNDEFINED))
        .await
}

/// The value of a JS expression.
pub fn expr(e: &str) -> JsValue {
    js("", &format!("return ({e});")).call0(&JsValue::NULL).unwrap()
}

/// How `p` settles within `ms`: `Some(Ok/Err)`, or `None` if it has not settled by then
/// (a call that must end, checked without waiting for ever).
pub async fn within(p: Promise, ms: u32) -> Option<Result<JsValue, JsValue>> {
    let marker = "common-within-not-settled";
    let late = js("ms, m", "return new Promise((done) => setTimeout(() => done(m), ms));")
        .call2(&JsValue::NULL, &ms.into(), &marker.into())
        .unwrap();
    let out = settle(Promise::race(&js_sys::Array::of2(&p, &late.unchecked_into()))).await;
    match &out {
        Ok(v) if v.as_string().as_deref() == Some(marker) => None,
        _ => Some(out),
    }
}
