//! The app's own object stores in the outbox's database (`Outbox.open({records})`), so that
//! its records and the queue rows share transactions (`outbox_core::records`).
//!
//! The app declares its stores, their key paths and indexes, and a schema `version` it
//! raises whenever that declaration changes. The database version is
//! `version × 1000 + the outbox's own schema version`, so either side can grow on its own.
//! An upgrade creates the stores and indexes that are missing and replaces an index whose
//! definition changed; it never deletes a store, so no record and no queue row is lost. A
//! database whose app version is newer than the page's declaration (another tab runs a
//! newer app) is refused with `SCHEMA_NEWER`, never downgraded; one the declaration does
//! not match (a store's key changed, or stores changed without raising the version) with
//! `SCHEMA_MISMATCH` (`super::schema_mismatch`).

use crate::error::{OutboxError, Result};
use js_sys::Array;
use outbox_core::json::{boolean, fields, integer, missing, optional, sequence, string, Error};
use outbox_core::records::QUEUE_STORE;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use web_sys::{IdbDatabase, IdbIndex, IdbIndexParameters, IdbObjectStore, IdbObjectStoreParameters, IdbTransaction};

/// The largest app schema version (the database version must stay a safe integer).
pub const MAX_APP_VERSION: u32 = 4_000_000;

/// What `records` declares.
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppSchema {
    /// Raised by the app whenever `stores` changes.
    pub version: u32,
    /// The app's stores.
    pub stores: Vec<AppStore>,
}

/// One app store.
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppStore {
    /// Its name (not `outbox`).
    pub name: String,
    /// Inline key path (a string or an array of strings); none for out-of-line keys.
    #[serde(default)]
    pub key_path: Option<Value>,
    /// Generated keys.
    #[serde(default)]
    pub auto_increment: bool,
    /// Its indexes.
    #[serde(default)]
    pub indexes: Vec<AppIndex>,
}

/// One index of an app store.
#[derive(Clone, Debug, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppIndex {
    /// Its name.
    pub name: String,
    /// Key path: a string or an array of strings.
    pub key_path: Value,
    /// Unique values only.
    #[serde(default)]
    pub unique: bool,
    /// One entry per array element.
    #[serde(default)]
    pub multi_entry: bool,
}

/// A store's key path may not lead through the stub field (`$outboxMovedTo`, docs/api.md):
/// a record keyed there would read as a stub forwarding to itself.
fn names_stub_field(v: &Value) -> bool {
    let through = |p: &str| p.split('.').next() == Some(outbox_core::records::MOVED_TO);
    match v {
        Value::String(p) => through(p),
        Value::Array(ps) => ps.iter().any(|p| p.as_str().is_some_and(through)),
        _ => false,
    }
}

fn is_key_path(v: &Value) -> bool {
    match v {
        Value::String(_) => true,
        Value::Array(a) => !a.is_empty() && a.iter().all(|p| matches!(p, Value::String(s) if !s.is_empty())),
        _ => false,
    }
}

// Read by hand as serde's derive (kept for the test below, which compares both; unused, it
// adds nothing to the module) reads them, same messages included (`outbox_core::json`),
// without serde's deserializer code.
impl AppSchema {
    fn from_json(v: &Value) -> std::result::Result<AppSchema, Error> {
        let (mut version, mut stores) = (None, None);
        fields(v, "struct AppSchema", &["version", "stores"], &[false, false], true, |i, f| {
            match i {
                0 => version = Some(integer(f, "u32")?),
                _ => stores = Some(sequence(f, AppStore::from_json)?),
            }
            Ok(())
        })?;
        Ok(AppSchema {
            version: version.ok_or_else(|| missing("version"))?,
            stores: stores.ok_or_else(|| missing("stores"))?,
        })
    }
}

