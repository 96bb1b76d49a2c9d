//! Carrying out the app's record writes (`outbox_core::records`) inside the transaction of
//! the queue change they go with, and reading records. No rule is decided here: which
//! writes commit, and with what, was planned by `outbox_core`; a patch or a rekey changes
//! only a record that exists, as `outbox_core::records::{patched, rekeyed}` define.

use super::request::request;
use super::transaction::transaction_failed;
use crate::convert::{from_js, to_js};
use crate::error::{dom_name, OutboxError, Result};
use js_sys::{Array, Object, Reflect};
use outbox_core::records::{is_key, set_key, stub, Landing, RecordWrite, MOVED_TO};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use web_sys::{IdbObjectStore, IdbTransaction};

/// A record a transaction changed: its store and key (for the cross-tab notice).
pub type Changed = (String, JsValue);

/// Which app stores a transaction must cover besides the queue.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum AppStores {
    /// The queue alone.
    #[default]
    None,
    /// These (checked to exist).
    Named(Vec<String>),
    /// Every store of the database (a `reconcile` port may write any of them).
    All,
}

impl AppStores {
    /// The stores written by `writes`.
    #[must_use]
    pub fn of(writes: &[RecordWrite]) -> AppStores {
        let mut names: Vec<String> = Vec::new();
        for w in writes {
            if !names.iter().any(|n| n == w.store()) {
                names.push(w.store().to_owned());
            }
        }
        if names.is_empty() {
            AppStores::None
        } else {
            AppStores::Named(names)
        }
    }
}

fn refused(tx: &IdbTransaction, store: &str, e: &JsValue) -> OutboxError {
    let what = dom_name(e).unwrap_or_else(|| "Error".into());
    let msg = crate::js::get(e, "message").as_string().unwrap_or_default();
    match what.as_str() {
        "QuotaExceededError" => return OutboxError::storage("record write", e),
        // The transaction failed before this write ran (an earlier put broke a unique index,
        // the quota ran out): what failed it is the error, not this write. With no error it
        // was aborted outright (a panic's clean-up, a dropped call): the database's failure,
        // not the app's argument.
        "AbortError" | "TransactionInactiveError" => {
            return tx
                .error()
                .map_or_else(|| OutboxError::storage("record write", e), |cause| transaction_failed(&cause));
        }
        _ => {}
    }
    OutboxError::invalid(outbox_core::text::concat(&[
        "a record write to `",
        store,
        "` was refused (",
        &what,
        ": ",
        &msg,
        "); nothing was written",
    ]))
}

fn key_path(store: &IdbObjectStore) -> Value {
    store.key_path().ok().and_then(|k| from_js(&k, "keyPath").ok()).unwrap_or(Value::Null)
}

/// The same on a JS object (a record read back, which may hold values JSON cannot).
fn set_key_js(obj: &JsValue, path: &Value, key: &Value) -> std::result::Result<(), JsValue> {
    let set_one = |p: &str, k: &Value| -> std::result::Result<(), JsValue> {
        // Each part but the last is an object on the way (made if missing).
        let mut parts = p.split('.');
        let mut part = parts.next().unwrap_or_default();
        let mut cur = obj.clone();
        for last in parts {
            let next = Reflect::get(&cur, &part.into())?;
            let next = if next.is_object() { next } else { Object::new().into() };
            Reflect::set(&cur, &part.into(), &next)?;
            (cur, part) = (next, last);
        }
        Reflect::set(&cur, &part.into(), &to_js(k))?;
        Ok(())
    };
    match (path, key) {
        (Value::String(p), _) => set_one(p, key),
        (Value::Array(ps), Value::Array(ks)) if ps.len() == ks.len() => {
            ps.iter().zip(ks).try_for_each(|(p, k)| set_one(p.as_str().unwrap_or_default(), k))
        }
        _ => Err(JsValue::from_str("the key does not fit the store's compound key path")),
    }
}

fn put(store: &IdbObjectStore, value: &JsValue, key: Option<&Value>) -> std::result::Result<(), JsValue> {
    match key {
        Some(k) => store.put_with_key(value, &to_js(k)).map(drop),
        None => store.put(value).map(drop),
    }
}

