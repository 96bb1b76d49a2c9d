//! IndexedDB requests and transactions as futures.
//!
//! The futures resolve from the request's `success` event; wasm-bindgen futures continue
//! as microtasks, which run while the transaction is still active, so awaiting requests of
//! the same transaction keeps it alive. Nothing else may be awaited inside a transaction.
//!
//! Each future installs one JS function for both outcomes: exactly one of the events fires,
//! so the closure runs once and is freed (`once_into_js`), leaking nothing.

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, IdbRequest, IdbTransaction};

/// Resolves with the request's result, or rejects with its error.
pub fn request(req: &IdbRequest) -> JsFuture {
    let (future, settle) = settled(req, |r, ev| {
        let r = r.unchecked_ref::<IdbRequest>();
        if ev.type_() == "success" {
            Ok(r.result().unwrap_or(JsValue::UNDEFINED))
        } else {
            Err(r.error().ok().flatten().map(JsValue::from).unwrap_or(JsValue::NULL))
        }
    });
    req.set_onsuccess(Some(&settle));
    req.set_onerror(Some(&settle));
    future
}

/// Resolves when the transaction commits; rejects if it aborts (a failed request aborts it).
pub fn completion(tx: &IdbTransaction) -> JsFuture {
    let (future, settle) = settled(tx, |t, ev| {
        if ev.type_() == "complete" {
            Ok(JsValue::UNDEFINED)
        } else {
            let t = t.unchecked_ref::<IdbTransaction>();
            Err(t.error().map(JsValue::from).unwrap_or_else(|| JsValue::from_str("transaction aborted")))
        }
    });
    tx.set_oncomplete(Some(&settle));
    tx.set_onabort(Some(&settle));
    future
}

/// The future of `target`'s outcome, which `outcome` reads from the first event of the
/// handler returned with it. One function for both callers: the closure of
/// `once_into_js` is one type, with one copy of its glue (issue 35).
fn settled(target: &JsValue, outcome: fn(&JsValue, &Event) -> Result<JsValue, JsValue>) -> (JsFuture, Function) {
    let (promise, resolve, reject) = crate::js::with_resolvers();
    let target = target.clone();
    let settle = Closure::once_into_js(move |ev: Event| {
        let _ = match outcome(&target, &ev) {
            Ok(v) => resolve.call1(&JsValue::NULL, &v),
            Err(e) => reject.call1(&JsValue::NULL, &e),
        };
    });
    (JsFuture::from(promise), settle.unchecked_into())
}