impl AppStore {
    fn from_json(v: &Value) -> std::result::Result<AppStore, Error> {
        let (mut name, mut key_path, mut auto_increment, mut indexes) = (None, None, false, Vec::new());
        let names = ["name", "keyPath", "autoIncrement", "indexes"];
        fields(v, "struct AppStore", &names, &[false, true, true, true], true, |i, f| {
            match i {
                0 => name = Some(string(f)?),
                1 => key_path = optional(f, |f| Ok(f.clone()))?,
                2 => auto_increment = boolean(f)?,
                _ => indexes = sequence(f, AppIndex::from_json)?,
            }
            Ok(())
        })?;
        Ok(AppStore { name: name.ok_or_else(|| missing("name"))?, key_path, auto_increment, indexes })
    }
}

impl AppIndex {
    fn from_json(v: &Value) -> std::result::Result<AppIndex, Error> {
        let (mut name, mut key_path, mut unique, mut multi_entry) = (None, None, false, false);
        let names = ["name", "keyPath", "unique", "multiEntry"];
        fields(v, "struct AppIndex", &names, &[false, false, true, true], true, |i, f| {
            match i {
                0 => name = Some(string(f)?),
                1 => key_path = Some(f.clone()),
                2 => unique = boolean(f)?,
                _ => multi_entry = boolean(f)?,
            }
            Ok(())
        })?;
        Ok(AppIndex {
            name: name.ok_or_else(|| missing("name"))?,
            key_path: key_path.ok_or_else(|| missing("keyPath"))?,
            unique,
            multi_entry,
        })
    }
}

impl AppSchema {
    /// Reads and checks the `records` option (`None` when absent).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming what is wrong: a version out of `1..=4000000`, a store
    /// named `outbox` or twice, a bad key path, an index named twice.
    pub fn parse(v: &Value) -> Result<Option<AppSchema>> {
        if v.is_null() {
            return Ok(None);
        }
        let schema = AppSchema::from_json(v).map_err(|e| {
            OutboxError::invalid(outbox_core::text::concat(&[
                "`records` must be {version, stores: [{name, keyPath?, autoIncrement?, indexes?}]}: ",
                &e,
            ]))
        })?;
        if schema.version == 0 || schema.version > MAX_APP_VERSION {
            let mut message = String::from("`records.version` must be an integer in 1..=");
            outbox_core::text::push_decimal(&mut message, MAX_APP_VERSION as usize);
            return Err(OutboxError::invalid(message));
        }
        let mut names: Vec<&str> = Vec::new();
        for s in &schema.stores {
            if s.name.is_empty() || s.name == QUEUE_STORE || names.contains(&s.name.as_str()) {
                return Err(OutboxError::invalid(outbox_core::text::concat(&[
                    "`records.stores`: `",
                    &s.name,
                    "` is empty, the queue's own store or declared twice",
                ])));
            }
            names.push(&s.name);
            if s.key_path.as_ref().is_some_and(|k| !is_key_path(k) || names_stub_field(k)) {
                return Err(OutboxError::invalid(outbox_core::text::concat(&[
                    "`records.stores`: `",
                    &s.name,
                    "` has a bad keyPath (or one through the reserved `$outboxMovedTo`)",
                ])));
            }
            let mut idx: Vec<&str> = Vec::new();
            for i in &s.indexes {
                if i.name.is_empty() || idx.contains(&i.name.as_str()) || !is_key_path(&i.key_path) {
                    return Err(OutboxError::invalid(outbox_core::text::concat(&[
                        "`records.stores`: index `",
                        &i.name,
                        "` of `",
                        &s.name,
                        "` is unnamed, declared twice or has a bad keyPath",
                    ])));
                }
                idx.push(&i.name);
            }
        }
        Ok(Some(schema))
    }

    /// The database version for this declaration and the outbox's schema version.
    #[must_use]
    pub fn db_version(&self, outbox_version: u32) -> u32 {
        self.version * 1000 + outbox_version
    }
}

/// The app schema version a database at `db_version` holds.
#[must_use]
pub fn app_version_of(db_version: f64) -> u32 {
    (db_version / 1000.0).floor() as u32
}

pub(super) fn key_path_js(v: &Value) -> JsValue {
    match v {
        Value::String(s) => JsValue::from_str(s),
        Value::Array(a) => {
            let list = Array::new();
            for p in a.iter().filter_map(Value::as_str) {
                list.push(&JsValue::from_str(p));
            }
            list.into()
        }
        _ => JsValue::NULL,
    }
}

