//! The database schema (SPEC §3) and opening it: creation, upgrade from an earlier schema
//! version without losing rows, a database already upgraded by a newer library version, and
//! `versionchange` from another tab (this connection closes so the other tab's upgrade can
//! proceed; the next call reopens).
//!
//! Written against web-sys rather than rexie: rexie's builder deletes object stores it is
//! not told about on a version bump, has no `versionchange` handling and no durability
//! option, and does not expose its connection — so a second rexie connection would block
//! other tabs' upgrades forever.

use super::request::request;
use crate::error::{OutboxError, Result};
use js_sys::Array;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbDatabase, IdbFactory, IdbObjectStore, IdbOpenDbRequest, IdbTransaction};

/// The object store.
pub const STORE: &str = "outbox";
/// Index on `[owner, target]`: the scope of enqueue, ACK and conflicts.
pub const BY_OWNER_TARGET: &str = "byOwnerTarget";
/// Index on `[owner, savedAt]`: one owner's queue in send order.
pub const BY_OWNER_SAVED_AT: &str = "byOwnerSavedAt";
/// Schema version this library creates.
pub const SCHEMA_VERSION: u32 = 2;

const INDEXES: [(&str, [&str; 2]); 2] =
    [(BY_OWNER_TARGET, ["owner", "target"]), (BY_OWNER_SAVED_AT, ["owner", "savedAt"])];

fn factory() -> Result<IdbFactory> {
    let global = js_sys::global();
    let idb = js_sys::Reflect::get(&global, &"indexedDB".into())
        .map_err(|e| OutboxError::storage("indexedDB is not available", &e))?;
    idb.dyn_into::<IdbFactory>().map_err(|_| OutboxError::storage("indexedDB is not available", &JsValue::NULL))
}

/// Creates what is missing: the store (version 1 had only the store) and both indexes.
/// Existing rows and unknown stores or indexes are kept.
fn upgrade(db: &IdbDatabase, tx: &IdbTransaction) -> std::result::Result<(), JsValue> {
    let store: IdbObjectStore = if db.object_store_names().contains(STORE) {
        tx.object_store(STORE)?
    } else {
        let params = web_sys::IdbObjectStoreParameters::new();
        params.set_key_path(&JsValue::from_str("id"));
        db.create_object_store_with_optional_parameters(STORE, &params)?
    };
    let names = store.index_names();
    for (name, path) in INDEXES {
        if !names.contains(name) {
            let path: Array = path.iter().map(|p| JsValue::from_str(p)).collect();
            store.create_index_with_str_sequence(name, &path)?;
        }
    }
    Ok(())
}

/// Opens (creating or upgrading) the database `name`.
///
/// # Errors
/// `STORAGE` when IndexedDB refuses; a database a newer version upgraded past ours is
/// opened at its own version as long as it has our store and indexes.
pub async fn open(name: &str) -> Result<IdbDatabase> {
    match open_at(name, Some(SCHEMA_VERSION)).await {
        Ok(db) => Ok(db),
        Err(e) if e.message.contains("VersionError") || e.message.contains("less than") => {
            let db = open_at(name, None).await?;
            let has_store = db.object_store_names().contains(STORE);
            if !has_store {
                db.close();
                return Err(OutboxError { message: format!("database {name} has no `{STORE}` store"), ..e });
            }
            Ok(db)
        }
        Err(e) => Err(e),
    }
}

async fn open_at(name: &str, version: Option<u32>) -> Result<IdbDatabase> {
    let f = factory()?;
    let req: IdbOpenDbRequest = match version {
        Some(v) => f.open_with_u32(name, v),
        None => f.open(name),
    }
    .map_err(|e| OutboxError::storage("cannot open the database", &e))?;
    let r = req.clone();
    let on_upgrade = Closure::<dyn FnMut(web_sys::Event)>::new(move |_ev: web_sys::Event| {
        let (Ok(db), Some(tx)) = (r.result(), r.transaction()) else { return };
        let db: IdbDatabase = db.unchecked_into();
        if let Err(e) = upgrade(&db, &tx) {
            web_sys::console::error_2(&"outbox: schema upgrade failed".into(), &e);
            let _ = tx.abort();
        }
    });
    req.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
    let result = request(&req).await;
    req.set_onupgradeneeded(None);
    drop(on_upgrade);
    let db = result.map_err(|e| {
        let name = js_sys::Reflect::get(&e, &"name".into()).ok().and_then(|n| n.as_string()).unwrap_or_default();
        OutboxError::storage(&format!("cannot open the database ({name})"), &e)
    })?;
    Ok(db.unchecked_into())
}
