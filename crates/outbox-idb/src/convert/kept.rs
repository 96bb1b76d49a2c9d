//! Stored values JSON cannot hold, carried through as stored (SPEC §3 rule 2).
//!
//! Reading a row, the walker replaces each such value by a marker — `{"$outboxOpaque":
//! "2:r1Date:1700000000000"}`: the id of the row it was read in (after its length), then a
//! stable digest, so two reads of the same stored value give equal JSON and the replace
//! comparison (§4) still means something — and keeps the original here, by row id and path.
//! Writing a row, each marker is replaced by the original read last in the row it names, so
//! IndexedDB stores the same `Date` or `Blob` again. A row re-issued under a new id (§7,
//! §9) carries its unknown fields along with their markers, so it gets its own source
//! row's values, never those of another row whose digest is the same (two `Set`s of one
//! size). Every replace re-reads its rows inside its transaction just before writing them
//! (§4), so the original written is the one read in that same transaction.
//!
//! A marker inside a field this version knows (`body`, `revision`, …) cannot be sent or
//! planned on: such a row is shown to the planner without `body`, which makes it
//! undecodable (§3 rule 3: never sent, claimed or written; reported; left as it is).

use super::json::to_js;
use super::walk::{as_marker, marker, path_string, stored, Kept, Seg};
use js_sys::Reflect;
use outbox_core::codec::{KNOWN_FIELDS, KNOWN_NESTED};
use serde_json::{Map, Value};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// Where the planner's JSON of an unsendable row keeps its body and why it is unsendable.
pub const UNSENDABLE_KEY: &str = "$outboxUnsendable";

/// Rows whose originals are kept. Rows read again replace their entry, so this only grows
/// with rows deleted since; past the cap the oldest half is dropped.
const MAX_ROWS_KEPT: usize = 4096;

struct Entry {
    generation: u64,
    kept: Vec<Kept>,
    /// The stored value as read.
    whole: JsValue,
}

/// Kept rows sorted by id (binary search): a vector, not a hash map, so no hash table is
/// built into the wasm module for it (issue 35). Entries are few (rows holding what JSON
/// cannot), and at most [`MAX_ROWS_KEPT`].
#[derive(Default)]
struct Registry {
    rows: Vec<(String, Entry)>,
    generation: u64,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// The planner's JSON of a stored value; what JSON cannot hold is kept (when `remember`)
/// for [`to_store`] and [`to_app`].
pub fn read(v: &JsValue, remember: bool) -> Value {
    let (mut json, mut kept) = stored(v);
    if let Some(id) = json.get("id").and_then(Value::as_str).filter(|_| !kept.is_empty()).map(str::to_owned) {
        name_source(&mut json, &mut kept, &id);
    }
    if let Some(bad) = kept.iter().find(|k| in_known_field(&k.path)) {
        quarantine(&mut json, bad);
    }
    if remember {
        if let Some(id) = json.get("id").and_then(Value::as_str) {
            REGISTRY.with(|r| r.borrow_mut().remember(id, kept, v));
        }
    }
    json
}

/// Prefixes each marker of row `id` with the id (after its length, so any id reads back
/// whole).
fn name_source(json: &mut Value, kept: &mut [Kept], id: &str) {
    for k in kept {
        let mut named = String::new();
        crate::js::push_decimal(&mut named, id.len());
        named.push(':');
        named.push_str(id);
        named.push_str(&k.marker);
        let slot = k.path.iter().try_fold(&mut *json, |v, seg| match seg {
            Seg::Key(key) => v.get_mut(key.as_str()),
            Seg::Index(i) => v.get_mut(*i as usize),
        });
        // A value kept inside another kept one (a cycle's container) has no marker of its own.
        if let Some(slot) = slot.filter(|s| as_marker(s) == Some(k.marker.as_str())) {
            *slot = marker(&named);
        }
        k.marker = named;
    }
}

/// The id of the row a marker was read in, if [`name_source`] named one.
fn source(marker: &str) -> Option<&str> {
    let (len, rest) = marker.split_once(':')?;
    rest.get(..len.parse::<usize>().ok()?)
}

/// Whether `path` lies in a field this version reads (SPEC §3): the planner's own list
/// (`noMerge` among them, §7).
fn in_known_field(path: &[Seg]) -> bool {
    let Some(Seg::Key(first)) = path.first() else { return true };
    if let Some((_, inside)) = KNOWN_NESTED.iter().find(|(k, _)| k == first) {
        return match path.get(1) {
            Some(Seg::Key(k)) => inside.contains(&k.as_str()),
            _ => true,
        };
    }
    KNOWN_FIELDS.contains(&first.as_str())
}

/// Takes `body` out of the planner's view of the row, so that it decodes as undecodable
/// (SPEC §3 rule 3), and says why. Deterministic: the same stored row gives the same JSON.
fn quarantine(json: &mut Value, bad: &Kept) {
    let Some(map) = json.as_object_mut() else { return };
    let mut why = Map::new();
    why.insert("path".into(), Value::String(path_string(&bad.path)));
    why.insert("is".into(), Value::String(bad.what.clone()));
    if let Some(body) = outbox_core::names::remove_in_order(map, "body") {
        why.insert("body".into(), body);
    }
    map.insert(UNSENDABLE_KEY.into(), Value::Object(why));
}

/// Why a row read by [`read`] is undecodable, when a known field holds what JSON cannot.
#[must_use]
pub fn unsendable_reason(raw: &Value) -> Option<String> {
    let why = raw.get(UNSENDABLE_KEY)?;
    let path = why.get("path").and_then(Value::as_str).unwrap_or("?");
    let is = why.get("is").and_then(Value::as_str).unwrap_or("not JSON");
    Some(outbox_core::text::concat(&[
        "`",
        path,
        "` is ",
        is,
        ", which JSON cannot hold: this version never sends the row",
    ]))
}

impl Registry {
    fn at(&self, id: &str) -> std::result::Result<usize, usize> {
        self.rows.binary_search_by(|(k, _)| k.as_str().cmp(id))
    }

