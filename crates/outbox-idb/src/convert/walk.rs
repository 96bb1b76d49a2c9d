//! One walk over a JS value that builds its JSON, with `js_sys` only (`typeof`,
//! `Array.isArray`, `Object.getPrototypeOf`, `Object.keys`), never through serde: serde
//! turns a `Date` or a `Blob` into `{}`, a `BigInt` into a number and `undefined` into
//! `null` without a word, and recurses without a limit, so a cyclic or very deep value
//! overflows the wasm stack and corrupts the module's memory.
//!
//! The walk is bounded: depth (a limit), cycles (the objects on the current path) and total
//! work (a node budget, because shared sub-objects are visited once per reference). What
//! it finds that JSON cannot hold is refused ([`Mode::App`]) or kept aside as an opaque
//! marker with the original value ([`Mode::Stored`]).

pub(super) use super::foreign::{as_marker, marker};
use super::foreign::{describe, fnv, reserved_key, text, utf16_digest, Foreign, OPAQUE_KEY};
use super::path::short_path;
pub(super) use super::path::{path_string, Seg};
use crate::js::{is_array, own_keys, prototype_of};
use js_sys::{JsString, Object, Reflect};
use serde_json::{Map, Value};
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

thread_local! {
    /// This realm's `Object.prototype` (it cannot be replaced).
    static OBJECT_PROTOTYPE: JsValue = Object::get_prototype_of(&Object::new()).into();
}

/// What to do with a value JSON cannot hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The app gave it: refuse (SPEC §3 rule 4).
    App,
    /// It is stored (another writer put it there): keep it aside, opaque (SPEC §3 rule 2).
    Stored,
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

enum Node {
    Leaf(Value),
    Container { array: bool },
    Foreign(Foreign),
}

struct Walked {
    value: Value,
    /// The outermost ancestor (by path length) that a back edge below points to.
    back_to: Option<usize>,
}

/// One walk; `kept` collects what a stored row holds that JSON cannot.
pub struct Walker {
    mode: Mode,
    max_depth: usize,
    max_nodes: usize,
    path: Vec<Seg>,
    /// Objects on the current path → the length of the path at them (made at the first).
    open: Option<js_sys::Map>,
    nodes: usize,
    object_proto: JsValue,
    /// Values kept aside (stored mode).
    pub kept: Vec<Kept>,
}

type Step = Result<Walked, Refusal>;

impl Walker {
    /// A walk in `mode` starting at `root` (the path every message starts with).
    #[must_use]
    pub fn new(mode: Mode, root: Vec<Seg>) -> Walker {
        let object_proto = OBJECT_PROTOTYPE.with(JsValue::clone);
        let max_depth = match mode {
            Mode::App => MAX_APP_DEPTH,
            Mode::Stored => MAX_STORED_DEPTH,
        };
        let max_nodes = match mode {
            Mode::App => MAX_NODES,
            Mode::Stored => MAX_STORED_NODES,
        };
        Walker { mode, max_depth, max_nodes, path: root, open: None, nodes: 0, object_proto, kept: vec![] }
    }

    /// The JSON of `v`.
    ///
    /// # Errors
    /// In [`Mode::App`], the first value JSON cannot hold, with its path. [`Mode::Stored`]
    /// never fails.
    pub fn walk(&mut self, v: &JsValue) -> Result<Value, Refusal> {
        self.step(v, 0).map(|w| w.value)
    }

    fn step(&mut self, v: &JsValue, depth: usize) -> Step {
        self.nodes += 1;
        if let Some(large) = self.too_large(0) {
            return self.foreign(v, large);
        }
        match self.classify(v) {
            Node::Leaf(value) => Ok(Walked { value, back_to: None }),
            Node::Foreign(f) => self.foreign(v, f),
            Node::Container { array } => self.container(v, depth, array),
        }
    }

    /// Past the node budget, with `items` more to come (a container's length is checked
    /// before its items are read: a sparse array of length 2^32 − 1 costs nothing to store).
    fn too_large(&self, items: u32) -> Option<Foreign> {
        (self.nodes.saturating_add(items as usize) > self.max_nodes).then(|| Foreign {
            what: format!(
                "part of a value with more than {} parts (shared objects count once per use)",
                self.max_nodes
            ),
            marker: "Large".into(),
        })
    }

    /// Refuses `v` (app) or keeps it aside behind a marker (stored).
    fn foreign(&mut self, v: &JsValue, f: Foreign) -> Step {
        match self.mode {
            Mode::App => Err(Refusal { path: short_path(&self.path), problem: format!("is {}", f.what) }),
            Mode::Stored => {
                let value = marker(&f.marker);
                self.kept.push(Kept { path: self.path.clone(), what: f.what, marker: f.marker, value: v.clone() });
                Ok(Walked { value, back_to: None })
            }
        }
    }

