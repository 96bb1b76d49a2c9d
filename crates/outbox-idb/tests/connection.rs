//! The connection's life in a real Chromium: opening never hangs, reopening after another
//! tab's upgrade happens once and keeps `strict` durability, `close()` and a freed outbox
//! leave no connection that blocks other tabs, and a write that fails midway writes
//! nothing (SPEC §4). "Other tabs" are raw IndexedDB connections opened from JavaScript, as
//! an older app (or one without `versionchange` handling) would open them.
#![cfg(target_arch = "wasm32")]

use futures_util::future::{join, join_all};
use js_sys::{Function, Promise, Reflect};
use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use outbox_idb::convert::{from_js, to_js};
use outbox_idb::error::OutboxError;
use outbox_idb::idb::{Durability, Store};
use outbox_idb::Outbox;
use serde_json::{json, Value};
use std::future::Future;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// How long a test waits for a promise before calling it hung: far above the
/// `openTimeoutMs` the tests pass, far below "forever".
const HANG_MS: u32 = 3_000;
/// The `openTimeoutMs` the tests pass.
const OPEN_TIMEOUT_MS: u32 = 200;

fn db_name(test: &str) -> String {
    format!("{test}-{}", uuid::Uuid::new_v4())
}

fn options(db: &str) -> JsValue {
    to_js(&json!({"dbName": db, "tabId": "tab-a", "openTimeoutMs": OPEN_TIMEOUT_MS}))
}

/// Calls a JS function made from `args` and `body` with `argv`.
fn js(args: &str, body: &str, argv: &[JsValue]) -> JsValue {
    let f = Function::new_with_args(args, body);
    let argv: js_sys::Array = argv.iter().collect();
    f.apply(&JsValue::NULL, &argv).expect("test script runs")
}

async fn done(p: JsValue) -> Result<JsValue, JsValue> {
    JsFuture::from(p.unchecked_into::<Promise>()).await
}

/// Settles with `p`'s outcome, or `None` if it is still pending after [`HANG_MS`].
async fn within(p: Promise) -> Option<Result<JsValue, JsValue>> {
    let hung = JsValue::from_str("hung");
    let timer =
        js("v, ms", "return new Promise((ok) => setTimeout(() => ok(v), ms));", &[hung.clone(), HANG_MS.into()]);
    let winner = JsFuture::from(Promise::race(&js_sys::Array::of2(&p, &timer))).await;
    match winner {
        Ok(v) if v == hung => None,
        other => Some(other),
    }
}

fn code(err: &JsValue) -> String {
    Reflect::get(err, &"code".into()).ok().and_then(|c| c.as_string()).unwrap_or_else(|| format!("no code: {err:?}"))
}

/// A connection of an older app: opened at `version` (creating the bare v1 store when it
/// creates the database), with no `versionchange` handler, so it never lets go.
async fn hold_open(db: &str, version: u32) -> JsValue {
    let script = "return new Promise((ok, err) => {
        const r = indexedDB.open(name, version);
        r.onupgradeneeded = () => { if (!r.result.objectStoreNames.contains('outbox')) r.result.createObjectStore('outbox', {keyPath: 'id'}); };
        r.onsuccess = () => ok(r.result);
        r.onerror = () => err(r.error);
    });";
    done(js("name, version", script, &[db.into(), version.into()])).await.expect("older tab opens")
}

/// Another tab upgrading the database to `version`: `Ok("upgraded")`, or `Err("blocked")`
/// when some connection does not close on `versionchange`.
async fn upgrade_from_another_tab(db: &str, version: u32) -> Result<String, String> {
    let script = "return new Promise((ok, err) => {
        const r = indexedDB.open(name, version);
        r.onblocked = () => err(new Error('blocked'));
        r.onsuccess = () => { r.result.close(); ok('upgraded'); };
        r.onerror = () => err(r.error);
    });";
    done(js("name, version", script, &[db.into(), version.into()]))
        .await
        .map(|v| v.as_string().unwrap_or_default())
        .map_err(|e| Reflect::get(&e, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default())
}

