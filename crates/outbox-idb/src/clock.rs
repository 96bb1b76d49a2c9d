//! The library's own clock, for waits and the changes they watch (`turn.rs`, `notify.rs`):
//! never the injected clock of the contract.

use js_sys::Function;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Milliseconds of a clock that only goes forward (`performance.now()`; `Date.now()` where
/// there is none): the wait's own time, never the injected clock of the contract.
pub fn monotonic() -> f64 {
    Some(crate::js::get(&js_sys::global(), "performance"))
        .filter(JsValue::is_object)
        .and_then(|p| Some((crate::js::get(&p, "now").dyn_into::<Function>().ok()?, p)))
        .and_then(|(now, p)| now.call0(&p).ok()?.as_f64())
        .unwrap_or_else(js_sys::Date::now)
}