    fn container(&mut self, v: &JsValue, depth: usize, array: bool) -> Step {
        if depth >= self.max_depth {
            let what = format!("nested deeper than {} levels", self.max_depth);
            return match self.mode {
                Mode::App => Err(Refusal { path: short_path(&self.path), problem: format!("is {what}") }),
                Mode::Stored => self.foreign(v, Foreign { what: format!("a value {what}"), marker: "Deep".into() }),
            };
        }
        let open = self.open.get_or_insert_with(js_sys::Map::new).clone();
        if let Some(at) = open.get(v).as_f64() {
            let at = at as usize;
            return match self.mode {
                Mode::App => Err(Refusal {
                    path: short_path(&self.path),
                    problem: format!("refers back to `{}` (a cycle)", short_path(&self.path[..at])),
                }),
                // A back edge to the row itself: the edge is kept as it is.
                Mode::Stored if at == 0 => self.foreign(v, Foreign { what: "a cycle".into(), marker: "Cycle".into() }),
                // Otherwise the object it points to is kept whole, with its cycle (below).
                Mode::Stored => Ok(Walked { value: marker("Cycle"), back_to: Some(at) }),
            };
        }
        let here = self.path.len();
        let kept_before = self.kept.len();
        open.set(v, &JsValue::from(here as f64));
        let walked = if array { self.array(v, depth) } else { self.object(v, depth) };
        open.delete(v);
        let mut walked = walked?;
        if walked.back_to == Some(here) {
            // The cycle closes here: this object is kept whole, so the cycle is written back
            // as the same cycle. Its marker digests what the walk saw inside.
            self.kept.truncate(kept_before);
            let digest = fnv(serde_json::to_string(&walked.value).unwrap_or_default().as_bytes());
            walked = self.foreign(v, Foreign { what: "a cycle".into(), marker: format!("Cycle:{digest:016x}") })?;
        }
        Ok(walked)
    }

    fn array(&mut self, v: &JsValue, depth: usize) -> Step {
        let len = match Reflect::get(v, &"length".into()) {
            Ok(len) => len.as_f64().unwrap_or(0.0) as u32,
            Err(e) => return self.unreadable(v, &e),
        };
        if let Some(large) = self.too_large(len) {
            return self.foreign(v, large);
        }
        let mut items = Vec::with_capacity(len.min(1024) as usize);
        let mut back_to: Option<usize> = None;
        for i in 0..len {
            self.path.push(Seg::Index(i));
            let item = match Reflect::get_u32(v, i) {
                Ok(item) => self.step(&item, depth + 1),
                Err(e) => self.unreadable(v, &e),
            };
            self.path.pop();
            let item = item?;
            back_to = outer(back_to, item.back_to);
            items.push(item.value);
        }
        Ok(Walked { value: Value::Array(items), back_to })
    }

    fn object(&mut self, v: &JsValue, depth: usize) -> Step {
        let keys = match own_keys(v) {
            Ok(keys) => keys,
            Err(e) => return self.unreadable(v, &e),
        };
        if let Some(large) = self.too_large(keys.length()) {
            return self.foreign(v, large);
        }
        let mut map = Map::new();
        let mut back_to: Option<usize> = None;
        let kept_before = self.kept.len();
        let mut reserved = false;
        for key in keys.iter() {
            let Some(k) = valid_string(&key) else {
                self.kept.truncate(kept_before);
                let what = "an object with a key holding an unpaired surrogate".to_owned();
                return self.foreign(v, Foreign { what, marker: format!("Object:{:016x}", utf16_digest(&key)) });
            };
            if k == OPAQUE_KEY {
                if self.mode == Mode::App {
                    return self.foreign(v, reserved_key(""));
                }
                reserved = true;
            }
            self.path.push(Seg::Key(k.clone()));
            let item = match Reflect::get(v, &key) {
                Ok(item) => self.step(&item, depth + 1),
                Err(e) => self.unreadable(v, &e),
            };
            self.path.pop();
            let item = item?;
            back_to = outer(back_to, item.back_to);
            map.insert(k, item.value);
        }
        let value = Value::Object(map);
        if reserved {
            // Read back as it is, this object could pass for a marker: it is kept whole.
            self.kept.truncate(kept_before);
            let walked = self.foreign(
                v,
                reserved_key(&format!(":{:016x}", fnv(serde_json::to_string(&value).unwrap_or_default().as_bytes()))),
            )?;
            return Ok(Walked { back_to, ..walked });
        }
        Ok(Walked { value, back_to })
    }

