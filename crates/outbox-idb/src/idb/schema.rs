//! The database schema (SPEC §3) and opening it: creation, upgrade from an earlier schema
//! version without losing rows, a database already upgraded by a newer library version, and
//! `versionchange` from another tab (this connection closes so the other tab's upgrade can
//! proceed; the next call reopens).
//!
//! Written against web-sys rather than rexie: rexie's builder deletes object stores it is
//! not told about on a version bump, has no `versionchange` handling and no durability
//! option, and does not expose its connection — so a second rexie connection would block
//! other tabs' upgrades forever.

use super::app_schema::{self, app_version_of, AppSchema};
use super::open::{wait, OpenError, Upgrade};
use super::schema_mismatch;
use crate::error::{OutboxError, Result};
use js_sys::Array;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbDatabase, IdbFactory, IdbObjectStore, IdbOpenDbRequest, IdbTransaction};

/// The object store.
pub const STORE: &str = "outbox";
/// Index on `[owner, target]`: the scope of enqueue, ACK and conflicts.
pub const BY_OWNER_TARGET: &str = "byOwnerTarget";
/// Index on `[owner, savedAt]`: one owner's queue in send order.
pub const BY_OWNER_SAVED_AT: &str = "byOwnerSavedAt";
/// Index on `owner` alone: every value of one owner, also one whose `savedAt` is not a
/// valid key (undecodable), for `rows(owner)` and `metrics(owner)` without a full scan.
pub const BY_OWNER: &str = "byOwner";
/// Schema version this library creates (1: the store; 2: the two compound indexes;
/// 3: `byOwner`).
pub const SCHEMA_VERSION: u32 = 3;

const INDEXES: [(&str, &[&str]); 3] =
    [(BY_OWNER_TARGET, &["owner", "target"]), (BY_OWNER_SAVED_AT, &["owner", "savedAt"]), (BY_OWNER, &["owner"])];

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
        if names.contains(name) {
            continue;
        }
        if let [single] = path {
            store.create_index_with_str(name, single)?;
        } else {
            let list = Array::new();
            for p in path.iter() {
                list.push(&JsValue::from_str(p));
            }
            store.create_index_with_str_sequence(name, &list)?;
        }
    }
    Ok(())
}

/// How long opening may wait for other tabs before it fails with `BLOCKED`
/// (`openTimeoutMs`); see [`super::open`].
pub const DEFAULT_OPEN_TIMEOUT_MS: u32 = 5_000;

/// Opens (creating or upgrading) the database `name`. The connection closes itself on
/// `versionchange`.
///
/// # Errors
/// `BLOCKED` when another tab keeps the database from opening for `timeout_ms`; `STORAGE`
/// (or `QUOTA`) when IndexedDB refuses. A database a newer version upgraded past ours is
/// opened at its own version as long as it has our store. `SCHEMA_NEWER` and
/// `SCHEMA_MISMATCH` when `app` does not fit the database (nothing opened or changed).
pub async fn open(name: String, timeout_ms: u32, app: Option<Rc<AppSchema>>) -> Result<IdbDatabase> {
    let version = app.as_ref().map_or(SCHEMA_VERSION, |a| a.db_version(SCHEMA_VERSION));
    // Each request awaited by `wait` itself: no future of its own (issue 35). First at our
    // version with our upgrade; on `VersionError` (a newer version upgraded it) again at
    // the database's own version, without one. Both at one await (one state, issue 35).
    let mut at = Some(version);
    let db = loop {
        let upgrade = upgrade_of(if at.is_some() { app.clone() } else { None });
        match wait(request(&name, at), timeout_ms, upgrade).await {
            Ok(db) => break db,
            Err(OpenError::Version) if at.is_some() => at = None,
            Err(OpenError::Version) => {
                return Err(OutboxError::storage("cannot open the database", &"VersionError".into()))
            }
            Err(OpenError::Other(e)) => return Err(e),
        }
    };
    if at.is_none() {
        if !db.object_store_names().contains(STORE) {
            db.close();
            return Err(OutboxError::storage(
                "cannot open the database",
                &outbox_core::text::concat(&[&name, " has no `", STORE, "` store"]).into(),
            ));
        }
        if let Some(a) = app.as_ref().filter(|a| app_version_of(db.version()) > a.version) {
            let have = app_version_of(db.version());
            db.close();
            return Err(OutboxError::schema_newer(have, a.version));
        }
    }
    // The database is at the declared app version now (upgraded to it, or it was already).
    if let Some(e) = app.and_then(|a| schema_mismatch::check(&db, None, &a, true).err()) {
        db.close();
        return Err(e);
    }
    Ok(db)
}

/// `indexedDB.open(name, version)`, at the database's own version when `version` is `None`.
fn request(name: &str, version: Option<u32>) -> Result<IdbOpenDbRequest> {
    let f = factory()?;
    match version {
        Some(v) => f.open_with_u32(name, v),
        None => f.open(name),
    }
    .map_err(|e| OutboxError::storage("cannot open the database", &e))
}

/// What an open does at `upgradeneeded`: our store and indexes, and `app`'s stores.
fn upgrade_of(app: Option<Rc<AppSchema>>) -> Upgrade {
    Box::new(move |db, tx, old| {
        if let Some(a) = &app {
            schema_mismatch::check(db, Some(tx), a, app_version_of(old) == a.version)?;
        }
        let upgraded = upgrade(db, tx).and_then(|()| app.as_ref().map_or(Ok(()), |a| app_schema::upgrade(db, tx, a)));
        upgraded.map_err(|e| OutboxError::storage("cannot upgrade the database", &e))
    })
}
