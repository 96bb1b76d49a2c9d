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
use web_sys::{IdbKeyRange, IdbObjectStore, IdbRequest, IdbTransaction};

pub(super) fn object_store(tx: &IdbTransaction) -> Result<IdbObjectStore> {
    tx.object_store(STORE).map_err(|e| OutboxError::storage("object store", &e))
}

/// `owner`'s range of the `[owner, savedAt]` index: its rows whose `savedAt` is a number
/// ([`Scope::Owner`]).
pub(super) fn owner_range(owner: &str) -> std::result::Result<IdbKeyRange, JsValue> {
    let at = |t: f64| Array::of2(&owner.into(), &JsValue::from_f64(t));
    IdbKeyRange::bound(&at(f64::NEG_INFINITY), &at(f64::INFINITY))
}

/// A transaction's reads on their way, in the order they were issued.
pub(super) struct Reads {
    requests: Vec<IdbRequest>,
    /// The last request's outcome: IndexedDB runs a transaction's requests in order, so
    /// when it has settled every request before it has too. One promise for all of them,
    /// not one each (a flush's write transaction issues about 50 reads: each promise and
    /// its callbacks cost more than the request itself, issue 35).
    last: Option<JsFuture>,
}

/// Issues every scope's read, in order.
pub(super) fn issue_reads(store: &IdbObjectStore, scopes: &[Scope]) -> Result<Reads> {
    let mut requests = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let req = match scope {
            Scope::Id(id) => store.get_all_with_key(&JsValue::from_str(id)),
            Scope::Target { owner, target } => store
                .index(BY_OWNER_TARGET)
                .and_then(|i| i.get_all_with_key(&Array::of2(&owner.into(), &target.into()))),
            Scope::Owner(owner) => {
                owner_range(owner).and_then(|r| store.index(BY_OWNER_SAVED_AT)?.get_all_with_key(&r))
            }
            Scope::Span { owner, from, to, count } => {
                let at = |t: f64| Array::of2(&owner.into(), &JsValue::from_f64(t));
                IdbKeyRange::bound(&at(*from), &at(*to))
                    .and_then(|r| store.index(BY_OWNER_SAVED_AT)?.get_all_with_key_and_limit(&r, *count))
            }
        }
        .map_err(|e| OutboxError::storage("read", &e))?;
        requests.push(req);
    }
    let last = requests.last().map(request);
    Ok(Reads { requests, last })
}

/// The rows the reads returned, each once.
///
/// # Errors
/// `STORAGE` (or `QUOTA`) with the error of the first read that failed: a failed request
/// aborts its transaction, so the last one fails too.
pub(super) async fn await_reads(reads: Reads) -> Result<Vec<Value>> {
    if let Some(last) = reads.last {
        if let Err(e) = last.await {
            let first = reads.requests.iter().find_map(|r| r.error().ok().flatten());
            return Err(OutboxError::storage("read", &first.map_or(e, JsValue::from)));
        }
    }
    let mut out = Vec::new();
    for r in &reads.requests {
        out.extend(values(r.result().map_err(|e| OutboxError::storage("read", &e))?)?);
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
