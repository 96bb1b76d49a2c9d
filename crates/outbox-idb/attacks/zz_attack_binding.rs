//! OPEN FLAWS, not yet fixed — this file is deliberately outside `tests/`, so it is not
//! compiled or run. Attacks on the wasm binding from the public API (hostile values,
//! re-entrancy, odd arguments), written by a review on 2026-12-03. Every test here FAILS
//! against the current library: each one confirms a flaw, and its comment names the clause
//! it breaks. To run one: copy the file into `tests/` (it uses `tests/common`). When a flaw
//! is fixed, move its test into a test file of its own, where it passes. (Moved and fixed: the
//! lone-surrogate owner tests, tests/owner_strings.rs; flush options, tests/flush_options.rs.) JS globals used here are prefixed `zzA_`.
//!
//! Several tests leave an uncaught exception and a dead task behind (that is the flaw they
//! show); `quiet_uncaught` keeps the page's error events from drowning their assertions.
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

/// The value of a JS expression.
fn expr(e: &str) -> JsValue {
    js("", &format!("return ({e});")).call0(&JsValue::NULL).unwrap()
}

/// How `p` settles within `ms`: `Some(Ok/Err)`, or `None` if it has not settled by then.
async fn within(p: Promise, ms: u32) -> Option<Result<JsValue, JsValue>> {
    let marker = "zzA-not-settled";
    let late = js("ms, m", "return new Promise((done) => setTimeout(() => done(m), ms));")
        .call2(&JsValue::NULL, &ms.into(), &marker.into())
        .unwrap();
    let out = JsFuture::from(Promise::race(&Array::of2(&p, &late))).await;
    match &out {
        Ok(v) if v.as_string().as_deref() == Some(marker) => None,
        _ => Some(out),
    }
}

fn flush_opts(owner: &str, send: &str) -> JsValue {
    let o = obj(json!({"owner": owner}));
    set(&o, "send", &js_fn("op", send));
    o
}

/// Every stored value, read with plain IndexedDB.
async fn raw_all(db: &str) -> Array {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const q = r.result.transaction('outbox').objectStore('outbox').getAll();
          q.onsuccess = () => { r.result.close(); ok(q.result); }; q.onerror = () => err(q.error); }; });";
    settle(js("db", script).call1(&JsValue::NULL, &db.into()).unwrap().unchecked_into()).await.unwrap().unchecked_into()
}

/// Swallows the uncaught exceptions the flaws below leave in the page (so that the page's
/// own error reporting does not hide what the assertions say).
fn quiet_uncaught() {
    js(
        "",
        "if (!globalThis.zzA_quiet) { globalThis.zzA_quiet = true;
           addEventListener('error', (e) => { globalThis.zzA_uncaught = (globalThis.zzA_uncaught || 0) + 1; e.preventDefault(); });
           addEventListener('unhandledrejection', (e) => e.preventDefault()); }",
    )
    .call0(&JsValue::NULL)
    .unwrap();
}

async fn enqueue_update(a: &Outbox, owner: &str, target: &str, body: Value) -> Value {
    ok(a.enqueue(obj(json!({"owner": owner, "target": target, "kind": "update", "body": body})), JsValue::UNDEFINED))
        .await
}

// ---------------------------------------------------------------------------------------
// (c)+(d) A JS exception thrown by app values through a non-`catch` import (js-sys
// `Uint8Array::new`, `Promise::resolve`, `Object::entries`, `Array::get`) crosses the wasm
// frames: the call's promise never settles, and nothing the module holds is released.
// ---------------------------------------------------------------------------------------

/// SPEC §3 rule 4 ("bad input from the app is rejected at the API with a clear error") and
/// §15 ("errors ... are Error objects with a stable code"); api.md: "Bodies must be JSON;
/// anything else is refused with INVALID_ARGUMENT naming where it is". A live ArrayBuffer
/// is refused so; a *detached* one (transferred to a worker with `postMessage(b, [b])` /
/// `structuredClone(b, {transfer})`) makes `enqueue` never settle: the walker's
/// `new Uint8Array(buffer)` throws through the wasm frames.
#[wasm_bindgen_test]
async fn s3_rule4_enqueue_of_a_detached_array_buffer_never_settles() {
    quiet_uncaught();
    let db = db_name("zzA-detached");
    let a = open(&db, "tab-a").await;
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(
        &op,
        "body",
        &expr("(() => { const b = new ArrayBuffer(8); structuredClone(b, { transfer: [b] }); return { data: b }; })()"),
    );
    let settled = within(a.enqueue(op, JsValue::UNDEFINED), 3_000).await;
    let err = settled.expect("enqueue settles (it never does: the promise hangs forever)").expect_err("refused");
    let (code, message) = coded(&err);
    assert_eq!(code, "INVALID_ARGUMENT", "{message}");
    assert!(message.contains("`body.data`"), "{message}");
    assert_eq!(raw_all(&db).await.length(), 0, "nothing written");
}