/// The key a write naming `key` lands on, and the record there: `key`, or where the
/// forwarding stubs left by rekeys lead, however many (`outbox_core::records::Landing`).
/// Stubs that form a cycle (written outside the library) are followed until the one that
/// turns back: that key and its stub are returned, which is no record.
async fn landing(store: &IdbObjectStore, key: &Value) -> std::result::Result<(Value, JsValue), JsValue> {
    let mut landing = Landing::new(key.clone());
    // One read awaited at one point, whichever key it is (one state, issue 35).
    loop {
        let current = request(&store.get(&to_js(landing.key()))?).await?;
        if !moved_to(&current).is_some_and(|to| landing.follow(to)) {
            return Ok((landing.key().clone(), current));
        }
    }
}

/// The key a stub forwards to (`None` for a record or nothing).
pub fn moved_to(v: &JsValue) -> Option<Value> {
    if !v.is_object() {
        return None;
    }
    let to = Some(crate::js::get(v, MOVED_TO)).filter(|t| !t.is_undefined())?;
    // Written by `stub` as JSON; anything JSON cannot hold is not a key.
    from_js(&to, MOVED_TO).ok().filter(is_key)
}

/// A shallow copy of `current` with `set` over it, made by `Object.fromEntries`, which
/// defines each field: assigned (`Object.assign`), a field named `__proto__` would change
/// the copy's prototype instead and be lost.
/// It cannot fail for a record IndexedDB gave (a structured clone: no getter, no Proxy);
/// if it did, the write fails rather than storing a record with fields missing.
fn merged(current: &JsValue, set: &serde_json::Map<String, Value>) -> std::result::Result<JsValue, JsValue> {
    // As a `Value`: no `to_js` of a map of its own in the module (issue 35).
    let set = to_js(&Value::Object(set.clone()));
    let fields = crate::js::entries(current)?.concat(&crate::js::entries(&set)?);
    Object::from_entries(&fields).map(JsValue::from)
}

/// The key `value` holds at the store's key `path`: at a dotted path, or one key per
/// component of a compound key path (an array of them). `None` when a part is missing or is
/// no key, and for out-of-line keys (`null`).
fn key_in_value(value: &Value, path: &Value) -> Option<Value> {
    let at = |p: &Value| p.as_str()?.split('.').try_fold(value, |v, part| v.get(part)).filter(|k| is_key(k)).cloned();
    match path {
        Value::String(_) => at(path),
        Value::Array(ps) => {
            let mut parts = Vec::with_capacity(ps.len());
            for p in ps {
                parts.push(at(p)?);
            }
            Some(Value::Array(parts))
        }
        _ => None,
    }
}

/// Refuses, before anything is issued, the writes IndexedDB would certainly refuse: a store
/// the transaction does not cover, a put with no key to store it under (none given, none at
/// the store's key path, no key generator), a key that does not fit a compound key path.
///
/// # Errors
/// What is wrong with the first such write.
pub fn check(tx: &IdbTransaction, writes: &[RecordWrite]) -> std::result::Result<(), String> {
    for w in writes {
        let name = w.store();
        let store = tx
            .object_store(name)
            .map_err(|_| outbox_core::text::concat(&["no store `", name, "` in this transaction"]))?;
        let path = key_path(&store);
        if let RecordWrite::Put { value, key, .. } = w {
            let fits = match (&path, key) {
                (Value::Null, None) => store.auto_increment(),
                (Value::Null, Some(_)) => true,
                (p, Some(k)) => set_key(&mut value.clone(), p, k),
                (Value::String(_), None) if store.auto_increment() => true,
                (p, None) => key_in_value(value, p).is_some(),
            };
            if !fits {
                return Err(outbox_core::text::concat(&["a put to `", name, "` has no key that fits the store"]));
            }
        }
    }
    Ok(())
}