async fn delete_from_another_tab(db: &str) {
    let script = "return new Promise((ok, err) => {
        const r = indexedDB.deleteDatabase(name);
        r.onblocked = () => err(new Error('blocked'));
        r.onsuccess = () => ok();
        r.onerror = () => err(r.error);
    });";
    done(js("name", script, &[db.into()])).await.expect("the delete is not blocked");
}

fn row(id: &str) -> Value {
    json!({"id": id, "owner": "o", "target": "t", "kind": "update", "body": {}, "savedAt": 1, "state": "queued"})
}

fn put(rows: Vec<Value>) -> ReplacePlan {
    ReplacePlan { puts: rows, ..ReplacePlan::default() }
}

// Item 10: opening never hangs.

#[wasm_bindgen_test]
async fn open_fails_with_blocked_when_an_older_tab_never_closes() {
    let db = db_name("blocked-open");
    let older = hold_open(&db, 1).await;
    let outcome = within(Outbox::open(options(&db))).await.expect("Outbox.open settles instead of hanging");
    let err = outcome.expect_err("Outbox.open rejects");
    assert_eq!(code(&err), "BLOCKED");
    let message = Reflect::get(&err, &"message".into()).unwrap().as_string().unwrap();
    assert!(message.contains("another tab"), "{message}");

    // The open we gave up on is still queued in IndexedDB. Once the older tab closes it
    // must not upgrade behind our back nor linger as a connection that blocks others.
    js("db", "db.close();", &[older]);
    assert_eq!(upgrade_from_another_tab(&db, 7).await.as_deref(), Ok("upgraded"));
}

#[wasm_bindgen_test]
async fn an_open_that_succeeds_after_we_gave_up_is_closed() {
    let db = db_name("late-open");
    let older = hold_open(&db, 1).await;
    // Another tab's upgrade to our version, blocked by the older tab: ours queues behind it
    // and gets no `blocked` event of its own.
    let script = "const r = indexedDB.open(name, 3);
        r.onupgradeneeded = () => {
            const s = r.transaction.objectStore('outbox');
            s.createIndex('byOwnerTarget', ['owner', 'target']);
            s.createIndex('byOwnerSavedAt', ['owner', 'savedAt']);
            s.createIndex('byOwner', 'owner');
        };
        return new Promise((ok, err) => { r.onsuccess = () => { r.result.close(); ok(); }; r.onerror = () => err(r.error); });";
    let other = js("name", script, &[db.as_str().into()]);
    let outcome = within(Outbox::open(options(&db))).await.expect("Outbox.open settles instead of hanging");
    assert_eq!(code(&outcome.expect_err("Outbox.open rejects")), "BLOCKED");
    // The older tab goes away: the other tab upgrades, then our abandoned open succeeds at
    // the same version. Its connection must be closed at once.
    js("db", "db.close();", &[older]);
    done(other).await.expect("the other tab's upgrade completes");
    assert_eq!(upgrade_from_another_tab(&db, 4).await.as_deref(), Ok("upgraded"));
}

#[wasm_bindgen_test]
async fn a_lazy_reopen_fails_with_blocked_instead_of_hanging_and_recovers() {
    let db = db_name("blocked-reopen");
    let a = Outbox::open_with(options(&db)).await.expect("open");
    // Another tab deletes the database (this tab lets go on `versionchange`), then an older
    // app recreates it at version 1 and never closes: our reopen needs an upgrade.
    delete_from_another_tab(&db).await;
    let older = hold_open(&db, 1).await;
    let outcome = within(a.rows("alice".into())).await.expect("rows settles instead of hanging");
    assert_eq!(code(&outcome.expect_err("rows rejects")), "BLOCKED");
    js("db", "db.close();", &[older]);
    let rows = done(a.rows("alice".into()).into()).await.expect("reopens once the older tab is gone");
    assert_eq!(from_js(&rows, "rows").unwrap(), json!([]));
}

#[wasm_bindgen_test]
async fn open_waits_for_a_tab_that_closes_a_moment_later() {
    // `blocked` fires while a well-behaved tab is still closing: it is not an error.
    let db = db_name("slow-close");
    let older = hold_open(&db, 1).await;
    js("db", "db.onversionchange = () => setTimeout(() => db.close(), 50);", &[older]);
    let slow = to_js(&json!({"dbName": db, "openTimeoutMs": 2_000}));
    let outcome = within(Outbox::open(slow)).await.expect("Outbox.open settles");
    assert!(outcome.is_ok(), "{outcome:?}");
}

