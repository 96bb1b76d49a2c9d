//! OPEN FLAWS, not yet fixed — this file is deliberately outside `tests/`, so it is not
//! compiled or run. Attacks on the wasm binding from the public API (hostile values,
//! re-entrancy, odd arguments), written by a review on 2026-12-03. Every test here FAILS
//! against the current library: each one confirms a flaw, and its comment names the clause
//! it breaks. To run one: copy the file into `tests/` (it uses `tests/common`). When a flaw
//! is fixed, move its test into a test file of its own, where it passes. (Moved and fixed: the
//! lone-surrogate owner tests, tests/owner_strings.rs; flush options, tests/flush_options.rs;
//! JS exceptions escaping through wasm, tests/hostile_values.rs; huge Retry-After, tests/values.rs.) JS globals used here are prefixed `zzA_`.
//!
//! Several tests leave an uncaught exception and a dead task behind (that is the flaw they
//! show); `quiet_uncaught` keeps the page's error events from drowning their assertions.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise};
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The value of a JS expression.
fn expr(e: &str) -> JsValue {
    js("", &format!("return ({e});")).call0(&JsValue::NULL).unwrap()
}

/// How `p` settles within `ms`: `Some(Ok/Err)`, or `None` if it has not settled by then.
async fn within(p: Promise, ms: u32) -> Option<Result<JsValue, JsValue>> {
    let marker = "zzA-not-settled";
    let late = js("ms, m", "return new Promise((done) => setTimeout(() => done(m), ms));")
        .call2(&JsValue::NULL, &ms.into(), &marker.into())
        .unwrap();
    let out = JsFuture::from(Promise::race(&Array::of2(&p, &late))).await;
    match &out {
        Ok(v) if v.as_string().as_deref() == Some(marker) => None,
        _ => Some(out),
    }
}

fn flush_opts(owner: &str, send: &str) -> JsValue {
    let o = obj(json!({"owner": owner}));
    set(&o, "send", &js_fn("op", send));
    o
}

/// Every stored value, read with plain IndexedDB.
async fn raw_all(db: &str) -> Array {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const q = r.result.transaction('outbox').objectStore('outbox').getAll();
          q.onsuccess = () => { r.result.close(); ok(q.result); }; q.onerror = () => err(q.error); }; });";
    settle(js("db", script).call1(&JsValue::NULL, &db.into()).unwrap().unchecked_into()).await.unwrap().unchecked_into()
}

/// Swallows the uncaught exceptions the flaws below leave in the page (so that the page's
/// own error reporting does not hide what the assertions say).
fn quiet_uncaught() {
    js(
        "",
        "if (!globalThis.zzA_quiet) { globalThis.zzA_quiet = true;
           addEventListener('error', (e) => { globalThis.zzA_uncaught = (globalThis.zzA_uncaught || 0) + 1; e.preventDefault(); });
           addEventListener('unhandledrejection', (e) => e.preventDefault()); }",
    )
    .call0(&JsValue::NULL)
    .unwrap();
}

async fn enqueue_update(a: &Outbox, owner: &str, target: &str, body: Value) -> Value {
    ok(a.enqueue(obj(json!({"owner": owner, "target": target, "kind": "update", "body": body})), JsValue::UNDEFINED))
        .await
}

// ---------------------------------------------------------------------------------------
// (a)+(b) Owner arguments are read with a lossy conversion (`as_string`), which turns an
// unpaired surrogate into U+FFFD: the call acts on ANOTHER owner's rows, while `enqueue`
// refuses that same owner string.
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// (d) Smaller ones.
// ---------------------------------------------------------------------------------------

/// SPEC §15 ("Errors thrown across the boundary are Error objects with a stable code";
/// after `close()` calls throw `CLOSED`). After `free()` (which `using` / `Symbol.dispose`
/// calls; outbox.rs documents it as closing the outbox), every method — `close()` and the
/// async ones included — throws synchronously an Error without `code` ("null pointer
/// passed to rust"), instead of a coded error (or a rejected promise for async methods).
#[wasm_bindgen_test]
async fn s15_calls_after_free_throw_without_a_code() {
    let a: JsValue = open(&db_name("zzA-free"), "tab-a").await.into();
    set(&js_sys::global(), "zzA_freed", &a);
    let codes = js(
        "",
        "const a = globalThis.zzA_freed; a.free();
         const out = [];
         for (const f of [() => a.rows('o'), () => a.enqueue({owner: 'o', target: 't', kind: 'delete'}), () => a.close()]) {
           try { const r = f(); out.push(r && r.then ? 'returned a promise' : 'returned'); }
           catch (e) { out.push(e && e.code ? e.code : 'uncoded: ' + (e && e.message)); }
         }
         return out;",
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let codes: Vec<String> = codes.unchecked_into::<Array>().iter().map(|c| c.as_string().unwrap()).collect();
    assert!(codes.iter().all(|c| !c.starts_with("uncoded")), "{codes:?}");
}
