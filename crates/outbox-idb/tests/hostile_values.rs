//! Hostile JS values from the app (§3 rule 4, §8, §15): a detached ArrayBuffer, a getter or a
//! Proxy trap that throws, a promise whose `constructor` getter throws. Each one must end in
//! a coded error or an ordinary failed attempt — never in a JS exception crossing the wasm
//! frames, which leaves the call unsettled, its work half done and the module's shadow
//! stack lower (see `src/js.rs`).
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise};
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// A JS expression for an object holding a detached ArrayBuffer at `key`.
fn with_detached(key: &str) -> String {
    format!(
        "(() => {{ const b = new ArrayBuffer(8); structuredClone(b, {{ transfer: [b] }}); return {{ {key}: b }}; }})()"
    )
}

/// Keeps an exception that did escape (the flaw these tests look for) from failing the page
/// before the assertions say what happened.
fn quiet_uncaught() {
    js(
        "",
        "if (!globalThis.hostileQuiet) { globalThis.hostileQuiet = true;
           addEventListener('error', (e) => e.preventDefault());
           addEventListener('unhandledrejection', (e) => e.preventDefault()); }",
    )
    .call0(&JsValue::NULL)
    .unwrap();
}

/// Runs `f` from JS, so that a JS exception crossing it is caught there: `Err(exception)`.
fn catch_sync(f: impl Fn() -> Result<JsValue, JsValue> + 'static) -> Result<JsValue, JsValue> {
    let cb = Closure::<dyn Fn() -> JsValue>::new(move || {
        let o = js_sys::Object::new();
        match f() {
            Ok(v) => set(&o, "ok", &v),
            Err(e) => set(&o, "err", &e),
        }
        o.into()
    });
    let out =
        js("f", "try { return f(); } catch (e) { return { err: e }; }").call1(&JsValue::NULL, cb.as_ref()).unwrap();
    if js_sys::Reflect::has(&out, &"err".into()).unwrap() {
        Err(get(&out, "err"))
    } else {
        Ok(get(&out, "ok"))
    }
}

fn code_of(r: &Result<JsValue, JsValue>) -> String {
    match r {
        Ok(_) => "no error".into(),
        Err(e) => get(e, "code").as_string().unwrap_or_else(|| "<no code>".into()),
    }
}

/// Enqueues an update of alice's `w:1` whose body is the JS expression `body`: it must be
/// refused, `INVALID_ARGUMENT`; its message.
async fn refused_body(a: &Outbox, body: &str) -> String {
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(&op, "body", &expr(body));
    let err = within(a.enqueue(op, JsValue::UNDEFINED), 3_000).await.expect("enqueue settles").expect_err("refused");
    let (code, message) = coded(&err);
    assert_eq!(code, "INVALID_ARGUMENT", "{message}");
    message
}

/// Flushes alice's rows with `send`: the flush must end and resolve; its report.
async fn flushed(a: &Outbox, options: JsValue) -> Value {
    let report = within(a.flush(options), 3_000).await.expect("the flush settles").expect("the flush resolves");
    outbox_idb::convert::from_js(&report, "report").unwrap()
}

/// A queued row, as `rows()` gives it, with the JS expression `extra` in a field this
/// version does not know.
fn row_with_extra(extra: &str) -> JsValue {
    expr(&format!(
        "{{ id: 'x', owner: 'o', target: 't', kind: 'update', body: {{}}, savedAt: 1, state: 'queued', extra: {extra} }}"
    ))
}

/// `isRowInFlight` of [`row_with_extra`], called from JS: `Some(answer)`, or `None` if it
/// threw.
fn in_flight_with_extra(extra: &str) -> Option<bool> {
    let row = row_with_extra(extra);
    catch_sync(move || outbox_idb::is_row_in_flight_js(row.clone(), T0.into(), JsValue::UNDEFINED).map(JsValue::from))
        .ok()
        .and_then(|v| v.as_bool())
}