/// SPEC §8 (a flush drains and ends; "A failing record never blocks other records"), §15
/// (coded errors), and what values.rs shows for a receipt JSON cannot hold (`send` returned
/// no Outcome → BAD_OUTCOME, transient, the flush goes on). A receipt holding a *detached*
/// ArrayBuffer instead makes the flush never settle, and its record's reservation in the
/// tab is never freed: every later flush of this tab skips the row, also long after its
/// lease, so in a one-tab app the edit never reaches the server until a reload.
#[wasm_bindgen_test]
async fn s8_a_send_answering_a_detached_receipt_hangs_the_flush_and_strands_its_record() {
    quiet_uncaught();
    let db = db_name("zzA-detached-receipt");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let send = "const b = new ArrayBuffer(4); structuredClone(b, { transfer: [b] });
                return { type: 'success', receipt: { bytes: b } };";
    let first = within(a.flush(flush_opts("alice", send)), 3_000).await;
    // An hour later (lease long over), an ordinary send.
    advance(&db, 3_600_000.0);
    let second = within(a.flush(flush_opts("alice", "return {type: 'success', receipt: {ok: true}};")), 5_000)
        .await
        .expect("the later flush settles")
        .expect("the later flush succeeds");
    let second: Value = outbox_idb::convert::from_js(&second, "report").unwrap();
    let left = ok(a.rows("alice".into())).await;
    assert!(
        first.is_some() && second["succeeded"] == 1 && left.as_array().unwrap().is_empty(),
        "the first flush settled: {}; the later flush: {second}; rows left: {left}",
        first.is_some()
    );
}

/// Same mechanism through `send`'s return value itself: the binding passes it to
/// `Promise.resolve` (a non-`catch` import), which runs the promise's `constructor` getter.
/// SPEC §8/§15 as above: expected a transient `SEND_FAILED` (as for a `send` that throws)
/// and a flush that ends; actual: the flush never settles and the record is skipped by this
/// tab for good.
#[wasm_bindgen_test]
async fn s8_a_send_promise_with_a_throwing_constructor_getter_hangs_the_flush() {
    quiet_uncaught();
    let db = db_name("zzA-ctor");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let send = "const p = Promise.resolve({ type: 'success', receipt: {} });
                Object.defineProperty(p, 'constructor', { get() { throw new Error('zzA ctor'); } });
                return p;";
    let first = within(a.flush(flush_opts("alice", send)), 3_000).await;
    advance(&db, 3_600_000.0);
    let second = within(a.flush(flush_opts("alice", "return {type: 'success', receipt: {}};")), 5_000)
        .await
        .expect("the later flush settles")
        .expect("the later flush succeeds");
    let second: Value = outbox_idb::convert::from_js(&second, "report").unwrap();
    assert!(
        first.is_some() && second["succeeded"] == 1,
        "the first flush settled: {}; the later flush (an hour later): {second}",
        first.is_some()
    );
}

/// SPEC §15: "Errors thrown across the boundary are `Error` objects with a stable `code`
/// property". The synchronous functions let the app's own exception through, uncoded:
/// `classifyHttp` with a headers object whose getter throws (or a Proxy), `selectSendable`
/// with an array whose element getter throws, `isRowInFlight` with a row holding a detached
/// ArrayBuffer in a field this version does not know.
#[wasm_bindgen_test]
fn s15_pure_functions_let_hostile_values_throw_uncoded_errors() {
    let headers = expr("{ get 'retry-after'() { throw new Error('zzA getter'); } }");
    let e1 =
        catch_sync(move || outbox_idb::classify_http_js(503.into(), headers.clone(), JsValue::UNDEFINED, T0.into()));
    let rows = expr("(() => { const a = [1]; Object.defineProperty(a, 0, { get() { throw new Error('zzA elt'); } }); return a; })()");
    let e2 =
        catch_sync(move || outbox_idb::select_sendable_js(rows.clone(), "t".into(), T0.into(), JsValue::UNDEFINED));
    let row = expr(
        "(() => { const b = new ArrayBuffer(4); structuredClone(b, { transfer: [b] });
           return { id: 'x', owner: 'o', target: 't', kind: 'update', body: {}, savedAt: 1, state: 'queued', extra: b }; })()",
    );
    let e3 = catch_sync(move || {
        outbox_idb::is_row_in_flight_js(row.clone(), T0.into(), JsValue::UNDEFINED).map(JsValue::from)
    });
    let codes: Vec<String> = [e1.err(), e2.err(), e3.err()]
        .iter()
        .map(|e| e.as_ref().map_or("no error".to_owned(), |e| get(e, "code").as_string().unwrap_or("<no code>".into())))
        .collect();
    assert!(
        codes.iter().all(|c| c == "INVALID_ARGUMENT"),
        "codes of classifyHttp, selectSendable, isRowInFlight: {codes:?}"
    );
}

