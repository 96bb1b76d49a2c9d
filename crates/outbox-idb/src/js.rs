//! The JS built-ins this crate calls on values the app gives, bound with `catch`.
//!
//! A getter, a Proxy trap or a detached buffer can make a built-in throw. An import bound
//! without `catch` lets that exception cross the wasm frames: no destructor runs, the
//! shadow stack is not given back, a `RefCell` borrow stays taken, a task is never polled
//! again (its promise never settles) and an IndexedDB transaction commits what it had
//! issued so far. So every call that can reach app code goes through `Result` — here, or
//! through a `js_sys` function that already returns one (`Reflect`, `Function::call*`);
//! `instanceof` checks (`dyn_ref`, `is_instance_of`) are caught by wasm-bindgen's glue.
//! The walk over the app's values (and stored ones) is JavaScript of its own, which
//! catches what they throw: `convert/walk.js`.

use js_sys::{Array, Function, JsString, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(catch, js_namespace = Array, js_name = isArray)]
    pub fn is_array(v: &JsValue) -> Result<bool, JsValue>;
    #[wasm_bindgen(catch, js_namespace = Object, js_name = entries)]
    pub fn entries(v: &JsValue) -> Result<Array, JsValue>;
    #[wasm_bindgen(catch, js_name = String)]
    pub fn string(v: &JsValue) -> Result<JsString, JsValue>;
    /// Node's `console.error` formats its arguments at once, running their custom inspect
    /// functions and `stack` getters.
    #[wasm_bindgen(catch, js_namespace = console, js_name = error)]
    pub fn console_error(message: &JsValue, value: &JsValue) -> Result<(), JsValue>;
    /// `console.error` of a text: an app may have replaced `console.error` (an error
    /// reporter's wrapper) with one that throws.
    #[wasm_bindgen(catch, js_namespace = console, js_name = error)]
    pub fn console_error_text(message: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(catch, js_namespace = console, js_name = warn)]
    pub fn console_warn_text(message: &str) -> Result<(), JsValue>;

    /// `f.call(this, callback)` with a callback of two arguments that is valid only during
    /// the call (a stack closure, as a `Promise` executor: no closure of its own to
    /// allocate, share and free, issue 35). A later call of it throws.
    #[wasm_bindgen(js_name = Function)]
    pub type FunctionValue;
    #[wasm_bindgen(catch, method, final, js_class = "Function", js_name = call)]
    pub fn call_with_callback(
        this: &FunctionValue,
        this_arg: &JsValue,
        callback: &mut dyn FnMut(JsValue, JsValue),
    ) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_name = Promise)]
    type PromiseValue;
    /// `new Promise(executor)`, the executor typed as [`call_with_callback`]'s callback:
    /// one callback type for both, one shim in the module and its glue (issue 35).
    #[wasm_bindgen(constructor, js_class = "Promise")]
    fn new(executor: &mut dyn FnMut(JsValue, JsValue)) -> PromiseValue;
    /// `Promise.prototype.then` called on `this` (`final`: never an own `then`); throws,
    /// caught, for anything but a promise, or when its species lookup throws.
    #[wasm_bindgen(catch, method, final, js_class = "Promise", js_name = then)]
    fn intrinsic_then(this: &PromiseValue, ok: &Function, err: &Function) -> Result<JsValue, JsValue>;
}

/// `obj[key]`; `undefined` when reading it throws (a getter, a Proxy trap, no object). One
/// copy of the key's conversion and the call, not one at every property read (issue 35).
#[inline(never)]
pub fn get(obj: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(obj, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

/// `obj[key] = value`, a failure (a setter that throws, no object) ignored: as [`get`].
#[inline(never)]
pub fn set(obj: &JsValue, key: &str, value: &JsValue) {
    let _ = js_sys::Reflect::set(obj, &key.into(), value);
}

/// Appends `n` in decimal, written by hand: no integer `Display` machinery at the call
/// (issue 35). The planner's, one copy for both crates.
pub use outbox_core::text::push_decimal;

/// `String(v)`, or a fixed text for a value that cannot be turned into one (a revoked
/// Proxy, a throwing `toString`). Never `{v:?}`: wasm-bindgen's debug string reads getters
/// without `catch`.
pub fn text_of(v: &JsValue) -> String {
    string(v).map_or_else(|_| "a value that cannot be printed".into(), String::from)
}

/// A promise of this library's that settles as `v` does (the app's result, a promise or
/// not). `JsFuture` calls `then` on what it awaits: on the app's own promise that `then`
/// could be anything. A native promise is chained here by the intrinsic `then`: a throwing
/// `constructor` getter or species fails now, in this call (resolving a promise with it
/// would run that lookup in a job, and WebKit leaves the promise pending when it throws
/// there). Anything else resolves ours: a thenable's `then` runs in a job, where a throw
/// rejects.
pub fn own_promise(v: &JsValue) -> Result<Promise, JsValue> {
    let (promise, resolve, reject) = with_resolvers();
    if v.is_instance_of::<Promise>() {
        v.unchecked_ref::<PromiseValue>().intrinsic_then(&resolve, &reject)?;
    } else {
        resolve.call1(&JsValue::NULL, v)?;
    }
    Ok(promise)
}

/// A new promise with the functions that resolve and reject it (as
/// `Promise.withResolvers()`, which older engines lack). One executor for every caller
/// that keeps them: one closure type in the module, not one per caller (issue 35).
pub fn with_resolvers() -> (Promise, Function, Function) {
    let mut settle = None;
    let promise = PromiseValue::new(&mut |resolve, reject| settle = Some((resolve, reject)));
    let (resolve, reject) = settle.expect("the Promise executor runs at once");
    (promise.unchecked_into(), resolve.unchecked_into(), reject.unchecked_into())
}

/// The function `name` of the global scope (a window, a worker, Node), if it is one: one
/// look-up for every caller (issue 35).
pub fn global_fn(name: &str) -> Option<Function> {
    get(&js_sys::global(), name).dyn_into().ok()
}