/// §3 rule 4: a body holding a *detached* ArrayBuffer (transferred with `postMessage` or
/// `structuredClone`) is refused like a live one, by path, with nothing written.
#[wasm_bindgen_test]
async fn an_enqueue_of_a_detached_array_buffer_is_refused_with_nothing_written() {
    quiet_uncaught();
    let db = db_name("hostile-detached");
    let a = open(&db, "tab-a").await;
    let message = refused_body(&a, &with_detached("data")).await;
    assert!(message.contains("`body.data`") && message.contains("ArrayBuffer"), "{message}");
    assert_eq!(raw_all(&db).await.length(), 0, "nothing written");
}

/// §3 rule 4: an object that says it is a Date (`Symbol.toStringTag`) and whose prototype
/// trap throws the second time it is asked: refused, not thrown through.
#[wasm_bindgen_test]
async fn a_proxy_whose_prototype_trap_throws_late_is_refused() {
    quiet_uncaught();
    let db = db_name("hostile-proxy");
    let a = open(&db, "tab-a").await;
    let body = "{ when: (() => { let n = 0; return new Proxy({}, {
            getPrototypeOf() { if (n++ > 0) throw new Error('hostile trap'); return Date.prototype; },
            get(t, k) { return k === Symbol.toStringTag ? 'Date' : undefined; } }); })() }";
    let message = refused_body(&a, body).await;
    assert!(message.contains("`body.when`"), "{message}");
    assert_eq!(raw_all(&db).await.length(), 0, "nothing written");
}

/// §8: a receipt holding a detached ArrayBuffer is an answer that is no Outcome (a failed
/// attempt, as for any receipt JSON cannot hold): the flush ends, and the row is sent again
/// later by the same tab (its reservation was given back).
#[wasm_bindgen_test]
async fn a_detached_receipt_fails_the_attempt_and_the_flush_ends() {
    quiet_uncaught();
    let db = db_name("hostile-receipt");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let send = format!("return {{ type: 'success', receipt: {} }};", with_detached("bytes"));
    let first = flushed(&a, flush_opts("alice", &send)).await;
    assert_eq!(first["succeeded"], 0, "{first}");
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["evidence"]["lastErrorCode"], "BAD_OUTCOME", "{rows}");
    advance(&db, 3_600_000.0);
    let second = ok(a.flush(flush_opts("alice", "return {type: 'success', receipt: {ok: true}};"))).await;
    assert_eq!(second["succeeded"], 1, "{second}");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}

/// §8: `send` returning a promise whose `constructor` getter throws is a `send` that failed
/// (`SEND_FAILED`, transient); the flush ends and the row goes later.
#[wasm_bindgen_test]
async fn a_send_promise_with_a_throwing_constructor_getter_is_a_failed_send() {
    quiet_uncaught();
    let db = db_name("hostile-ctor");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let send = "const p = Promise.resolve({ type: 'success', receipt: {} });
                Object.defineProperty(p, 'constructor', { get() { throw new Error('hostile ctor'); } });
                return p;";
    let first = flushed(&a, flush_opts("alice", send)).await;
    assert_eq!(first["succeeded"], 0, "{first}");
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["evidence"]["lastErrorCode"], "SEND_FAILED", "{rows}");
    advance(&db, 3_600_000.0);
    assert_eq!(ok(a.flush(flush_opts("alice", "return {type: 'success', receipt: {}};"))).await["succeeded"], 1);
}

/// §4 (`reconcile` is a synchronous port): one returning an array that cannot be read (a
/// Proxy whose traps throw) is a port that failed — the answer is not applied (not read as
/// "no writes"), the flush ends.
#[wasm_bindgen_test]
async fn a_reconcile_returning_a_hostile_proxy_is_a_failed_port() {
    quiet_uncaught();
    let db = db_name("hostile-reconcile");
    let o = options(&db, "tab-a");
    set(&o, "records", &obj(json!({"version": 1, "stores": [{"name": "todos", "keyPath": "id"}]})));
    let a = Outbox::open_with(o).await.unwrap();
    let op = obj(json!({"owner": "alice", "kind": "update", "target": "t1", "body": {"n": 1}}));
    ok(a.enqueue(op, obj(json!({"writes": [{"store": "todos", "put": {"id": "t1", "n": 0}}]})))).await;
    let f = flush_opts("alice", "return {type: 'success', receipt: {}};");
    set(
        &f,
        "reconcile",
        &js_fn(
            "a",
            "const boom = () => { throw new Error('hostile trap'); };
             return new Proxy([], { getPrototypeOf: boom, get: boom });",
        ),
    );
    let rep = flushed(&a, f).await;
    assert_eq!(rep["succeeded"], 0, "{rep}");
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["state"], "sending", "not applied: {rows}");
}

