//! The queue's reads inside a transaction: every scope's rows through its index, issued at
//! once and awaited together, as the planner's JSON.

use super::request::request;
use super::schema::{BY_OWNER_SAVED_AT, BY_OWNER_TARGET, STORE};
use super::view;
use crate::convert::stored_from_js;
use crate::error::{OutboxError, Result};
use js_sys::Array;
use outbox_core::Scope;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbKeyRange, IdbObjectStore, IdbTransaction};

pub(super) fn object_store(tx: &IdbTransaction) -> Result<IdbObjectStore> {
    tx.object_store(STORE).map_err(|e| OutboxError::storage("object store", &e))
}

/// `owner`'s range of the `[owner, savedAt]` index: its rows whose `savedAt` is a number
/// ([`Scope::Owner`]).
pub(super) fn owner_range(owner: &str) -> std::result::Result<IdbKeyRange, JsValue> {
    let at = |t: f64| Array::of2(&owner.into(), &JsValue::from_f64(t));
    IdbKeyRange::bound(&at(f64::NEG_INFINITY), &at(f64::INFINITY))
}

/// Issues every scope's read, in order.
pub(super) fn issue_reads(store: &IdbObjectStore, scopes: &[Scope]) -> Result<Vec<JsFuture>> {
    let mut pending = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let req = match scope {
            Scope::Id(id) => store.get_all_with_key(&JsValue::from_str(id)),
            Scope::Target { owner, target } => store
                .index(BY_OWNER_TARGET)
                .and_then(|i| i.get_all_with_key(&Array::of2(&owner.into(), &target.into()))),
            Scope::Owner(owner) => {
                owner_range(owner).and_then(|r| store.index(BY_OWNER_SAVED_AT)?.get_all_with_key(&r))
            }
        }
        .map_err(|e| OutboxError::storage("read", &e))?;
        pending.push(request(&req));
    }
    Ok(pending)
}

/// The rows the reads `pending` returned, each once.
pub(super) async fn await_reads(pending: Vec<JsFuture>) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for p in pending {
        out.extend(values(p.await.map_err(|e| OutboxError::storage("read", &e))?)?);
    }
    Ok(dedup(out))
}

/// `rows` without the later copies of a row. The keys seen are kept in a `serde_json::Map`,
/// the module's one map (as in [`view`]): no other set is built into the wasm module for
/// this (issue 35), and each row costs one look-up.
fn dedup(mut rows: Vec<Value>) -> Vec<Value> {
    let mut seen = serde_json::Map::new();
    rows.retain(|row| seen.insert(view::key(row), Value::Null).is_none());
    rows
}

pub(super) fn values(array: JsValue) -> Result<Vec<Value>> {
    let array: Array = array.dyn_into().map_err(|_| OutboxError::storage("read", &"not an array".into()))?;
    let mut rows = Vec::with_capacity(array.length() as usize);
    for v in array.iter() {
        rows.push(stored_from_js(&v));
    }
    Ok(rows)
}
