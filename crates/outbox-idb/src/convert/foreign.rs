//! What JSON cannot hold, named for messages (`what`: "a Date") and marked for the JSON
//! the planner sees (`marker`: a stable digest, equal for two reads of one stored value, so
//! that the value can be put back where it was, [`super::kept`]). Only stored values are
//! digested: the app's are refused whatever their marker.

use js_sys::{ArrayBuffer, Function, JsString, Reflect};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The key of the marker standing for a value JSON cannot hold (a stored one) in the JSON
/// the planner sees. Reserved: the app may not use it (it would read back as a marker).
pub const OPAQUE_KEY: &str = "$outboxOpaque";

/// A value JSON cannot hold, as classified: `what` for messages, `marker` for the JSON.
pub(super) struct Foreign {
    pub(super) what: String,
    pub(super) marker: String,
}

/// Names an object that is not a plain object and, for a stored one (`stored`), digests
/// it cheaply and stably. `object_proto` is this realm's `Object.prototype`.
pub(super) fn describe(v: &JsValue, proto: &JsValue, object_proto: &JsValue, stored: bool) -> Foreign {
    let to_string: Option<Function> =
        Reflect::get(object_proto, &"toString".into()).ok().and_then(|f| f.dyn_into().ok());
    let tag = to_string
        .and_then(|f| f.call0(v).ok())
        .and_then(|t| t.as_string())
        .and_then(|t| t.strip_prefix("[object ").and_then(|t| t.strip_suffix(']')).map(str::to_owned))
        .unwrap_or_else(|| "Object".into());
    // The app's values are refused whatever their marker: only a stored one is digested
    // (a marker can cost a copy of a whole buffer).
    let prop = |k: &str| {
        if stored {
            Reflect::get(v, &k.into()).map(|p| text(&p)).unwrap_or_default()
        } else {
            String::new()
        }
    };
    let (what, marker) = match tag.as_str() {
        "Date" => {
            // The time as JavaScript writes it: for a Date (whole, below 2^53, or NaN) the
            // digits Rust would write, without Rust's float formatting (14 KB of wasm).
            let t = if stored { crate::js::date_time(v) } else { f64::NAN };
            ("a Date".to_owned(), format!("Date:{}", text(&JsValue::from(t))))
        }
        "Blob" => ("a Blob".into(), format!("Blob:{}:{}", prop("size"), prop("type"))),
        "File" => (
            "a File".into(),
            format!("File:{}:{}:{}:{}", prop("size"), prop("type"), prop("lastModified"), prop("name")),
        ),
        "Map" | "Set" => (article(&tag), format!("{tag}:{}", prop("size"))),
        "ArrayBuffer" => ("an ArrayBuffer".into(), format!("ArrayBuffer:{}", bytes_digest(v, None, stored))),
        _ if ArrayBuffer::is_view(v) => (article(&tag), format!("{tag}:{}", bytes_digest(v, Some(v), stored))),
        "Object" => {
            let name = Reflect::get(proto, &"constructor".into())
                .and_then(|c| Reflect::get(&c, &"name".into()))
                .ok()
                .and_then(|n| n.as_string())
                .filter(|n| !n.is_empty());
            match name {
                Some(n) => (format!("an instance of class `{n}`"), format!("Object:{n}")),
                None => ("an object with a prototype of its own".into(), "Object".into()),
            }
        }
        "RegExp" | "Number" | "String" | "Boolean" | "Error" if stored => (article(&tag), format!("{tag}:{}", text(v))),
        _ => (article(&tag), tag.clone()),
    };
    Foreign { what, marker }
}

pub(super) fn reserved_key(digest: &str) -> Foreign {
    Foreign { what: format!("an object using the reserved key `{OPAQUE_KEY}`"), marker: format!("Reserved{digest}") }
}

/// The marker standing for a kept value in the JSON.
pub fn marker(m: &str) -> Value {
    let mut map = Map::new();
    map.insert(OPAQUE_KEY.into(), Value::String(m.to_owned()));
    Value::Object(map)
}

/// The marker string, if `v` is a marker.
#[must_use]
pub fn as_marker(v: &Value) -> Option<&str> {
    match v.as_object() {
        Some(m) if m.len() == 1 => m.get(OPAQUE_KEY).and_then(Value::as_str),
        _ => None,
    }
}

pub(super) fn text(v: &JsValue) -> String {
    crate::js::string(v).map(String::from).unwrap_or_default()
}

fn article(name: &str) -> String {
    let vowel = name.bytes().next().is_some_and(|c| b"AEIOUaeiou".contains(&c));
    format!("{} {name}", if vowel { "an" } else { "a" })
}

/// FNV-1a: a stable digest for markers (not a security measure).
pub(super) fn fnv(bytes: &[u8]) -> u64 {
    fnv_from(FNV_START, bytes)
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a going on from `hash`.
fn fnv_from(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

pub(super) fn utf16_digest(v: &JsValue) -> u64 {
    // The units' little-endian bytes, digested as they are read.
    v.dyn_ref::<JsString>().map_or(FNV_START, |s| s.iter().fold(FNV_START, |h, u| fnv_from(h, &u.to_le_bytes())))
}

/// `length:digest` of the bytes of an ArrayBuffer, or of a view (`view`) on one;
/// `detached` for a buffer given away (`postMessage`, `structuredClone` with `transfer`).
/// Read in chunks: a large buffer is never copied whole into the module's memory.
fn bytes_digest(v: &JsValue, view: Option<&JsValue>, stored: bool) -> String {
    if !stored {
        return String::new();
    }
    // Only a real ArrayBuffer (brand-checked) is read: an object that merely has its
    // prototype would be read as an array-like of any `length`.
    let real = |b: &JsValue| crate::js::buffer_length(b).is_some();
    let bytes = match view {
        None if real(v) => crate::js::bytes(v, None),
        None => Ok(js_sys::Uint8Array::new_with_length(0)),
        Some(view) => {
            let get = |k: &str| Reflect::get(view, &k.into()).ok().and_then(|n| n.as_f64()).unwrap_or(0.0);
            match Reflect::get(view, &"buffer".into()) {
                Ok(b) if real(&b) => crate::js::bytes(&b, Some((get("byteOffset"), get("byteLength")))),
                _ => Ok(js_sys::Uint8Array::new_with_length(0)),
            }
        }
    };
    let Ok(bytes) = bytes else { return "detached".into() };
    const CHUNK: u32 = 1 << 16;
    let (len, mut chunk, mut hash) = (bytes.length(), vec![0u8; 0], FNV_START);
    for at in (0..len).step_by(CHUNK as usize) {
        let part = bytes.subarray(at, len.min(at.saturating_add(CHUNK)));
        chunk.resize(part.length() as usize, 0);
        part.copy_to(&mut chunk);
        hash = fnv_from(hash, &chunk);
    }
    format!("{len}:{hash:016x}")
}