/// §4: `reconcile`'s writes commit with the ACK or not at all. While one answer's ACK
/// transaction is under way, another answer holding a detached buffer arrives: the ACK
/// still commits whole (row gone and record written), and the flush ends.
#[wasm_bindgen_test]
async fn a_hostile_answer_during_an_ack_leaves_that_ack_whole() {
    quiet_uncaught();
    let db = db_name("hostile-half");
    let o = options(&db, "tab-a");
    set(&o, "records", &obj(json!({"version": 1, "stores": [{"name": "todos", "keyPath": "id"}]})));
    let a = Outbox::open_with(o).await.unwrap();
    for t in ["t1", "t2"] {
        let op = obj(json!({"owner": "alice", "kind": "update", "target": t, "body": {"n": 1}}));
        ok(a.enqueue(op, obj(json!({"writes": [{"store": "todos", "put": {"id": t, "n": 0}}]})))).await;
    }
    let f = obj(json!({"owner": "alice", "concurrency": 2}));
    let send = "return op.target === 't1' ? {type: 'success', receipt: {}}
                                          : new Promise((r) => { globalThis.hostileResolveT2 = r; });";
    set(&f, "send", &js_fn("op", send));
    let reconcile = format!(
        "if (a.row.target === 't1') globalThis.hostileResolveT2({{type: 'success', receipt: {}}});
         return [{{store: 'todos', patch: a.row.target, set: {{synced: true}}}}];",
        with_detached("bytes")
    );
    set(&f, "reconcile", &js_fn("a", &reconcile));
    let rep = flushed(&a, f).await;
    let rows = ok(a.rows("alice".into())).await;
    let targets: Vec<&Value> = rows.as_array().unwrap().iter().map(|r| &r["target"]).collect();
    assert_eq!((rep["succeeded"].clone(), targets), (json!(1), vec![&json!("t2")]), "{rep}");
    assert_eq!(ok(a.record("todos".into(), "t1".into())).await["synced"], true);
    assert_eq!(ok(a.record("todos".into(), "t2".into())).await["synced"], Value::Null);
}

/// §15: the synchronous functions give coded errors for hostile values, never the app's own
/// exception: `classifyHttp` with a throwing header getter, `selectSendable` with a throwing
/// element getter or a revoked Proxy, `isRowInFlight` with a detached buffer in a field this
/// version does not know (kept as it is: answered, not refused).
#[wasm_bindgen_test]
fn the_pure_functions_answer_hostile_values_with_coded_errors() {
    let headers = expr("{ get 'retry-after'() { throw new Error('hostile getter'); } }");
    let classify =
        catch_sync(move || outbox_idb::classify_http_js(503.into(), headers.clone(), JsValue::UNDEFINED, T0.into()));
    let rows = expr("(() => { const a = [1]; Object.defineProperty(a, 0, { get() { throw new Error('hostile'); } }); return a; })()");
    let select = catch_sync(move || {
        outbox_idb::select_sendable_js(rows.clone(), "t".into(), T0.into(), JsValue::UNDEFINED, JsValue::UNDEFINED)
    });
    let revoked = expr("(() => { const p = Proxy.revocable([], {}); p.revoke(); return p.proxy; })()");
    let select_revoked = catch_sync(move || {
        outbox_idb::select_sendable_js(revoked.clone(), "t".into(), T0.into(), JsValue::UNDEFINED, JsValue::UNDEFINED)
    });
    let codes: Vec<String> = [classify, select, select_revoked].iter().map(code_of).collect();
    assert_eq!(codes, ["INVALID_ARGUMENT"; 3], "classifyHttp, selectSendable ×2");
    let detached = "(() => { const b = new ArrayBuffer(8); structuredClone(b, { transfer: [b] }); return b; })()";
    assert_eq!(in_flight_with_extra(detached), Some(false), "a queued row is not in flight");
}

