//! A `records` declaration the database does not match is refused at open with
//! `SCHEMA_MISMATCH`, and nothing is opened or changed: a store's key (`keyPath`,
//! `autoIncrement`) changed, at the same `records.version` or a higher one (the upgrade is
//! not half-done), or stores and indexes changed without raising `records.version`.
#![cfg(target_arch = "wasm32")]

use outbox_idb::error::OutboxError;
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn todos(version: u32, store: Value) -> Value {
    json!({"version": version, "stores": [store]})
}

/// The store every test starts from: `todos` keyed by `id`, with index `byList`.
fn base_store() -> Value {
    json!({"name": "todos", "keyPath": "id", "indexes": [{"name": "byList", "keyPath": "list"}]})
}

async fn try_open(db: &str, records: Value) -> Result<Outbox, OutboxError> {
    let o = options(db, "tab");
    set(&o, "records", &obj(records));
    Outbox::open_with(o).await
}

async fn refused(db: &str, records: Value) -> String {
    match try_open(db, records.clone()).await {
        Ok(_) => panic!("{records} opened a database it does not match"),
        Err(e) => {
            assert_eq!(e.code.as_str(), "SCHEMA_MISMATCH", "{records}: {}", e.message);
            e.message
        }
    }
}

/// Opens with `records`, puts a record in `todos` and closes: the database holds it.
async fn seed(db: &str, records: Value) {
    let a = try_open(db, records).await.expect("the first open creates the stores");
    let op = obj(json!({"owner": "alice", "kind": "update", "target": "t1", "body": {"n": 1}}));
    let writes = obj(json!({"writes": [{"store": "todos", "put": {"id": "t1", "key": "k1", "list": "home"}}]}));
    ok(a.enqueue(op, writes)).await;
    a.close();
}

/// The database as plain IndexedDB sees it: `{version, stores: {name: {keyPath,
/// autoIncrement, indexes: {name: {keyPath, unique, multiEntry}}}}}`.
async fn described(db: &str) -> Value {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const d = r.result, stores = {};
          if (d.objectStoreNames.length) { const tx = d.transaction([...d.objectStoreNames]);
            for (const n of d.objectStoreNames) { const s = tx.objectStore(n), indexes = {};
              for (const i of s.indexNames) { const x = s.index(i);
                indexes[i] = {keyPath: x.keyPath, unique: x.unique, multiEntry: x.multiEntry}; }
              stores[n] = {keyPath: s.keyPath, autoIncrement: s.autoIncrement, indexes}; } }
          const v = d.version; d.close(); ok(JSON.stringify({version: v, stores})); }; });";
    let p = js("db", script).call1(&JsValue::NULL, &db.into()).unwrap();
    let text = settle(p.unchecked_into()).await.unwrap().as_string().unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Creates database `db` at `version` with plain IndexedDB, running `upgrade(d)` (a JS
/// body) in its `upgradeneeded`.
async fn create_raw(db: &str, version: u32, upgrade: &str) {
    let script = format!(
        "return new Promise((ok, err) => {{ const r = indexedDB.open(db, {version}); r.onerror = () => err(r.error);
          r.onupgradeneeded = () => {{ const d = r.result; {upgrade} }};
          r.onsuccess = () => {{ r.result.close(); ok(); }}; }});"
    );
    settle(js("db", &script).call1(&JsValue::NULL, &db.into()).unwrap().unchecked_into()).await.unwrap();
}

#[wasm_bindgen_test]
async fn a_changed_key_path_at_the_same_version_is_refused_naming_the_store_and_both_key_paths() {
    let db = db_name("mismatch-key-same");
    seed(&db, todos(1, base_store())).await;
    let before = described(&db).await;
    let message = refused(&db, todos(1, json!({"name": "todos", "keyPath": "key"}))).await;
    for part in ["`todos`", "\"id\"", "\"key\""] {
        assert!(message.contains(part), "{part} in: {message}");
    }
    assert_eq!(described(&db).await, before, "nothing changed");
    let a = try_open(&db, todos(1, base_store())).await.expect("the matching declaration still opens");
    assert_eq!(ok(a.record("todos".into(), "t1".into())).await["key"], "k1");
}

#[wasm_bindgen_test]
async fn a_changed_auto_increment_at_the_same_version_is_refused() {
    let db = db_name("mismatch-auto-same");
    seed(&db, todos(1, base_store())).await;
    let mut store = base_store();
    store["autoIncrement"] = json!(true);
    let message = refused(&db, todos(1, store)).await;
    assert!(message.contains("autoIncrement false") && message.contains("autoIncrement true"), "{message}");
    // An out-of-line store (no keyPath) declared with one: also a key change.
    let db = db_name("mismatch-out-of-line");
    seed(&db, todos(1, base_store())).await;
    let message = refused(&db, todos(1, json!({"name": "todos"}))).await;
    assert!(message.contains("keyPath null"), "{message}");
}

