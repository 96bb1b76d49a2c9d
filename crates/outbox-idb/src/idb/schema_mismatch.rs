//! A declaration (`records`) the database does not match is refused with `SCHEMA_MISMATCH`,
//! before anything is opened or changed (Dexie throws too; silently keeping the database's
//! schema left the app writing records under another key than it declared).
//!
//! - A store's key (`keyPath`, `autoIncrement`) cannot change: IndexedDB only changes it
//!   by deleting the store, which this library never does. Checked at every open, and in an
//!   upgrade before it changes anything (the upgrade is then aborted: the database stays at
//!   its old version with its old stores).
//! - At the declared `records.version`, every declared store and index must be in the
//!   database as declared, since no upgrade runs to create or replace them: a change made
//!   without raising `records.version` would otherwise go unnoticed.
//!
//! Stores and indexes the database holds but the declaration does not name are fine: no
//! store is ever deleted, and another version of the app may use them.

use super::app_schema::{key_path_js, key_path_text, AppSchema, AppStore};
use crate::error::{OutboxError, Result};
use js_sys::Array;
use outbox_core::text;
use wasm_bindgen::prelude::*;
use web_sys::{IdbDatabase, IdbObjectStore, IdbTransaction};

/// Refuses `schema` for database `db` when a declared store's key differs from the
/// database's; also, when `same_version` (the database is at the declared app version),
/// when a declared store or index is missing or differs. `tx` is the upgrade's
/// versionchange transaction; without one, a read-only one is opened to read the stores.
///
/// # Errors
/// `SCHEMA_MISMATCH` naming the store (and index) and what to do; `STORAGE` when the
/// stores cannot be read.
pub fn check(db: &IdbDatabase, tx: Option<&IdbTransaction>, schema: &AppSchema, same_version: bool) -> Result<()> {
    let tx = match tx {
        Some(tx) => tx.clone(),
        // At open (`same_version`): a transaction over the declared stores, which fails when
        // one is missing (or none is declared).
        None => {
            let list = Array::new();
            for s in &schema.stores {
                list.push(&JsValue::from_str(&s.name));
            }
            match db.transaction_with_str_sequence(&list) {
                Ok(tx) => tx,
                Err(e) => {
                    let names = db.object_store_names();
                    return match schema.stores.iter().find(|s| !names.contains(&s.name)) {
                        Some(s) => Err(unraised(&s.name, None, schema.version)),
                        None if schema.stores.is_empty() => Ok(()),
                        None => Err(OutboxError::storage("cannot read the app's stores", &e)),
                    };
                }
            }
        }
    };
    for s in &schema.stores {
        // Not in the database: the upgrade creates it (at the same version, an error).
        let Ok(store) = tx.object_store(&s.name) else {
            if same_version {
                return Err(unraised(&s.name, None, schema.version));
            }
            continue;
        };
        same_key(&store, s)?;
        for i in s.indexes.iter().filter(|_| same_version) {
            if !store.index(&i.name).is_ok_and(|have| i.is(&have)) {
                return Err(unraised(&s.name, Some(&i.name), schema.version));
            }
        }
    }
    Ok(())
}

fn same_key(store: &IdbObjectStore, want: &AppStore) -> Result<()> {
    let have = key_path_text(&store.key_path().unwrap_or(JsValue::NULL));
    let declared = key_path_text(&want.key_path.as_ref().map_or(JsValue::NULL, key_path_js));
    let (auto, declared_auto) = (store.auto_increment(), want.auto_increment);
    if have == declared && auto == declared_auto {
        return Ok(());
    }
    Err(OutboxError::schema_mismatch(outbox_core::text::concat(&[
        "store `",
        &want.name,
        "` has keyPath ",
        &have,
        " and autoIncrement ",
        text::boolean(auto),
        " in the database, but `records` declares keyPath ",
        &declared,
        " and autoIncrement ",
        text::boolean(declared_auto),
        ": a store's key cannot change; declare it as it is, or declare a store under a new name (and copy \
             the records over)",
    ])))
}

/// The error of a declaration changed without raising `records.version`.
fn unraised(store: &str, index: Option<&str>, version: u32) -> OutboxError {
    let mut what = String::from(store);
    if let Some(i) = index {
        what.push_str("` with index `");
        what.push_str(i);
    }
    let mut message = outbox_core::text::concat(&[
        "`records` declares store `",
        &what,
        "` unlike the database, which is at the same `records.version` ",
    ]);
    text::push_decimal(&mut message, version as usize);
    message.push_str(": raise `records.version` whenever `stores` changes");
    OutboxError::schema_mismatch(message)
}