/// Where the shadow stack (in linear memory) is now: the address of a local forced there.
#[inline(never)]
fn stack_mark() -> usize {
    let x = [0u8; 16];
    std::hint::black_box(&x) as *const [u8; 16] as usize
}

/// §15: hostile calls must not wear the module down. An exception crossing the wasm frames
/// skips the epilogue that gives back the shadow stack: a few thousand such calls used to
/// leave every call of the module failing until the page reloaded.
#[wasm_bindgen_test]
fn hostile_calls_give_back_the_shadow_stack() {
    let headers = expr("{ get 'retry-after'() { throw new Error('hostile getter'); } }");
    set(&js_sys::global(), "hostileHeaders", &headers);
    let classify = Closure::<dyn Fn(JsValue) -> Result<JsValue, JsValue>>::new(|h: JsValue| {
        outbox_idb::classify_http_js(503.into(), h, JsValue::UNDEFINED, T0.into())
    });
    let mark = Closure::<dyn Fn() -> f64>::new(|| stack_mark() as f64);
    let marks = js(
        "classify, mark",
        "const saved = [console.error, console.warn, console.log];
         console.error = console.warn = console.log = () => {};
         const before = mark();
         try { for (let i = 0; i < 200; i++) { try { classify(globalThis.hostileHeaders); } catch (e) {} } }
         finally { [console.error, console.warn, console.log] = saved; }
         return [before, mark()];",
    )
    .call2(&JsValue::NULL, classify.as_ref(), mark.as_ref())
    .unwrap();
    let marks: Array = marks.unchecked_into();
    let (before, after) = (marks.get(0).as_f64().unwrap(), marks.get(1).as_f64().unwrap());
    assert_eq!(before, after, "200 hostile calls moved the shadow stack pointer by {} bytes", before - after);
}

/// Opens an outbox with one app store, `todos` (key path `id`).
async fn open_todos(db: &str, tab: &str) -> Outbox {
    let o = options(db, tab);
    set(&o, "records", &obj(json!({"version": 1, "stores": [{"name": "todos", "keyPath": "id"}]})));
    Outbox::open_with(o).await.unwrap()
}

/// §3 rule 4: objects that only say they are Dates, or Dates whose own `getTime` throws,
/// are refused when the app gives them, and kept as they are when they come as rows.
#[wasm_bindgen_test]
async fn fake_dates_are_refused_or_kept_never_thrown_through() {
    quiet_uncaught();
    let db = db_name("hostile-dates");
    let a = open(&db, "tab-a").await;
    let fakes = [
        "(() => { const d = Object.create(Date.prototype); d[Symbol.toStringTag] = 'Date'; return d; })()",
        "(() => { const d = new Date(0); d.getTime = () => { throw new Error('hostile getTime'); }; return d; })()",
    ];
    for fake in fakes {
        let message = refused_body(&a, &format!("{{ at: {fake} }}")).await;
        assert!(message.contains("`body.at`"), "{message}");
        assert_eq!(in_flight_with_extra(fake), Some(false), "{fake}");
    }
    assert_eq!(raw_all(&db).await.length(), 0, "nothing written");
}

/// §8: `send` returning a promise whose own `then` throws: the library never calls it (it
/// follows the promise by the intrinsic `then`), so the answer the promise settles with is
/// applied and the flush ends.
#[wasm_bindgen_test]
async fn a_send_promise_whose_own_then_throws_is_followed_by_the_intrinsic_then() {
    quiet_uncaught();
    let db = db_name("hostile-then");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let send = "const p = Promise.resolve({ type: 'success', receipt: {} });
                p.then = () => { throw new Error('hostile then'); };
                return p;";
    let first = flushed(&a, flush_opts("alice", send)).await;
    assert_eq!(first["succeeded"], 1, "{first}");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}

