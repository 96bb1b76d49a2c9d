//! The JS built-ins this crate calls on values the app gives, bound with `catch`.
//!
//! A getter, a Proxy trap or a detached buffer can make a built-in throw. An import bound
//! without `catch` lets that exception cross the wasm frames: no destructor runs, the
//! shadow stack is not given back, a `RefCell` borrow stays taken, a task is never polled
//! again (its promise never settles) and an IndexedDB transaction commits what it had
//! issued so far. So every call that can reach app code goes through `Result` — here, or
//! through a `js_sys` function that already returns one (`Reflect`, `Function::call*`);
//! `instanceof` checks (`dyn_ref`, `is_instance_of`) are caught by wasm-bindgen's glue.

use js_sys::{Array, Function, JsString, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = getPrototypeOf)]
    pub fn prototype_of(v: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = keys)]
    pub fn own_keys(v: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    pub fn entries(v: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_name = String)]
    pub fn string(v: &JsValue) -> Result<JsString, JsValue>;
    /// Runs the `constructor` getter of a native promise.
    #[wasm_bindgen(catch, js_namespace = Promise, js_name = resolve)]
    pub fn promise_resolve(v: &JsValue) -> Result<Promise, JsValue>;
}

/// `new Uint8Array(buffer, offset, length)` (the whole buffer without `at`): throws for a
/// detached buffer.
pub fn bytes(buffer: &JsValue, at: Option<(f64, f64)>) -> Result<Uint8Array, JsValue> {
    thread_local! {
        static CONSTRUCTOR: Function = Uint8Array::new_with_length(0).constructor();
    }
    let args = match at {
        None => Array::of1(buffer),
        Some((offset, length)) => Array::of3(buffer, &offset.into(), &length.into()),
    };
    let made = CONSTRUCTOR.with(|c| Reflect::construct(c, &args))?;
    Ok(made.unchecked_into())
}

/// The items of an array the app gives (`Array.isArray`, then each index read alone):
/// `Ok(None)` if it is no array.
///
/// # Errors
/// Where it cannot be read: `""` (the array itself, a revoked Proxy) or `"[i]"`.
pub fn items(v: &JsValue) -> Result<Option<Vec<JsValue>>, String> {
    if !is_array(v).map_err(|_| String::new())? {
        return Ok(None);
    }
    let len = Reflect::get(v, &"length".into()).map_err(|_| String::new())?.as_f64().unwrap_or(0.0) as u32;
    (0..len).map(|i| Reflect::get_u32(v, i).map_err(|_| format!("[{i}]"))).collect::<Result<_, _>>().map(Some)
}

/// A non-empty string that converts exactly: one with a lone surrogate would become
/// another string (U+FFFD in its place), and so name another owner's rows (§11), another
/// tab or another database.
pub fn exact_string(v: &JsValue) -> Option<String> {
    let s = v.as_string().filter(|s| !s.is_empty())?;
    v.unchecked_ref::<JsString>().is_valid_utf16().then_some(s)
}
