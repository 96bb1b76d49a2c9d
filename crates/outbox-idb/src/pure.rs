//! The package's pure functions (SPEC §15): the default HTTP classifier, `selectSendable`
//! and `isRowInFlight`, straight from the planner.

use crate::convert::{from_js, row_from_app, to_js};
use crate::error::{OutboxError, Result};
use js_sys::{Array, Function, Reflect};
use outbox_core::classify::classify_http;
use outbox_core::codec::{decode, Stored};
use outbox_core::inflight::{is_row_in_flight, DEFAULT_LEASE_MS};
use outbox_core::select::select_sendable;
use outbox_core::{Millis, Outcome};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

fn number(v: &JsValue, what: &str) -> Result<f64> {
    v.as_f64().filter(|n| n.is_finite()).ok_or_else(|| OutboxError::invalid_key(what, "` must be a number"))
}

fn lease(v: &JsValue) -> Result<i64> {
    if v.is_undefined() || v.is_null() {
        Ok(DEFAULT_LEASE_MS)
    } else {
        Ok(number(v, "leaseMs")? as i64)
    }
}

/// `(name, value)` pairs from a `Headers` object (anything with `forEach`) or a plain object.
fn header_pairs(headers: &JsValue) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    if headers.is_undefined() || headers.is_null() {
        return Ok(out);
    }
    if !headers.is_object() {
        return Err(OutboxError::invalid("`headers` must be a Headers or a plain object"));
    }
    // A `forEach` that cannot be read is no reason to read the headers as a plain object.
    let for_each =
        Reflect::get(headers, &"forEach".into()).map_err(|_| OutboxError::invalid("`headers` cannot be read"))?;
    if let Some(f) = for_each.dyn_ref::<Function>() {
        let mut collect = |value: JsValue, key: JsValue| {
            if let (Some(k), Some(v)) = (key.as_string(), value.as_string()) {
                out.push((k, v));
            }
        };
        f.unchecked_ref::<crate::js::FunctionValue>()
            .call_with_callback(headers, &mut collect)
            .map_err(|_| OutboxError::invalid("`headers.forEach` threw"))?;
        return Ok(out);
    }
    let entries = crate::js::entries(headers).map_err(|_| OutboxError::invalid("`headers` cannot be read"))?;
    for e in entries.iter() {
        let pair: Array = e.unchecked_into();
        if let Some(k) = pair.get(0).as_string() {
            let v = pair.get(1);
            out.push((
                k,
                v.as_string().unwrap_or_else(|| {
                    // A number as JavaScript writes it (`Retry-After: 120` given as `120`).
                    // (`String(n)`, the crate's one binding of it: the same digits as
                    // `n.toString(10)`, issue 35.)
                    v.as_f64().and_then(|_| crate::js::string(&v).ok()).map(String::from).unwrap_or_default()
                }),
            ));
        }
    }
    Ok(out)
}

/// The default classifier (SPEC §10): an HTTP answer into an `Outcome`. `status` 0 means a
/// network error; `now` (default `Date.now()`) is used for an HTTP-date `Retry-After`.
#[wasm_bindgen(js_name = classifyHttp, unchecked_return_type = "Outcome")]
pub fn classify_http_js(
    #[wasm_bindgen(unchecked_param_type = "number")] status: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "Headers | Record<string, string> | null")] headers: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "unknown")] body: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "number")] now: JsValue,
) -> std::result::Result<JsValue, JsValue> {
    let s = number(&status, "status")?;
    if !(0.0..=999.0).contains(&s) || s.fract() != 0.0 {
        return Err(OutboxError::invalid("`status` must be an integer from 0 to 999").into());
    }
    let headers = header_pairs(&headers)?;
    // The server's body, not the app's: one JSON cannot hold (a string with a lone
    // surrogate, cut by the server mid-emoji; deeper or larger than a body may be) is read
    // as no body, and the answer classified by its status. Refused, it would fail every
    // send of the row — a success the server applied would be sent again for ever.
    let body = from_js(&body, "body").unwrap_or(Value::Null);
    let now = if now.is_undefined() || now.is_null() { js_sys::Date::now() } else { number(&now, "now")? };
    Ok(outcome_to_js(classify_http(s as u16, &headers, &body, Millis(now as i64))))
}