/// §15: a key or range the app gives that throws while IndexedDB reads it (an element
/// getter throwing a revoked Proxy, or an Error whose `message` getter throws) is the app's
/// bad argument: `INVALID_ARGUMENT`, not a call that never settles.
#[wasm_bindgen_test]
async fn record_keys_that_throw_while_read_are_invalid_arguments() {
    quiet_uncaught();
    let db = db_name("hostile-keys");
    let a = open_todos(&db, "tab-a").await;
    let throwing = |what: &str| {
        expr(&format!(
            "(() => {{ const k = [1]; Object.defineProperty(k, 0, {{ get() {{ throw {what}; }} }}); return k; }})()"
        ))
    };
    let revoked = "(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()";
    let bad_message = "(() => { const e = new Error(); Object.defineProperty(e, 'message', { get() { throw new Error('x'); } }); return e; })()";
    let plain = "new Error('plain')";
    for what in [revoked, bad_message, plain] {
        let got = within(a.record("todos".into(), throwing(what)), 3_000).await.expect("record() settles");
        assert_eq!(coded(&got.expect_err("refused")).0, "INVALID_ARGUMENT", "{what}");
        let query = js_sys::Object::new();
        set(&query, "range", &throwing(what));
        let got = within(a.records("todos".into(), query.into()), 3_000).await.expect("records() settles");
        assert_eq!(coded(&got.expect_err("refused")).0, "INVALID_ARGUMENT", "{what}");
    }
}

/// §15: a records query whose `index` or `range` cannot be read (a throwing getter, a
/// revoked Proxy as the query) is INVALID_ARGUMENT — never read as absent, which would
/// answer every record of the store.
#[wasm_bindgen_test]
async fn a_records_query_that_throws_while_read_is_refused_not_unbounded() {
    quiet_uncaught();
    let db = db_name("hostile-query");
    let a = open_todos(&db, "tab-a").await;
    let put = obj(json!({"writes": [{"store": "todos", "put": {"id": "t1", "title": "x"}}]}));
    ok(a.enqueue(obj(json!({"owner": "alice", "target": "todo:t1", "kind": "update", "body": {}})), put)).await;
    let getter = |key: &str, what: &str| expr(&format!("{{ get {key}() {{ throw {what}; }} }}"));
    let revoked = "(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()";
    for query in [getter("range", "1"), getter("index", "1"), getter("range", "new Error('x')"), expr(revoked)] {
        let got = within(a.records("todos".into(), query), 3_000).await.expect("records() settles");
        let (code, message) = coded(&got.expect_err("refused, not every record"));
        assert_eq!(code, "INVALID_ARGUMENT", "{message}");
        assert!(message.contains("could not be read"), "{message}");
    }
    // A plain query is read as before.
    assert_eq!(ok(a.records("todos".into(), JsValue::UNDEFINED)).await, json!([{"id": "t1", "title": "x"}]));
}

/// §15: an option of `Outbox.open` whose reading throws (`backoff.baseMs`'s getter, a
/// revoked `backoff`, `tabId`'s, `now`'s) fails the open with INVALID_ARGUMENT — never an
/// outbox opened with the default in its place — and creates no database.
#[wasm_bindgen_test]
async fn open_options_that_throw_while_read_are_refused() {
    quiet_uncaught();
    let db = db_name("hostile-open");
    let refused = |got: Option<Result<JsValue, JsValue>>, what: &str| {
        let (code, message) = coded(&got.expect("open settles").expect_err("refused, not opened with a default"));
        assert_eq!(
            (code.as_str(), message.contains("could not be read")),
            ("INVALID_ARGUMENT", true),
            "{what}: {message}"
        );
    };
    let revoked = "(() => { const p = Proxy.revocable({}, {}); p.revoke(); return p.proxy; })()";
    for backoff in ["{ get baseMs() { throw 1; } }", "{ capMs: 10, get baseMs() { throw new Error('x'); } }", revoked] {
        let o = options(&db, "tab-a");
        set(&o, "backoff", &expr(backoff));
        refused(within(Outbox::open(o), 3_000).await, backoff);
    }
    for own in ["tabId", "now", "leaseMs", "records"] {
        let o = options(&db, "tab-a");
        js("o, k", "Object.defineProperty(o, k, { get() { throw 1; } });")
            .call2(&JsValue::NULL, &o, &own.into())
            .unwrap();
        refused(within(Outbox::open(o), 3_000).await, own);
    }
    let names =
        settle(js("", "return indexedDB.databases();").call0(&JsValue::NULL).unwrap().unchecked_into()).await.unwrap();
    let names: Vec<String> = Array::from(&names).iter().filter_map(|d| get(&d, "name").as_string()).collect();
    assert!(!names.contains(&db), "no database created: {names:?}");
}