/// A key path as JSON (`null` for none), to compare and to show.
pub(super) fn key_path_text(v: &JsValue) -> String {
    js_sys::JSON::stringify(v).map_or_else(|_| String::new(), String::from)
}

impl AppIndex {
    /// Whether the database's index `have` is this one.
    pub(super) fn is(&self, have: &IdbIndex) -> bool {
        have.key_path().is_ok_and(|k| key_path_text(&k) == key_path_text(&key_path_js(&self.key_path)))
            && have.unique() == self.unique
            && have.multi_entry() == self.multi_entry
    }
}

/// Creates the app's stores and indexes that are missing and replaces indexes whose
/// definition changed. Stores are never deleted. A declaration the database does not match
/// is refused before this runs (`super::schema_mismatch`).
///
/// # Errors
/// What IndexedDB throws (the upgrade is then aborted: nothing changes).
pub fn upgrade(db: &IdbDatabase, tx: &IdbTransaction, schema: &AppSchema) -> std::result::Result<(), JsValue> {
    for s in &schema.stores {
        let store: IdbObjectStore = if db.object_store_names().contains(&s.name) {
            tx.object_store(&s.name)?
        } else {
            let params = IdbObjectStoreParameters::new();
            if let Some(k) = &s.key_path {
                params.set_key_path(&key_path_js(k));
            }
            params.set_auto_increment(s.auto_increment);
            db.create_object_store_with_optional_parameters(&s.name, &params)?
        };
        for i in &s.indexes {
            if store.index_names().contains(&i.name) {
                if i.is(&store.index(&i.name)?) {
                    continue;
                }
                store.delete_index(&i.name)?;
            }
            let params = IdbIndexParameters::new();
            params.set_unique(i.unique);
            params.set_multi_entry(i.multi_entry);
            store.create_index_with_str_sequence_and_optional_parameters(
                &i.name,
                &key_path_js(&i.key_path),
                &params,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::AppSchema;
    use serde_json::{json, Map, Value};
    use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
    wasm_bindgen_test_configure!(run_in_browser);

    const WORDS: &[&str] =
        &["version", "stores", "name", "keyPath", "autoIncrement", "indexes", "unique", "multiEntry", "x", ""];

    /// A random value near the shape of a declaration (xorshift: no proptest in the browser).
    fn value(x: &mut u64, depth: u32) -> Value {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let pick = |x: u64, n: u64| (x >> 20) % n;
        match pick(*x, if depth == 0 { 7 } else { 10 }) {
            0 => Value::Null,
            1 => json!(pick(*x, 2) == 0),
            2 => json!(pick(*x, 5)),
            3 => json!(-(pick(*x, 3) as i64) - 1),
            4 => [json!(1.5), json!(4_294_967_296u64), json!(2.0)][pick(*x, 3) as usize].clone(),
            5 | 6 => json!(WORDS[pick(*x, WORDS.len() as u64) as usize]),
            7 => Value::Array((0..pick(*x, 5)).map(|_| value(x, depth - 1)).collect()),
            _ => {
                let n = pick(*x, 5);
                let mut m = Map::new();
                for _ in 0..n {
                    *x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let k = WORDS[pick(*x, WORDS.len() as u64) as usize];
                    m.insert(k.into(), value(x, depth - 1));
                }
                Value::Object(m)
            }
        }
    }

    #[wasm_bindgen_test]
    fn reads_declarations_as_serde_does() {
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let mut samples = vec![
            json!({"version": 1, "stores": [{"name": "a", "keyPath": "id", "indexes": [{"name": "by", "keyPath": ["a", "b"], "unique": true}]}]}),
            json!({"version": 2, "stores": [["a", null, true, []]]}),
            json!({"version": 2, "stores": [], "extra": 1}),
            json!({"stores": []}),
            json!([3, []]),
            json!([3]),
            json!([3, [], 1]),
        ];
        samples.extend((0..20_000).map(|_| value(&mut x, 4)));
        for v in samples {
            let theirs = serde_json::from_value::<AppSchema>(v.clone()).map_err(|e| e.to_string());
            assert_eq!(AppSchema::from_json(&v), theirs, "on {v}");
        }
    }
}