/// An outcome as `JSON.parse` makes it of serde's text (`type` first, then the variant's
/// fields in order; a transient one's `code` and `retryAfterMs` only when present), set key
/// by key: serde's serializer of `Outcome`, built for this one call, was larger (issue 35).
fn outcome_to_js(o: Outcome) -> JsValue {
    let obj: JsValue = js_sys::Object::new().into();
    let set = |k: &str, v: &JsValue| crate::js::set(&obj, k, v);
    let (tag, code) = match o {
        Outcome::Success { receipt, replayed } => {
            set("type", &"success".into());
            set("receipt", &to_js(&receipt));
            set("replayed", &replayed.into());
            return obj;
        }
        Outcome::Conflict { actual_revision } => {
            set("type", &"conflict".into());
            set("actualRevision", &to_js(&actual_revision));
            return obj;
        }
        Outcome::Auth => ("auth", None),
        Outcome::Permanent { code } => ("permanent", Some(code)),
        Outcome::Transient { code, retry_after_ms } => {
            set("type", &"transient".into());
            if let Some(code) = code {
                set("code", &code.into());
            }
            if let Some(ms) = retry_after_ms {
                // The double JSON.parse reads of the integer's digits: the nearest one.
                set("retryAfterMs", &(ms as f64).into());
            }
            return obj;
        }
    };
    set("type", &tag.into());
    if let Some(code) = code {
        set("code", &code.into());
    }
    obj
}

/// The sendable rows (SPEC §8) of `rows`, in `(savedAt, id)` order; `onlineSince`: when the
/// network came back (§10).
#[wasm_bindgen(js_name = selectSendable, unchecked_return_type = "OutboxRow[]")]
pub fn select_sendable_js(
    #[wasm_bindgen(unchecked_param_type = "ReadonlyArray<OutboxRow | UndecodableRow>")] rows: JsValue,
    #[wasm_bindgen(js_name = tabId, unchecked_param_type = "string")] tab_id: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    #[wasm_bindgen(js_name = leaseMs, unchecked_optional_param_type = "number")] lease_ms: JsValue,
    #[wasm_bindgen(js_name = onlineSince, unchecked_optional_param_type = "number")] online_since: JsValue,
) -> std::result::Result<JsValue, JsValue> {
    let given = crate::args::items(&rows, crate::convert::MAX_NODES as u32)
        .map_err(|what| OutboxError::invalid(outbox_core::text::concat(&["`rows`", &what])))?
        .ok_or_else(|| OutboxError::invalid("`rows` must be an array"))?;
    let tab_id = crate::args::exact_string(&tab_id)
        .ok_or_else(|| OutboxError::invalid("`tabId` must be a non-empty string, well-formed (no lone surrogate)"))?;
    let now = Millis(number(&now, "now")? as i64);
    let online_since = match online_since {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(Millis(number(&v, "onlineSince")? as i64)),
    };
    // Rows as `rows()` gives them, read as stored rows: what JSON cannot hold in a field this
    // version does not know is fine (SPEC §3 rule 2). The picked rows are the app's own objects.
    let mut stored: Vec<Stored> = Vec::with_capacity(given.len());
    for r in &given {
        stored.push(Stored::from_value(&row_from_app(r)));
    }
    // Where each id was first given, in a `serde_json::Map` (the module's one map): one
    // look-up per picked row, not a scan of every row (10,000 rows picked from 10,000 were
    // 5·10⁷ comparisons).
    let mut first = serde_json::Map::new();
    for (at, s) in stored.iter().enumerate() {
        if let Some(r) = s.row() {
            if !first.contains_key(r.id.as_str()) {
                first.insert(r.id.clone(), Value::from(at));
            }
        }
    }
    let picked = Array::new();
    for row in select_sendable(&stored, &tab_id, now, lease(&lease_ms)?, online_since) {
        if let Some(at) = first.get(row.id.as_str()).and_then(Value::as_u64) {
            picked.push(&given[at as usize]);
        }
    }
    Ok(picked.into())
}

/// Whether a row is in flight (SPEC §5); an undecodable row is not.
#[wasm_bindgen(js_name = isRowInFlight)]
pub fn is_row_in_flight_js(
    #[wasm_bindgen(unchecked_param_type = "OutboxRow")] row: JsValue,
    #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    #[wasm_bindgen(js_name = leaseMs, unchecked_optional_param_type = "number")] lease_ms: JsValue,
) -> std::result::Result<bool, JsValue> {
    let now = Millis(number(&now, "now")? as i64);
    // Decoded alone: an undecodable row's `Undecodable` (its id, owner and copy) is not built.
    Ok(match decode(&row_from_app(&row)) {
        Ok(r) => is_row_in_flight(&r, now, lease(&lease_ms)?),
        Err(_) => false,
    })
}

/// Runs when the module is instantiated, in a build whose panics have messages: what a
/// panic leaves behind is in [`crate::panic`].
#[cfg(not(panic = "immediate-abort"))]
#[wasm_bindgen(start, private)]
fn report_panics() {
    crate::panic::install();
}