#[wasm_bindgen_test]
async fn a_dropped_open_leaves_no_connection_behind() {
    // An open whose future is dropped before IndexedDB answers (e.g. the calls waiting for
    // a reopen were dropped, then the outbox freed).
    let db = db_name("dropped-open");
    let mut open = Box::pin(Store::open(&db));
    let polled_once = futures_util::future::poll_fn(|cx| {
        assert!(open.as_mut().poll(cx).is_pending(), "IndexedDB answers asynchronously");
        std::task::Poll::Ready(())
    });
    polled_once.await;
    drop(open);
    assert_eq!(upgrade_from_another_tab(&db, 5).await.as_deref(), Ok("upgraded"));
}

#[wasm_bindgen_test]
async fn open_timeout_must_be_a_positive_number() {
    let bad = to_js(&json!({"dbName": db_name("bad-timeout"), "openTimeoutMs": 0}));
    let err = JsFuture::from(Outbox::open(bad)).await.expect_err("rejected");
    assert_eq!(code(&err), "INVALID_ARGUMENT");
}

// Item 11: reconnecting keeps `strict`, happens once, and never after `close()`.

#[wasm_bindgen_test]
async fn a_reconnected_write_keeps_strict_durability() {
    let db = db_name("strict-retry");
    let store = Store::open(&db).await.unwrap();
    // The connection is closed under the store right before its first readwrite
    // transaction (as the browser does on another tab's upgrade or a forced close); record
    // the durability of every readwrite transaction of this database.
    let spy = js(
        "db",
        "const orig = IDBDatabase.prototype.transaction; const seen = []; let closed = false;
        IDBDatabase.prototype.transaction = function (stores, mode) {
            const mine = this.name === db && mode === 'readwrite';
            if (mine && !closed) { closed = true; this.close(); }
            const tx = orig.apply(this, arguments);
            if (mine) seen.push(tx.durability);
            return tx;
        };
        return {seen, restore: () => { IDBDatabase.prototype.transaction = orig; }};",
        &[db.as_str().into()],
    );
    let r = store.transact(&[], Durability::Strict, |_| Some(put(vec![row("r1")]))).await;
    js("spy", "spy.restore();", std::slice::from_ref(&spy));
    assert_eq!(r.unwrap(), Some(ReplaceOutcome::Committed));
    let seen = from_js(&Reflect::get(&spy, &"seen".into()).unwrap(), "seen").unwrap();
    assert_eq!(seen, json!(["strict"]), "the retried transaction is strict too");
}

#[wasm_bindgen_test]
async fn racing_calls_after_versionchange_share_one_reopen() {
    let db = db_name("one-reopen");
    let store = Store::open(&db).await.unwrap();
    assert_eq!(upgrade_from_another_tab(&db, 50).await.as_deref(), Ok("upgraded"));
    let spy = js(
        "db",
        "const orig = IDBFactory.prototype.open; const reqs = [];
        IDBFactory.prototype.open = function (name) {
            const r = orig.apply(this, arguments);
            if (name === db) reqs.push(r);
            return r;
        };
        return {
            connections: () => reqs.filter((r) => r.readyState === 'done' && r.error === null).length,
            restore: () => { IDBFactory.prototype.open = orig; },
        };",
        &[db.as_str().into()],
    );
    let scope = [Scope::target("o", "t")];
    let reads = join_all((0..5).map(|_| store.read(&scope))).await;
    js("spy", "spy.restore();", std::slice::from_ref(&spy));
    assert!(reads.iter().all(Result::is_ok), "{reads:?}");
    let connections = js("spy", "return spy.connections();", &[spy]).as_f64();
    assert_eq!(connections, Some(1.0), "one shared reopen");
    // No connection of the race is left behind without its `versionchange` handling.
    assert_eq!(upgrade_from_another_tab(&db, 51).await.as_deref(), Ok("upgraded"));
    assert!(store.read(&[Scope::target("o", "t")]).await.is_ok(), "and the store reopens again");
}

