//! One walk over a JS value that builds its JSON, in JavaScript (walk.js, beside this file):
//! there the engine does the per-node work (`typeof`, the prototype, the keys, each read),
//! which cost several wasm↔JS calls per node when the walk was here, and one string
//! crosses (issue 35). Never through serde: serde-wasm-bindgen turns a `Date` or a `Blob`
//! into `{}`, a `BigInt` into a number and `undefined` into `null` without a word, and
//! recurses without a limit.
//!
//! The walk is bounded: depth (a limit), cycles (the objects on the current path) and total
//! work (a node budget, because shared sub-objects are visited once per reference). What
//! it finds that JSON cannot hold is refused (a value the app gives) or kept aside as an
//! opaque marker with the original value (a stored one).

pub(super) use super::foreign::{as_marker, marker};
use super::parse::parse;
use super::path::short_path;
pub(super) use super::path::{path_string, Seg};
use js_sys::Array;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// How deep a value the app gives may nest: containers below its root (SPEC §3 rule 4).
pub const MAX_APP_DEPTH: usize = 256;
/// How deep a stored row is read before a subtree is kept opaque: above the app's limit
/// plus the row around the body, so nothing this library wrote is ever opaque.
pub const MAX_STORED_DEPTH: usize = MAX_APP_DEPTH + 16;
/// Values visited by one walk of a value the app gives: the planner's bound on a body,
/// which merging keeps too (`outbox_core::body_size`).
pub const MAX_NODES: usize = outbox_core::body_size::MAX_BODY_VALUES;
/// Values visited by one walk of a stored row before the rest is kept opaque: room for two
/// bodies (a row holds one; a margin for an older writer's fields) plus the row around
/// them, so nothing this library wrote is ever opaque.
pub const MAX_STORED_NODES: usize = 2 * MAX_NODES + 1024;

#[wasm_bindgen(module = "/src/convert/walk.js")]
extern "C" {
    /// The walk of `v`: its text, `[text, kept]` (stored) or `[null, path, what, at]`
    /// (refused). It catches what the value throws; `catch` for what it cannot (the page
    /// out of memory).
    #[wasm_bindgen(catch, js_name = walk)]
    fn walk_js(v: &JsValue, stored: bool, max_depth: u32, max_nodes: u32) -> Result<JsValue, JsValue>;
    /// The own fields of an argument object, each walked as the app's value.
    #[wasm_bindgen(catch, js_name = walkFields)]
    fn walk_fields_js(v: &JsValue, max_depth: u32, max_nodes: u32) -> Result<JsValue, JsValue>;
}

/// A value JSON cannot hold, found in a stored row and kept as it is.
#[derive(Clone, Debug)]
pub struct Kept {
    /// Where in the row.
    pub path: Vec<Seg>,
    /// What it is, for messages ("a Date").
    pub what: String,
    /// Its marker: a stable digest, equal for two reads of the same stored value.
    pub marker: String,
    /// The value itself.
    pub value: JsValue,
}

/// Why the app's value was refused.
#[derive(Clone, Debug)]
pub struct Refusal {
    /// Where.
    pub path: String,
    /// What is wrong there, as the end of a sentence: "is a Date".
    pub problem: String,
}

/// Why an argument object's fields were refused.
pub enum FieldsRefusal {
    /// The object itself: "must be an object", "cannot be read".
    Whole(String),
    /// A field whose read throws.
    Unreadable(String),
    /// A field's value, as [`given`] refuses it.
    Value(Refusal),
}

/// The JSON of a value the app gives; `root` starts every path.
///
/// # Errors
/// The first value JSON cannot hold, with its path.
pub fn given(v: &JsValue, root: &str) -> Result<Value, Refusal> {
    let root = [Seg::Key(root.to_owned())];
    let Ok(walked) = walk_js(v, false, MAX_APP_DEPTH as u32, MAX_NODES as u32) else {
        // The walk itself failed (the page out of memory): the value cannot be read.
        return Err(Refusal { path: short_path(&root), problem: "is a value that cannot be read".into() });
    };
    finish(walked).map(|(json, _)| json).map_err(|r| refusal(&r, &root))
}

/// The JSON of an argument object's own fields (`undefined` ones absent), each read as
/// [`given`] reads a value; `root` (if any) starts the paths.
///
/// # Errors
/// The object is not one or cannot be read, or a field is not JSON.
pub fn given_fields(v: &JsValue, root: &str) -> Result<Value, FieldsRefusal> {
    let root: &[Seg] = &[Seg::Key(root.to_owned())][..usize::from(!root.is_empty())];
    let Ok(walked) = walk_fields_js(v, MAX_APP_DEPTH as u32, MAX_NODES as u32) else {
        return Err(FieldsRefusal::Whole("cannot be read".into()));
    };
    finish(walked).map(|(json, _)| json).map_err(|r| match r.get(1) {
        p if p.is_null() => FieldsRefusal::Whole(string(&r.get(2))),
        p if p.is_string() => FieldsRefusal::Unreadable(string(&p)),
        _ => FieldsRefusal::Value(refusal(&r, root)),
    })
}

/// The JSON of a stored value, and what it holds that JSON cannot (behind markers).
pub fn stored(v: &JsValue) -> (Value, Vec<Kept>) {
    let walked = walk_js(v, true, MAX_STORED_DEPTH as u32, MAX_STORED_NODES as u32);
    // A stored walk is never refused; one that failed (the page out of memory) keeps the
    // value whole.
    walked.ok().and_then(|w| finish(w).ok()).unwrap_or_else(|| {
        let what = "a value that cannot be read".to_owned();
        (marker("Unreadable"), vec![Kept { path: vec![], what, marker: "Unreadable".into(), value: v.clone() }])
    })
}

/// The walk's text read, with what it kept; `Err` the walk's refusal.
fn finish(walked: JsValue) -> Result<(Value, Vec<Kept>), Array> {
    if let Some(text) = walked.as_string() {
        return Ok((parse(&text), vec![]));
    }
    let parts: Array = walked.unchecked_into();
    let Some(text) = parts.get(0).as_string() else { return Err(parts) };
    let flat: Array = parts.get(1).unchecked_into();
    let kept = (0..flat.length())
        .step_by(4)
        .map(|i| Kept {
            path: segs(&flat.get(i)),
            what: string(&flat.get(i + 1)),
            marker: string(&flat.get(i + 2)),
            value: flat.get(i + 3),
        })
        .collect();
    Ok((parse(&text), kept))
}

/// `[null, path, what, at]` as a refusal below `root`.
fn refusal(r: &Array, root: &[Seg]) -> Refusal {
    let mut path = root.to_vec();
    path.extend(segs(&r.get(1)));
    let problem = match r.get(3).as_f64() {
        Some(at) if at >= 0.0 => {
            let back = &path[..(root.len() + at as usize).min(path.len())];
            outbox_core::text::concat(&["refers back to `", &short_path(back), "` (a cycle)"])
        }
        _ => outbox_core::text::concat(&["is ", &string(&r.get(2))]),
    };
    Refusal { path: short_path(&path), problem }
}

/// A path as the walk gives it: keys and indexes.
fn segs(path: &JsValue) -> Vec<Seg> {
    let Some(path) = path.dyn_ref::<Array>() else { return vec![] };
    path.iter().map(|s| s.as_f64().map_or_else(|| Seg::Key(string(&s)), |i| Seg::Index(i as u32))).collect()
}

fn string(v: &JsValue) -> String {
    v.as_string().unwrap_or_default()
}