/// §12: a subscriber that throws a value the console cannot print (in Node, `console.error`
/// runs its custom inspect function; here `console.error` itself throws) costs nothing:
/// the enqueue resolves and the other tabs still hear of the change.
#[wasm_bindgen_test]
async fn a_throwing_subscriber_neither_hangs_an_enqueue_nor_silences_other_tabs() {
    quiet_uncaught();
    let db = db_name("hostile-subscriber");
    let a = open(&db, "tab-a").await;
    let b = open(&db, "tab-b").await;
    let heard = js("", "globalThis.hostileHeard = 0; return () => { globalThis.hostileHeard += 1; };")
        .call0(&JsValue::NULL)
        .unwrap();
    let _unsub_b = b.subscribe(heard).unwrap();
    let _unsub_a = a.subscribe(js_fn("m", "throw new Error('hostile subscriber');")).unwrap();
    js("", "globalThis.hostileConsoleError = console.error; console.error = () => { throw new Error('hostile console'); };")
        .call0(&JsValue::NULL)
        .unwrap();
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"n": 1}}));
    let done = within(a.enqueue(op, JsValue::UNDEFINED), 3_000).await;
    js("", "console.error = globalThis.hostileConsoleError;").call0(&JsValue::NULL).unwrap();
    assert!(done.expect("enqueue settles").is_ok());
    let heard = js("", "return new Promise((ok) => setTimeout(() => ok(globalThis.hostileHeard), 500));")
        .call0(&JsValue::NULL)
        .unwrap();
    let heard = JsFuture::from(Promise::from(heard)).await.unwrap();
    assert!(heard.as_f64().unwrap_or(0.0) >= 1.0, "tab B heard {heard:?} notices");
}

/// §12 ("a change in one tab is announced to the other tabs"): other tabs hear a change
/// before this tab's subscribers run, so a subscriber that closes its own outbox (a page
/// tearing down on the notice) cannot keep the change from them.
#[wasm_bindgen_test]
async fn a_subscriber_that_closes_its_outbox_does_not_keep_other_tabs_from_hearing() {
    let db = db_name("subscriber-closes");
    let a = open(&db, "tab-a").await;
    let b = open(&db, "tab-b").await;
    let heard = js("", "globalThis.closeHeard = 0; return () => { globalThis.closeHeard += 1; };")
        .call0(&JsValue::NULL)
        .unwrap();
    let _unsub_b = b.subscribe(heard).unwrap();
    let _unsub_a = a.subscribe(js_fn("m", "globalThis.closingOutbox.close();")).unwrap();
    js_sys::Reflect::set(&js_sys::global(), &"closingOutbox".into(), &JsValue::from(a)).unwrap();
    let enqueued =
        expr("globalThis.closingOutbox.enqueue({owner: 'alice', target: 'w:1', kind: 'update', body: {n: 1}})");
    // The call may end either way (it was running when its outbox closed); the row is stored.
    let _ = within(enqueued.unchecked_into(), 3_000).await.expect("enqueue settles");
    assert_eq!(ok(b.rows("alice".into())).await.as_array().map(Vec::len), Some(1));
    let heard = js("", "return new Promise((ok) => setTimeout(() => ok(globalThis.closeHeard), 500));")
        .call0(&JsValue::NULL)
        .unwrap();
    let heard = JsFuture::from(Promise::from(heard)).await.unwrap();
    assert!(heard.as_f64().unwrap_or(0.0) >= 1.0, "tab B heard {heard:?} notices");
}