/// Carries out `writes` in order inside `tx` (requests of that transaction only, awaited in
/// it). Returns the records changed.
///
/// # Errors
/// `INVALID_ARGUMENT` when IndexedDB refuses a write (no such store, a value without its
/// key, a key of the wrong shape) — the caller's transaction is then aborted, nothing of it
/// is written; `QUOTA`/`STORAGE` when IndexedDB fails.
pub async fn apply(tx: &IdbTransaction, writes: &[RecordWrite]) -> Result<Vec<Changed>> {
    let mut changed = Vec::with_capacity(writes.len());
    for w in writes {
        let name = w.store();
        let store = tx.object_store(name).map_err(|e| refused(tx, name, &e))?;
        let path = key_path(&store);
        let inline = !path.is_null();
        let fail = |e: JsValue| refused(tx, name, &e);
        // The key each write lands on, read at one await for every kind of write (one state
        // of this future, not four, issue 35): a put's key given or at its key path (none:
        // the store generates it), the key a delete, patch or rekey names.
        let named = match w {
            RecordWrite::Put { value, key, .. } => key.clone().or_else(|| key_in_value(value, &path)).filter(is_key),
            RecordWrite::Delete { key, .. } | RecordWrite::Patch { key, .. } => Some(key.clone()),
            RecordWrite::Rekey { from, .. } => Some(from.clone()),
        };
        // A write by a key a rekey left behind lands on the moved record.
        let (key, current) = match named {
            Some(k) => {
                let (k, current) = landing(&store, &k).await.map_err(fail)?;
                (Some(k), current)
            }
            None => (None, JsValue::UNDEFINED),
        };
        match (w, key) {
            (RecordWrite::Put { value, .. }, at) => {
                let mut value = value.clone();
                match &at {
                    Some(k) if inline => {
                        if !set_key(&mut value, &path, k) {
                            return Err(fail("the key does not fit the store's compound key path".into()));
                        }
                        put(&store, &to_js(&value), None).map_err(fail)?;
                    }
                    k => put(&store, &to_js(&value), k.as_ref()).map_err(fail)?,
                }
                changed.extend(at.map(|k| (name.to_owned(), to_js(&k))));
            }
            (_, None) => {} // a delete, patch or rekey always names its key
            (RecordWrite::Delete { .. }, Some(key)) => {
                store.delete(&to_js(&key)).map_err(fail)?;
                changed.push((name.to_owned(), to_js(&key)));
            }
            (RecordWrite::Patch { set, .. }, Some(key)) => {
                if current.is_object() && moved_to(&current).is_none() {
                    put(&store, &merged(&current, set).map_err(fail)?, (!inline).then_some(&key)).map_err(fail)?;
                    changed.push((name.to_owned(), to_js(&key)));
                }
            }
            (RecordWrite::Rekey { to, set, .. }, Some(from)) => {
                if current.is_object() && moved_to(&current).is_none() {
                    let moved = merged(&current, set).map_err(fail)?;
                    if inline {
                        set_key_js(&moved, &path, to).map_err(fail)?;
                    }
                    // The old key keeps a stub, so that a write still naming it follows.
                    let left = to_js(&stub(&path, &from, to));
                    put(&store, &left, (!inline).then_some(&from)).map_err(fail)?;
                    put(&store, &moved, (!inline).then_some(to)).map_err(fail)?;
                    changed.push((name.to_owned(), to_js(&from)));
                    changed.push((name.to_owned(), to_js(to)));
                }
            }
        }
    }
    Ok(changed)
}

/// The names of the stores a transaction covers: the queue's, and `app`'s, checked to exist.
///
/// # Errors
/// `INVALID_ARGUMENT` naming an app store the database does not have.
pub fn scope(db: &web_sys::IdbDatabase, queue: &str, app: &AppStores) -> Result<Array> {
    let out = Array::of1(&queue.into());
    if matches!(app, AppStores::None) {
        return Ok(out); // the common case: no list of the database's stores to fetch
    }
    let names = db.object_store_names();
    match app {
        AppStores::None => {}
        AppStores::Named(list) => {
            for n in list {
                if !names.contains(n) {
                    return Err(OutboxError::invalid(outbox_core::text::concat(&[
                        "no app store `",
                        n,
                        "` in the database: declare it in Outbox.open({records}) and raise its version",
                    ])));
                }
                out.push(&n.into());
            }
        }
        AppStores::All => {
            for i in 0..names.length() {
                if let Some(n) = names.item(i).filter(|n| n != queue) {
                    out.push(&n.into());
                }
            }
        }
    }
    Ok(out)
}

/// Whether a value IndexedDB would refuse as a key failed a read (a `DataError`).
pub fn is_data_error(e: &JsValue) -> bool {
    dom_name(e).as_deref() == Some("DataError")
}
