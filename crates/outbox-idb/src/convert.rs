//! JSON values across the boundary. Objects go out as plain objects (not `Map`s), so that
//! IndexedDB key paths work.

use crate::error::{OutboxError, Result};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

/// Any serializable value as a plain JS value.
pub fn to_js<T: Serialize + ?Sized>(v: &T) -> JsValue {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap_or(JsValue::NULL)
}

/// A JS value from the app as JSON; `what` names the argument in the error.
pub fn from_js(v: &JsValue, what: &str) -> Result<Value> {
    serde_wasm_bindgen::from_value(v.clone()).map_err(|e| OutboxError::invalid(format!("{what} is not JSON: {e}")))
}

/// A stored value as JSON. A value JSON cannot hold (a `Date`, a `Blob`, written by some
/// other code) becomes a stand-in that keeps its key, so it decodes as undecodable and is
/// left exactly as it is in the store (nothing ever writes it back).
pub fn stored_from_js(v: &JsValue) -> Value {
    serde_wasm_bindgen::from_value(v.clone()).unwrap_or_else(|e| {
        let id = js_sys::Reflect::get(v, &"id".into()).ok().and_then(|i| i.as_string());
        serde_json::json!({"id": id, "unrepresentable": e.to_string()})
    })
}
