//! IndexedDB requests and transactions as futures.
//!
//! The futures resolve from the request's `success` event; wasm-bindgen futures continue
//! as microtasks, which run while the transaction is still active, so awaiting requests of
//! the same transaction keeps it alive. Nothing else may be awaited inside a transaction.
//!
//! Each future installs one JS function for both outcomes: exactly one of the events fires,
//! so the closure runs once and is freed (`once_into_js`), leaking nothing.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, IdbRequest, IdbTransaction};

/// Resolves with the request's result, or rejects with its error.
pub fn request(req: &IdbRequest) -> JsFuture {
    let (promise, resolve, reject) = crate::js::with_resolvers();
    let r = req.clone();
    let settle = Closure::once_into_js(move |ev: Event| {
        if ev.type_() == "success" {
            let _ = resolve.call1(&JsValue::NULL, &r.result().unwrap_or(JsValue::UNDEFINED));
        } else {
            let err = r.error().ok().flatten().map(JsValue::from).unwrap_or(JsValue::NULL);
            let _ = reject.call1(&JsValue::NULL, &err);
        }
    });
    req.set_onsuccess(Some(settle.unchecked_ref()));
    req.set_onerror(Some(settle.unchecked_ref()));
    JsFuture::from(promise)
}

/// Resolves when the transaction commits; rejects if it aborts (a failed request aborts it).
pub fn completion(tx: &IdbTransaction) -> JsFuture {
    let (promise, resolve, reject) = crate::js::with_resolvers();
    let t = tx.clone();
    let settle = Closure::once_into_js(move |ev: Event| {
        if ev.type_() == "complete" {
            let _ = resolve.call0(&JsValue::NULL);
        } else {
            let err = t.error().map(JsValue::from).unwrap_or_else(|| JsValue::from_str("transaction aborted"));
            let _ = reject.call1(&JsValue::NULL, &err);
        }
    });
    tx.set_oncomplete(Some(settle.unchecked_ref()));
    tx.set_onabort(Some(settle.unchecked_ref()));
    JsFuture::from(promise)
}