/// Runs `f` from JS, so that a JS exception crossing it is caught there: `Err(exception)`.
fn catch_sync(f: impl Fn() -> Result<JsValue, JsValue> + 'static) -> Result<JsValue, JsValue> {
    let cb = Closure::<dyn Fn() -> JsValue>::new(move || match f() {
        Ok(v) => {
            let o = js_sys::Object::new();
            set(&o, "ok", &v);
            o.into()
        }
        Err(e) => {
            let o = js_sys::Object::new();
            set(&o, "err", &e);
            o.into()
        }
    });
    let out =
        js("f", "try { return f(); } catch (e) { return { err: e }; }").call1(&JsValue::NULL, cb.as_ref()).unwrap();
    if js_sys::Reflect::has(&out, &"err".into()).unwrap() {
        Err(get(&out, "err"))
    } else {
        Ok(get(&out, "ok"))
    }
}

// ---------------------------------------------------------------------------------------
// (a)+(b) Owner arguments are read with a lossy conversion (`as_string`), which turns an
// unpaired surrogate into U+FFFD: the call acts on ANOTHER owner's rows, while `enqueue`
// refuses that same owner string.
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// (d) Smaller ones.
// ---------------------------------------------------------------------------------------

/// SPEC §15 ("Errors thrown across the boundary are Error objects with a stable code";
/// after `close()` calls throw `CLOSED`). After `free()` (which `using` / `Symbol.dispose`
/// calls; outbox.rs documents it as closing the outbox), every method — `close()` and the
/// async ones included — throws synchronously an Error without `code` ("null pointer
/// passed to rust"), instead of a coded error (or a rejected promise for async methods).
#[wasm_bindgen_test]
async fn s15_calls_after_free_throw_without_a_code() {
    let a: JsValue = open(&db_name("zzA-free"), "tab-a").await.into();
    set(&js_sys::global(), "zzA_freed", &a);
    let codes = js(
        "",
        "const a = globalThis.zzA_freed; a.free();
         const out = [];
         for (const f of [() => a.rows('o'), () => a.enqueue({owner: 'o', target: 't', kind: 'delete'}), () => a.close()]) {
           try { const r = f(); out.push(r && r.then ? 'returned a promise' : 'returned'); }
           catch (e) { out.push(e && e.code ? e.code : 'uncoded: ' + (e && e.message)); }
         }
         return out;",
    )
    .call0(&JsValue::NULL)
    .unwrap();
    let codes: Vec<String> = codes.unchecked_into::<Array>().iter().map(|c| c.as_string().unwrap()).collect();
    assert!(codes.iter().all(|c| !c.starts_with("uncoded")), "{codes:?}");
}

/// SPEC §10 ("503 → transient, not before `Retry-After` when given") and api.md (`send`
/// returns `classifyHttp(...)`). For a huge `Retry-After` the library's own classifier
/// returns `retryAfterMs: 9223372036854775000`, which the flush then refuses as "not an
/// Outcome" (a float above 2^53 is not an i64 to its reader): the row is stored with
/// `lastErrorCode: "BAD_OUTCOME"` and the Retry-After floor is dropped (it is retried after
/// the ordinary backoff).
#[wasm_bindgen_test]
async fn s10_classify_http_output_for_a_huge_retry_after_is_refused_by_flush() {
    let db = db_name("zzA-retry-after");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let outcome = outbox_idb::classify_http_js(
        503.into(),
        obj(json!({"Retry-After": "99999999999999999999"})),
        JsValue::NULL,
        T0.into(),
    )
    .unwrap();
    set(&js_sys::global(), "zzA_outcome_503", &outcome);
    ok(a.flush(flush_opts("alice", "return globalThis.zzA_outcome_503;"))).await;
    let rows = ok(a.rows("alice".into())).await;
    let row = &rows[0];
    assert_eq!(
        (row["evidence"]["lastErrorCode"].clone(), row["nextAttemptAt"].as_f64().unwrap_or(0.0) > T0 + 1e12),
        (json!("HTTP_503"), true),
        "classifyHttp gave {:?}; stored row: {row}",
        outbox_idb::convert::from_js(&outcome, "o").ok()
    );
}

