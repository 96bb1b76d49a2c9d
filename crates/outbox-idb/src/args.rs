//! Reading the app's arguments where a plain conversion would get them wrong: strings
//! that must convert exactly (ids naming owners, rows, tabs and databases) and arrays read
//! item by item with a bound; and the arguments several commands share (`options.writes`,
//! an app store's name).

use crate::convert::fields_from_js;
use crate::error::{OutboxError, Result};
use crate::js::is_array;
use js_sys::{JsString, Reflect};
use outbox_core::records::{parse_writes, WriteInput};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Reads a required owner argument.
pub fn owner_arg(v: &JsValue) -> Result<String> {
    exact_string(v)
        .ok_or_else(|| OutboxError::invalid("`owner` must be a non-empty string, well-formed (no lone surrogate)"))
}

/// Reads a required row id argument.
pub fn id_arg(v: &JsValue) -> Result<String> {
    exact_string(v)
        .ok_or_else(|| OutboxError::invalid("`rowId` must be a non-empty string, well-formed (no lone surrogate)"))
}

/// A non-empty string that converts exactly: one with a lone surrogate would become
/// another string (U+FFFD in its place), and so name another owner's rows (§11), another
/// tab or another database.
pub fn exact_string(v: &JsValue) -> Option<String> {
    let s = v.as_string().filter(|s| !s.is_empty())?;
    v.unchecked_ref::<JsString>().is_valid_utf16().then_some(s)
}

/// The items of an array the app gives (`Array.isArray`, then each index read alone, at
/// most `max`): `Ok(None)` if it is no array.
///
/// # Errors
/// What is wrong, as the end of a sentence about the array: "cannot be read", "[3] cannot
/// be read", "holds more than 1000000 items".
pub fn items(v: &JsValue, max: u32) -> std::result::Result<Option<Vec<JsValue>>, String> {
    let unreadable = |_| " cannot be read".to_owned();
    if !is_array(v).map_err(unreadable)? {
        return Ok(None);
    }
    let len = Reflect::get(v, &"length".into()).map_err(unreadable)?.as_f64().unwrap_or(0.0);
    if len > f64::from(max) {
        let mut what = String::from(" holds more than ");
        crate::js::push_decimal(&mut what, max as usize);
        what.push_str(" items");
        return Err(what);
    }
    let mut items = Vec::new();
    for i in 0..len as u32 {
        items.push(Reflect::get_u32(v, i).map_err(|_| {
            let mut what = String::from("[");
            crate::js::push_decimal(&mut what, i as usize);
            what.push_str("] cannot be read");
            what
        })?);
    }
    Ok(Some(items))
}

/// `obj[key]` of an option or argument the app gives (`undefined` when `obj` is no object).
/// Unlike [`crate::js::get`], a read that throws (a getter, a Proxy's trap, a revoked Proxy)
/// is the app's bad argument: `INVALID_ARGUMENT` naming `key`, never `undefined` and the
/// call going on without it (contract §15).
///
/// # Errors
/// `INVALID_ARGUMENT` when reading `key` throws.
#[inline(never)]
pub fn field(obj: &JsValue, key: &str) -> Result<JsValue> {
    if !obj.is_object() {
        return Ok(JsValue::UNDEFINED);
    }
    Reflect::get(obj, &key.into()).map_err(|cause| {
        let mut e = OutboxError::invalid_key(key, "` could not be read: ");
        e.message.push_str(&crate::error::detail(&cause));
        e
    })
}

/// A boolean option of `options` (`false` when absent, `undefined` or `null`); `None` when
/// it is anything else (a string `"false"` would otherwise read as `true`).
pub fn flag_arg(options: &JsValue, key: &str) -> Option<bool> {
    match crate::js::get(options, key) {
        v if v.is_undefined() || v.is_null() => Some(false),
        v => v.as_bool(),
    }
}

/// `options.writes` of `enqueue`: the app's record writes (none when absent).
pub fn writes_arg(options: &JsValue) -> Result<Vec<WriteInput>> {
    if options.is_undefined() || options.is_null() {
        return Ok(vec![]);
    }
    let writes = match fields_from_js(options, "options")?.get_mut("writes") {
        Some(w) => w.take(),
        None => Value::Null,
    };
    parse_writes(&writes, "options.writes").map_err(|e| OutboxError::invalid(e.0))
}

/// A required app store name.
pub fn app_store_arg(v: &JsValue) -> Result<String> {
    // The queue's own store is read through `rows` (one owner's, §11), never as records.
    v.as_string()
        .filter(|s| !s.is_empty() && s != outbox_core::records::QUEUE_STORE)
        .ok_or_else(|| OutboxError::invalid("`store` must be an app store's name"))
}