    fn get(&self, id: &str) -> Option<&Entry> {
        self.at(id).ok().map(|i| &self.rows[i].1)
    }

    fn remember(&mut self, id: &str, kept: Vec<Kept>, whole: &JsValue) {
        let at = self.at(id);
        if kept.is_empty() {
            if let Ok(i) = at {
                self.rows.remove(i);
            }
            return;
        }
        self.generation += 1;
        let entry = Entry { generation: self.generation, kept, whole: whole.clone() };
        match at {
            Ok(i) => self.rows[i].1 = entry,
            Err(i) => self.rows.insert(i, (id.to_owned(), entry)),
        }
        if self.rows.len() > MAX_ROWS_KEPT {
            // The oldest half goes: each generation is at most one entry, so the entries of
            // the last `MAX_ROWS_KEPT / 2` generations are at most half.
            let cut = self.generation - (MAX_ROWS_KEPT / 2) as u64;
            self.rows.retain(|(_, e)| e.generation > cut);
        }
    }

    /// The original behind `marker` at `path` of row `id`: kept for the row the marker
    /// names (`id` itself, or the row a re-issued one came from), at that path, else at
    /// another path of that row.
    fn original(&self, id: &str, path: &[Seg], marker: &str) -> Option<JsValue> {
        let kept = &self.get(source(marker).unwrap_or(id))?.kept;
        let at = |same_path: bool| kept.iter().find(|k| k.marker == marker && (!same_path || k.path == path));
        at(true).or_else(|| at(false)).map(|k| k.value.clone())
    }

    fn whole(&self, id: &str) -> Option<JsValue> {
        self.get(id).map(|e| e.whole.clone())
    }
}

/// A row to write: its JSON as JS, each marker replaced by the value it stands for.
///
/// # Errors
/// A marker whose value is no longer known; the caller must abort its transaction.
pub fn to_store(id: &str, row: &Value) -> Result<JsValue, JsValue> {
    REGISTRY.with(|r| build(row, &mut |path, marker| r.borrow().original(id, path, marker))).map_err(|path| {
        js_sys::Error::new(&outbox_core::text::concat(&[
            "the value at `",
            &path,
            "` of row ",
            id,
            " is no longer known",
        ]))
        .into()
    })
}

/// A stored row for the app: as stored, with the values JSON cannot hold.
#[must_use]
pub fn to_app(row: &Value) -> JsValue {
    let id = row.get("id").and_then(Value::as_str).unwrap_or_default();
    if row.get(UNSENDABLE_KEY).is_some() {
        if let Some(whole) = REGISTRY.with(|r| r.borrow().whole(id)) {
            return whole;
        }
    }
    REGISTRY
        .with(|r| build(row, &mut |path, marker| r.borrow().original(id, path, marker)))
        .unwrap_or_else(|_| to_js(row))
}

/// JSON as JS ([`to_js`]), each marker replaced by the value `original` gives for it
/// (`Err(path)` of the first one, in document order, that has none).
fn build(v: &Value, original: &mut Original<'_>) -> Result<JsValue, String> {
    if let Some(m) = as_marker(v) {
        return original(&[], m).ok_or_else(|| path_string(&[]));
    }
    let js = to_js(v);
    if has_marker(v) {
        patch(&js, v, &mut vec![], original)?;
    }
    Ok(js)
}

fn has_marker(v: &Value) -> bool {
    match v {
        Value::Object(map) => as_marker(v).is_some() || map.values().any(has_marker),
        Value::Array(items) => items.iter().any(has_marker),
        _ => false,
    }
}

/// Sets the original of each marker below `v` into `js`, the JS built from `v`.
fn patch(js: &JsValue, v: &Value, path: &mut Vec<Seg>, original: &mut Original<'_>) -> Result<(), String> {
    match v {
        Value::Object(map) => {
            for (k, item) in map {
                patch_child(js, Seg::Key(k.clone()), item, path, original)?;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                patch_child(js, Seg::Index(i as u32), item, path, original)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// [`patch`] of one child `item` of `js`, at `seg`.
fn patch_child(
    js: &JsValue,
    seg: Seg,
    item: &Value,
    path: &mut Vec<Seg>,
    original: &mut Original<'_>,
) -> Result<(), String> {
    if !matches!(item, Value::Object(_) | Value::Array(_)) {
        return Ok(());
    }
    let key = match &seg {
        Seg::Key(k) => JsValue::from_str(k),
        Seg::Index(i) => JsValue::from(*i),
    };
    path.push(seg);
    let done = match as_marker(item) {
        Some(m) => original(path, m).ok_or_else(|| path_string(path)).map(|o| {
            let _ = Reflect::set(js, &key, &o);
        }),
        None if has_marker(item) => patch(&Reflect::get(js, &key).unwrap_or(JsValue::UNDEFINED), item, path, original),
        None => Ok(()),
    };
    path.pop();
    done
}

/// The original a marker stands for, at a path.
type Original<'a> = dyn FnMut(&[Seg], &str) -> Option<JsValue> + 'a;