/// SPEC §4 (replace is all or nothing) and api.md, Local records: `reconcile`'s writes
/// "commit with the ACK or not at all". Two rows of a flush are in flight; the first one's
/// success ACK runs its transaction (queue row deleted, then the `patch` of its record,
/// which first reads the record: the transaction awaits that read); meanwhile the second
/// row's `send` resolves with a receipt holding a detached ArrayBuffer. Walking that
/// receipt throws through the wasm frames of the flush's task, which is never polled
/// again, and IndexedDB commits what the ACK's transaction had issued: the row is gone,
/// its record never got the reconcile write — and the flush never settles.
#[wasm_bindgen_test]
async fn s4_an_exception_in_another_answer_commits_an_ack_without_its_reconcile_write() {
    quiet_uncaught();
    let db = db_name("zzA-half");
    let o = options(&db, "tab-a");
    set(&o, "records", &obj(json!({"version": 1, "stores": [{"name": "todos", "keyPath": "id"}]})));
    let a = Outbox::open_with(o).await.unwrap();
    for t in ["t1", "t2"] {
        let op = obj(json!({"owner": "alice", "kind": "update", "target": t, "body": {"n": 1}}));
        ok(a.enqueue(op, obj(json!({"writes": [{"store": "todos", "put": {"id": t, "n": 0}}]})))).await;
    }
    let f = obj(json!({"owner": "alice", "concurrency": 2}));
    set(
        &f,
        "send",
        &js_fn(
            "op",
            "return op.target === 't1' ? {type: 'success', receipt: {}}
                                       : new Promise((r) => { globalThis.zzA_resolve_t2 = r; });",
        ),
    );
    // The app's pure port; it also lets t2's answer arrive at that moment (any moment while
    // the ACK's record writes are under way does).
    set(
        &f,
        "reconcile",
        &js_fn(
            "a",
            "if (a.row.target === 't1') {
               const b = new ArrayBuffer(4); structuredClone(b, { transfer: [b] });
               globalThis.zzA_resolve_t2({type: 'success', receipt: {bytes: b}});
             }
             return [{store: 'todos', patch: a.row.target, set: {synced: true}}];",
        ),
    );
    let settled = within(a.flush(f), 3_000).await;
    let rows = ok(a.rows("alice".into())).await;
    let t1_row_gone = !rows.as_array().unwrap().iter().any(|r| r["target"] == "t1");
    let t1 = ok(a.record("todos".into(), "t1".into())).await;
    assert!(
        settled.is_some() && (!t1_row_gone || t1["synced"] == true),
        "flush settled: {}; t1's row deleted: {t1_row_gone}; t1's record: {t1}",
        settled.is_some()
    );
}

// ---------------------------------------------------------------------------------------
// (c) The module dies, eventually: each such exception leaks shadow stack.
// ---------------------------------------------------------------------------------------

/// Where the shadow stack (in linear memory) is now: the address of a local forced there.
#[inline(never)]
fn stack_mark() -> usize {
    let x = [0u8; 16];
    std::hint::black_box(&x) as *const [u8; 16] as usize
}

/// SPEC §15 (coded errors) and the brief's (c): a call must not leave the module unusable.
/// Each `classifyHttp` whose headers getter throws lets the exception cross the wasm frames
/// without restoring the shadow stack pointer. Here 1,000 such calls leave the stack pointer
/// that much lower (a leak per call). Measured against the shipped build (`pkg/`, 1 MB
/// stack, Node + fake-indexeddb): after 2,184 such calls every call of the module fails
/// ("memory access out of bounds", then "unreachable") — `classifyHttp`, `enqueue`,
/// `Outbox.open` — for every outbox of the page until it reloads. The same leak follows
/// every exception of the other tests above (detached buffers, throwing getters).
#[wasm_bindgen_test]
fn s15_hostile_classify_http_calls_leak_the_shadow_stack_until_the_module_dies() {
    let headers = expr("{ get 'retry-after'() { throw new Error('zzA getter'); } }");
    set(&js_sys::global(), "zzA_hostile_headers", &headers);
    let classify = Closure::<dyn Fn(JsValue) -> Result<JsValue, JsValue>>::new(|h: JsValue| {
        outbox_idb::classify_http_js(503.into(), h, JsValue::UNDEFINED, T0.into())
    });
    let mark = Closure::<dyn Fn() -> f64>::new(|| stack_mark() as f64);
    let marks = js(
        "classify, mark",
        "const saved = [console.error, console.warn, console.log];
         console.error = console.warn = console.log = () => {}; // the debug glue logs each exception
         const before = mark();
         try { for (let i = 0; i < 1000; i++) { try { classify(globalThis.zzA_hostile_headers); } catch (e) {} } }
         finally { [console.error, console.warn, console.log] = saved; }
         return [before, mark()];",
    )
    .call2(&JsValue::NULL, classify.as_ref(), mark.as_ref())
    .unwrap();
    let marks: Array = marks.unchecked_into();
    let (before, after) = (marks.get(0).as_f64().unwrap() as usize, marks.get(1).as_f64().unwrap() as usize);
    assert_eq!(
        before,
        after,
        "1000 hostile calls moved the shadow stack pointer down by {} bytes ({} per call), never given back",
        before.saturating_sub(after),
        before.saturating_sub(after) / 1000
    );
}
