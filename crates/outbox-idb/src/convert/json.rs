//! JSON out to JS: the planner's values and the crate's answers as plain JS values.

use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Any serializable value as a plain JS value: its JSON text, parsed by `JSON.parse`. One
/// string crosses the boundary instead of one call per property, and the engine's own
/// parser builds fast objects. A key `__proto__` becomes an own property (as `JSON.parse`
/// makes it), never the object's prototype. `null` if it has no JSON (a map with keys that
/// are not strings).
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    parse(serde_json::to_string(v).ok())
}

/// The non-generic half of [`to_js`], built once instead of once per type (issue 35).
fn parse(text: Option<String>) -> JsValue {
    text.and_then(|text| js_sys::JSON::parse(&text).ok()).unwrap_or(JsValue::NULL)
}