/// Resource bounds: an array that says it is huge (sparse, `length` 2^32 − 1, free to store
/// and to pass) is refused or kept whole at once, never walked item by item.
#[wasm_bindgen_test]
async fn huge_sparse_arrays_are_judged_by_their_length() {
    quiet_uncaught();
    let db = db_name("hostile-sparse");
    let a = open(&db, "tab-a").await;
    let sparse = "(() => { const s = []; s.length = 2 ** 32 - 1; return s; })()";
    let message = refused_body(&a, &format!("{{ list: {sparse} }}")).await;
    assert!(message.contains("more than 1000000 parts"), "{message}");
    assert_eq!(in_flight_with_extra(sparse), Some(false));
    let rows = expr(sparse);
    let select = catch_sync(move || {
        outbox_idb::select_sendable_js(rows.clone(), "t".into(), T0.into(), JsValue::UNDEFINED, JsValue::UNDEFINED)
    });
    let err = select.expect_err("refused");
    assert_eq!(get(&err, "code").as_string().as_deref(), Some("INVALID_ARGUMENT"));
    assert!(get(&err, "message").as_string().unwrap_or_default().contains("more than 1000000 items"));
}

/// §4 records: a `patch` keeps a field named `__proto__` (in the stored record, or in
/// `set`) as a field; copied by assignment it changed the copy's prototype and was lost.
#[wasm_bindgen_test]
async fn a_patch_keeps_fields_named_proto() {
    let db = db_name("hostile-proto");
    let a = open_todos(&db, "tab-a").await;
    let put = obj(json!({"store": "todos"}));
    set(&put, "put", &expr("JSON.parse('{\"id\": \"t1\", \"__proto__\": {\"kept\": 1}, \"n\": 0}')"));
    let writes = obj(json!({}));
    set(&writes, "writes", &Array::of1(&put));
    let op = obj(json!({"owner": "alice", "target": "t1", "kind": "update", "body": {"n": 0}}));
    ok(a.enqueue(op, writes)).await;
    let patch = obj(json!({"store": "todos", "patch": "t1"}));
    set(&patch, "set", &expr("JSON.parse('{\"__proto__\": {\"also\": 2}, \"n\": 1}')"));
    let writes = obj(json!({}));
    set(&writes, "writes", &Array::of1(&patch));
    let op = obj(json!({"owner": "alice", "target": "t1", "kind": "update", "body": {"n": 1}}));
    ok(a.enqueue(op, writes)).await;
    let got = ok(a.record("todos".into(), "t1".into())).await;
    assert_eq!(got, json!({"id": "t1", "__proto__": {"also": 2}, "n": 1}));
}

/// Resource bounds: only a real ArrayBuffer is read for a stored value's digest. An object
/// that merely has ArrayBuffer's prototype (or a view whose own `buffer` is one) was read by
/// `new Uint8Array(fake)` as an array-like, `fake.length` items long (2^32 − 1: minutes,
/// then out of memory).
#[wasm_bindgen_test]
fn only_real_array_buffers_are_read_for_a_digest() {
    let marker = |v: &str| {
        let row = row_with_extra(v);
        outbox_idb::convert::stored_from_js(&row)["extra"][outbox_idb::convert::OPAQUE_KEY]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let fake = "Object.assign(Object.create(ArrayBuffer.prototype), { length: 3, 0: 1, 1: 2, 2: 3 })";
    assert!(marker(fake).contains("ArrayBuffer:0:"), "{}", marker(fake));
    let view = format!("(() => {{ const u = new Uint8Array(2); Object.defineProperty(u, 'buffer', {{ value: {fake} }}); return u; }})()");
    assert!(marker(&view).contains("Uint8Array:0:"), "{}", marker(&view));
    assert!(marker("new Uint8Array([1, 2, 3]).buffer").contains("ArrayBuffer:3:"));
    assert!(marker("new Uint8Array([1, 2, 3]).subarray(1)").contains("Uint8Array:2:"));
    assert_ne!(marker("new Uint8Array([1, 2, 3]).buffer"), marker("new Uint8Array([1, 2, 4]).buffer"));
}