#[wasm_bindgen_test]
async fn a_changed_key_at_a_higher_version_is_refused_and_the_database_is_not_upgraded() {
    let db = db_name("mismatch-key-higher");
    seed(&db, todos(1, base_store())).await;
    let before = described(&db).await;
    assert_eq!(before["version"], 1003);
    // Version 2 adds a store and an index, which an upgrade would create, and changes the key.
    let v2 = json!({"version": 2, "stores": [
        {"name": "todos", "keyPath": ["list", "id"], "indexes": [{"name": "byList", "keyPath": "list"}, {"name": "byDone", "keyPath": "done"}]},
        {"name": "lists", "keyPath": "name"},
    ]});
    let message = refused(&db, v2).await;
    assert!(message.contains("[\"list\",\"id\"]") && message.contains("\"id\""), "{message}");
    let after = described(&db).await;
    assert_eq!(after, before, "same version, same stores, no new store or index");
    // The database still opens as it was, and with a correct version 2.
    let a = try_open(&db, todos(1, base_store())).await.expect("version 1 still opens");
    assert_eq!(ok(a.rows("alice".into())).await.as_array().unwrap().len(), 1, "the queue row is kept");
    a.close();
    let mut store = base_store();
    store["indexes"].as_array_mut().unwrap().push(json!({"name": "byDone", "keyPath": "done"}));
    let a = try_open(&db, todos(2, store)).await.expect("a version 2 keeping the key upgrades");
    assert_eq!(ok(a.record("todos".into(), "t1".into())).await["list"], "home", "records kept");
    assert_eq!(described(&db).await["version"], 2003);
}

#[wasm_bindgen_test]
async fn a_store_declared_without_raising_the_version_is_refused_until_it_is_raised() {
    let db = db_name("mismatch-store-missing");
    seed(&db, todos(1, base_store())).await;
    let two = |version| json!({"version": version, "stores": [base_store(), {"name": "lists", "keyPath": "name"}]});
    let message = refused(&db, two(1)).await;
    assert!(message.contains("`lists`") && message.contains("raise `records.version`"), "{message}");
    assert!(described(&db).await["stores"].get("lists").is_none(), "no store created");
    let a = try_open(&db, two(2)).await.expect("raised, the upgrade creates it");
    assert_eq!(ok(a.records("lists".into(), JsValue::UNDEFINED)).await, json!([]));
}

#[wasm_bindgen_test]
async fn an_index_missing_or_changed_without_raising_the_version_is_refused() {
    let db = db_name("mismatch-index");
    seed(&db, todos(1, base_store())).await;
    let with_index = |index: Value| {
        let mut store = base_store();
        store["indexes"] = json!([index]);
        todos(1, store)
    };
    for index in [
        json!({"name": "byDone", "keyPath": "done"}),
        json!({"name": "byList", "keyPath": "title"}),
        json!({"name": "byList", "keyPath": ["list"]}),
        json!({"name": "byList", "keyPath": "list", "unique": true}),
        json!({"name": "byList", "keyPath": "list", "multiEntry": true}),
    ] {
        let message = refused(&db, with_index(index.clone())).await;
        let name = index["name"].as_str().unwrap();
        assert!(message.contains(&format!("index `{name}`")) && message.contains("`records.version`"), "{message}");
    }
    try_open(&db, with_index(json!({"name": "byList", "keyPath": "list"}))).await.expect("as it is, it opens");
}

#[wasm_bindgen_test]
async fn stores_and_indexes_the_declaration_leaves_out_are_fine() {
    let db = db_name("mismatch-left-out");
    let full = json!({"version": 1, "stores": [base_store(), {"name": "lists", "keyPath": "name"}]});
    try_open(&db, full).await.expect("creates both").close();
    let fewer = todos(1, json!({"name": "todos", "keyPath": "id"}));
    try_open(&db, fewer).await.expect("a store and an index not declared are kept, not refused");
    assert!(described(&db).await["stores"]["todos"]["indexes"].get("byList").is_some(), "nothing deleted");
}

#[wasm_bindgen_test]
async fn an_upgrade_of_the_outbox_alone_refuses_app_stores_changed_at_the_same_app_version() {
    // An older library made this database: queue schema 2 (no `byOwner`) at app version 1,
    // its `todos` store without the index the page now declares at the same app version.
    let db = db_name("mismatch-outbox-upgrade");
    create_raw(
        &db,
        1002,
        "const q = d.createObjectStore('outbox', {keyPath: 'id'});
         q.createIndex('byOwnerTarget', ['owner', 'target']); q.createIndex('byOwnerSavedAt', ['owner', 'savedAt']);
         d.createObjectStore('todos', {keyPath: 'id'});",
    )
    .await;
    let before = described(&db).await;
    let message = refused(&db, todos(1, base_store())).await;
    assert!(message.contains("index `byList`"), "{message}");
    let plain = json!({"name": "todos", "keyPath": "id"});
    let message = refused(&db, json!({"version": 1, "stores": [plain.clone(), {"name": "lists"}]})).await;
    assert!(message.contains("`lists`"), "{message}");
    assert_eq!(described(&db).await, before, "the queue's own upgrade did not run either");
    let a = try_open(&db, todos(1, plain)).await.expect("matching, it upgrades");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
    assert_eq!(described(&db).await["version"], 1003);
}