#[wasm_bindgen_test]
async fn close_during_a_reopen_does_not_resurrect_the_connection() {
    let db = db_name("close-reopen");
    let store = Store::open(&db).await.unwrap();
    assert_eq!(upgrade_from_another_tab(&db, 50).await.as_deref(), Ok("upgraded"));
    // The read starts the reopen (first poll), then close() runs while it is pending.
    let (read, ()) = join(store.read(&[Scope::target("o", "t")]), async { store.close() }).await;
    let err: OutboxError = read.expect_err("a call racing with close() fails");
    assert_eq!(code(&err.into()), "CLOSED");
    assert!(store.read(&[]).await.is_err(), "still closed");
    drop(store);
    assert_eq!(upgrade_from_another_tab(&db, 51).await.as_deref(), Ok("upgraded"));
}

// Item 12: a freed (or never freed) outbox leaves no connection that blocks other tabs.

#[wasm_bindgen_test]
async fn a_freed_outbox_does_not_block_another_tabs_upgrade() {
    let db = db_name("freed");
    let a = Outbox::open_with(options(&db)).await.expect("open");
    done(
        a.enqueue(to_js(&json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {}})), JsValue::UNDEFINED)
            .into(),
    )
    .await
    .expect("enqueue");
    let spy = js(
        "db",
        "const orig = IDBDatabase.prototype.close; const spy = {closed: 0};
        IDBDatabase.prototype.close = function () { if (this.name === db) spy.closed++; return orig.apply(this, arguments); };
        spy.restore = () => { IDBDatabase.prototype.close = orig; };
        return spy;",
        &[db.as_str().into()],
    );
    // What the app's `outbox.free()` does.
    let js_outbox = JsValue::from(a);
    js("o", "o.free();", &[js_outbox]);
    let closed = js("spy", "spy.restore(); return spy.closed;", &[spy]).as_f64();
    assert_eq!(closed, Some(1.0), "free() closes the connection at once");
    // And nothing is left that blocks another tab's upgrade.
    assert_eq!(upgrade_from_another_tab(&db, 50).await.as_deref(), Ok("upgraded"));
}

#[wasm_bindgen_test]
async fn a_leaked_outbox_does_not_block_another_tabs_upgrade() {
    // An Outbox the app dropped without close() or free(), and that no finalizer frees:
    // its Rust side lives on, and its connection must still let go on `versionchange`.
    let db = db_name("leaked");
    let a = Outbox::open_with(options(&db)).await.expect("open");
    std::mem::forget(a);
    assert_eq!(upgrade_from_another_tab(&db, 50).await.as_deref(), Ok("upgraded"));
}

// Item 13: a write that fails midway writes nothing; a full disk is `QUOTA`.

#[wasm_bindgen_test]
async fn a_write_that_fails_midway_writes_nothing() {
    let db = db_name("half-write");
    let store = Store::open(&db).await.unwrap();
    // The second put has no `id`, the store's key path: IndexedDB refuses it (DataError)
    // after the first put was issued in the same transaction.
    let no_key = json!({"owner": "o", "target": "t", "kind": "update", "body": {}, "savedAt": 2, "state": "queued"});
    let r = store.transact(&[], Durability::Strict, |_| Some(put(vec![row("first"), no_key]))).await;
    let err = r.expect_err("the write fails");
    assert_eq!(code(&err.into()), "STORAGE");
    assert_eq!(store.read_all().await.unwrap(), Vec::<Value>::new(), "the first put was not committed");
}

#[wasm_bindgen_test]
fn a_quota_exceeded_error_is_its_own_code() {
    // Filling a real disk in a test is impractical: the mapping is checked on the
    // DOMException IndexedDB raises when the origin's quota is used up.
    let full = web_sys::DomException::new_with_message_and_name("disk full", "QuotaExceededError").unwrap();
    assert_eq!(code(&OutboxError::storage("commit", &full).into()), "QUOTA");
    let other = web_sys::DomException::new_with_message_and_name("nope", "UnknownError").unwrap();
    assert_eq!(code(&OutboxError::storage("commit", &other).into()), "STORAGE");
}