    fn unreadable(&mut self, v: &JsValue, e: &JsValue) -> Step {
        let why = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default();
        self.foreign(v, Foreign { what: format!("a value that cannot be read ({why})"), marker: "Unreadable".into() })
    }

    fn classify(&self, v: &JsValue) -> Node {
        let foreign = |what: &str, marker: String| Node::Foreign(Foreign { what: what.to_owned(), marker });
        // Digests only for stored values: the app's are refused whatever their marker (and
        // a BigInt of a million digits takes seconds to write out).
        let stored = self.mode == Mode::Stored;
        // The kinds JSON holds first, each by a check that builds no string (`typeof` does).
        if let Some(n) = v.as_f64() {
            return match n {
                n if n.is_finite() => Node::Leaf(number(n)),
                n if n.is_nan() => foreign("NaN", "Number:NaN".into()),
                n if n > 0.0 => foreign("Infinity", "Number:Infinity".into()),
                _ => foreign("-Infinity", "Number:-Infinity".into()),
            };
        }
        if let Some(s) = v.as_string() {
            return match checked(s, v) {
                Some(s) => Node::Leaf(Value::String(s)),
                None => foreign(
                    "a string with an unpaired surrogate",
                    if stored { format!("String:{:016x}", utf16_digest(v)) } else { String::new() },
                ),
            };
        }
        if let Some(b) = v.as_bool() {
            return Node::Leaf(Value::Bool(b));
        }
        if v.is_null() {
            return Node::Leaf(Value::Null);
        }
        if v.is_object() {
            return match is_array(v) {
                Ok(true) => Node::Container { array: true },
                Ok(false) => match prototype_of(v) {
                    Ok(p) if p.is_null() || p == self.object_proto || is_object_prototype(&p) => {
                        Node::Container { array: false }
                    }
                    Ok(p) => Node::Foreign(describe(v, &p, &self.object_proto, stored)),
                    Err(_) => foreign("an object whose prototype cannot be read", "Unreadable".into()),
                },
                Err(_) => foreign("an object that cannot be read", "Unreadable".into()),
            };
        }
        match v.js_typeof().as_string().as_deref() {
            Some("bigint") => foreign("a BigInt", if stored { format!("BigInt:{}", text(v)) } else { String::new() }),
            Some("symbol") => foreign("a symbol", "Symbol".into()),
            Some("function") => foreign("a function", "Function".into()),
            // `undefined`, and what claims to be (`document.all`).
            _ => foreign("undefined", "undefined".into()),
        }
    }
}

/// Whether `p` is the `Object.prototype` of another realm (a same-origin iframe or window,
/// a WebDriver sandbox): a plain object made there is JSON as much as one made here (§3
/// rule 4). Such a prototype has no prototype and is its constructor's `prototype`.
fn is_object_prototype(p: &JsValue) -> bool {
    let top = prototype_of(p).is_ok_and(|pp| pp.is_null());
    top && Reflect::get(p, &"constructor".into())
        .ok()
        .filter(JsValue::is_function)
        .and_then(|c| Reflect::get(&c, &"prototype".into()).ok())
        .is_some_and(|cp| cp == *p)
}

fn outer(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// A finite number as JSON, safe integers as integers (as serde-wasm-bindgen, which read
/// rows before this walker, read them: rows read by either compare equal).
fn number(n: f64) -> Value {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if n.fract() == 0.0 && n.abs() <= MAX_SAFE {
        if n >= 0.0 {
            Value::from(n as u64)
        } else {
            Value::from(n as i64)
        }
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// The string `v` holds, if it is a string without an unpaired surrogate. Read in one
/// crossing (`as_string`), which turns an unpaired surrogate into U+FFFD: only a string
/// holding U+FFFD after it is checked unit by unit (`is_valid_utf16`, one call per unit).
fn valid_string(v: &JsValue) -> Option<String> {
    checked(v.as_string()?, v)
}

/// `s`, read from `v` by `as_string`, if `v` holds no unpaired surrogate.
fn checked(s: String, v: &JsValue) -> Option<String> {
    // The UTF-8 bytes of U+FFFD, searched as bytes: `contains` of a non-ASCII char links
    // the standard library's substring searcher (about 2 KB of wasm, issue 35).
    let replacement = s.as_bytes().windows(3).any(|w| w == [0xEF, 0xBF, 0xBD]);
    if !replacement || v.unchecked_ref::<JsString>().is_valid_utf16() {
        Some(s)
    } else {
        None
    }
}
