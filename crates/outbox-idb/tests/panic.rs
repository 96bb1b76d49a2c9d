//! A panic (a bug) inside an API call (`src/panic.rs`): the replace it interrupts writes
//! nothing, the call rejects with `INTERNAL` instead of never settling, and the instance
//! goes on. Its own test binary: the hook installed here replaces the harness's.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise, Reflect};
use outbox_core::{ReplacePlan, Scope};
use outbox_idb::idb::replace::{Planner, RecordPort};
use outbox_idb::idb::Durability;
use outbox_idb::idb::Store;
use serde_json::{json, Value};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

fn row(id: &str, n: i64) -> Value {
    json!({"id": id, "owner": "o", "target": "t", "kind": "update", "body": {"n": n}, "savedAt": n, "state": "queued"})
}

/// How `p` settles within 5 s: `Ok` with its value, `Err` with its reason, or a panic of
/// this test if it has not settled by then.
async fn settled(p: Promise) -> Result<JsValue, JsValue> {
    let late = js("", "return new Promise((done) => setTimeout(() => done('not settled'), 5000));")
        .call0(&JsValue::NULL)
        .unwrap();
    let out = JsFuture::from(Promise::race(&Array::of2(&p, &late))).await;
    assert_ne!(
        out.as_ref().ok().and_then(JsValue::as_string).as_deref(),
        Some("not settled"),
        "the call never settled"
    );
    out
}

/// A replace whose early row is put before its planner panics.
fn panicking_replace(store: Rc<Store>) -> Promise {
    outbox_idb::panic::guarded(Box::pin(async move {
        let planner: Planner<'_> = Box::new(|_| panic!("a planner bug"));
        store
            .transact_records(
                vec![(vec![Scope::target("o", "t")], planner)],
                Durability::Strict,
                &RecordPort::default(),
                &[row("early", 1)],
            )
            .await?;
        Ok(JsValue::UNDEFINED)
    }))
}

#[wasm_bindgen_test]
async fn a_panic_mid_replace_writes_nothing_and_rejects_the_call_with_internal() {
    outbox_idb::panic::install();
    let store = Store::open(&db_name("panic-replace")).await.unwrap();

    let err = settled(panicking_replace(store.clone())).await.expect_err("a panic rejects the call");
    assert_eq!(get(&err, "code").as_string().as_deref(), Some("INTERNAL"));
    let message = get(&err, "message").as_string().unwrap();
    assert!(message.contains("please report it: a planner bug"), "{message}");
    // This build keeps panic locations (the package's does not: scripts/build.sh).
    assert!(message.contains(" (at "), "{message}");
    assert!(message.contains("panic.rs:"), "{message}");

    // The early row was put before the panic; the transaction was aborted, not committed.
    assert_eq!(store.read_all().await.unwrap(), Vec::<Value>::new());
    // The store goes on: the next replace commits.
    let put = ReplacePlan { puts: vec![row("next", 2)], ..Default::default() };
    store.transact(&[], Durability::Default, |_| Some(put)).await.unwrap();
    assert_eq!(store.read_all().await.unwrap(), vec![row("next", 2)]);
}

#[wasm_bindgen_test]
async fn after_a_panic_other_outboxes_and_new_ones_keep_working() {
    outbox_idb::panic::install();
    let db = db_name("panic-goes-on");
    let before = open(&db, "a").await;
    for _ in 0..3 {
        let store = Store::open(&db_name("panic-again")).await.unwrap();
        let err = settled(panicking_replace(store)).await.expect_err("a panic rejects the call");
        assert_eq!(get(&err, "code").as_string().as_deref(), Some("INTERNAL"));
    }
    let after = open(&db, "b").await;
    for (outbox, target) in [(&before, "t1"), (&after, "t2")] {
        let op = obj(json!({"owner": "o", "target": target, "kind": "create", "body": {}}));
        settled(outbox.enqueue(op, JsValue::UNDEFINED)).await.expect("enqueue after a panic");
    }
    let rows = settled(after.rows(JsValue::from_str("o"))).await.unwrap();
    assert_eq!(Array::from(&rows).length(), 2);
}

#[wasm_bindgen_test]
async fn a_panic_releases_the_turns_of_flushes_it_leaves_stuck_and_forgets_them() {
    outbox_idb::panic::install();
    let db = db_name("panic-turns");
    // Minutes-long leases and turn waits: only a released turn lets B's flush run.
    let patient = |tab: &str| {
        let o = options(&db, tab);
        set(&o, "leaseMs", &600_000.into());
        set(&o, "turnWaitMs", &600_000.into());
        set(&o, "concurrency", &1.into());
        o
    };
    let a = outbox_idb::Outbox::open_with(patient("a")).await.unwrap();
    let b = outbox_idb::Outbox::open_with(patient("b")).await.unwrap();
    for i in 0..5 {
        let op = obj(json!({"owner": "o", "kind": "create", "body": {"n": i}}));
        settled(a.enqueue(op, JsValue::UNDEFINED)).await.unwrap();
    }
    let pause = || async {
        let p: Promise = js("", "return new Promise((r) => setTimeout(r, 5));").call0(&JsValue::NULL).unwrap().into();
        JsFuture::from(p).await.unwrap();
    };
    // A's flush takes the turn, claims two rows (one ahead of its send) and its send never
    // answers: a future the panic strands.
    let never = js_fn("op", "globalThis.panicTurnSent = true; return new Promise(() => {});");
    let flush = |send: JsValue| {
        let o = obj(json!({"owner": "o"}));
        set(&o, "send", &send);
        o
    };
    let _stuck = a.flush(flush(never));
    while get(&js_sys::global(), "panicTurnSent").is_undefined() {
        pause().await;
    }
    let store = Store::open(&db_name("panic-turns-store")).await.unwrap();
    settled(panicking_replace(store)).await.expect_err("a panic rejects the call");
    // B's flush gets the turn (A's was released) and waits on its send of the third row.
    let held = js_fn(
        "op",
        "globalThis.panicTurnB = (globalThis.panicTurnB || 0) + 1;
         const ok = {type: 'success', receipt: {}};
         if (globalThis.panicTurnGo) return ok;
         return new Promise((r) => { globalThis.panicTurnGo = () => r(ok); });",
    );
    let fb = b.flush(flush(held));
    while get(&js_sys::global(), "panicTurnB").is_undefined() {
        pause().await;
    }
    // A flushes again. Had the panic left A's list saying A holds the turn, this flush
    // would share it and send the fifth row beside B (B holds the third and fourth); it
    // waits for B's turn instead.
    let fa = a.flush(flush(js_fn("op", "globalThis.panicTurnA = true; return {type: 'success', receipt: {}};")));
    for _ in 0..40 {
        pause().await;
    }
    assert!(get(&js_sys::global(), "panicTurnA").is_undefined(), "A's flush ran beside B's turn");
    let go: js_sys::Function = get(&js_sys::global(), "panicTurnGo").into();
    go.call0(&JsValue::NULL).unwrap();
    let rb: Value = outbox_idb::convert::from_js(&settled(fb).await.expect("B's flush ends"), "report").unwrap();
    assert_eq!(rb["claimed"], json!(3), "{rb}");
    let ra: Value = outbox_idb::convert::from_js(&settled(fa).await.expect("A's flush ends"), "report").unwrap();
    assert_eq!(ra["claimed"], json!(0), "{ra}");
}

#[wasm_bindgen_test]
async fn a_flush_ending_after_a_panic_leaves_a_later_flushs_turn_listed() {
    outbox_idb::panic::install();
    let db = db_name("panic-turns-later");
    let o = options(&db, "a");
    set(&o, "leaseMs", &600_000.into());
    set(&o, "turnWaitMs", &600_000.into());
    set(&o, "concurrency", &1.into());
    let a: JsValue = outbox_idb::Outbox::open_with(o).await.unwrap().into();
    Reflect::set(&js_sys::global(), &"panicLaterA".into(), &a).unwrap();
    let run = |code: &str| -> Promise { js("", code).call0(&JsValue::NULL).unwrap().into() };
    for i in 0..4 {
        let p =
            run(&format!("return globalThis.panicLaterA.enqueue({{owner: 'o', kind: 'create', body: {{n: {i}}}}});"));
        settled(p).await.unwrap();
    }
    // F1 holds the turn, its first send waiting for `panicLaterGo1`.
    let f1 = run("const ok = {type: 'success', receipt: {}};
         return globalThis.panicLaterA.flush({owner: 'o', send: () => globalThis.panicLaterGo1
           ? ok : new Promise((r) => { globalThis.panicLaterGo1 = () => r(ok); })});");
    while get(&js_sys::global(), "panicLaterGo1").is_undefined() {
        settled(run("return new Promise((r) => setTimeout(r, 5));")).await.unwrap();
    }
    Reflect::set(&js_sys::global(), &"panicLaterF1".into(), &f1).unwrap();
    let store = Store::open(&db_name("panic-turns-later-store")).await.unwrap();
    settled(panicking_replace(store)).await.expect_err("a panic rejects the call");
    // F2 takes the (released) turn. In its first send F1 is let go and ends; then a flush of
    // the same owner started inside that send shares F2's turn, which must still be listed
    // (were F1's end to take F2's entry out, it would wait minutes for F2's own lock).
    let f2 = run("const ok = {type: 'success', receipt: {}};
         return globalThis.panicLaterA.flush({owner: 'o', send: () => {
           if (globalThis.panicLaterInner) return ok;
           globalThis.panicLaterInner = 'started';
           globalThis.panicLaterGo1();
           return globalThis.panicLaterF1
             .then(() => globalThis.panicLaterA.flush({owner: 'o', send: () => ok}))
             .then((r) => { globalThis.panicLaterInner = r; return ok; });
         }});");
    settled(f2).await.expect("F2 ends");
    assert!(get(&js_sys::global(), "panicLaterInner").is_object(), "the inner flush ended");
}

/// A promise and the function that resolves it.
fn pending() -> (Promise, js_sys::Function) {
    let pair: Array = js("", "let go; const p = new Promise((ok) => { go = ok; }); return [p, go];")
        .call0(&JsValue::NULL)
        .unwrap()
        .into();
    (pair.get(0).into(), pair.get(1).into())
}

/// A call that panics while a wake-up of its task is pending (on `wake`): resolving `wake`
/// later polls the task again, and that poll traps at once (the task is still borrowed:
/// the panic ran no destructor).
fn panicking_with_a_wake_up(wake: Promise) -> Promise {
    outbox_idb::panic::guarded(Box::pin(async move {
        let mut wake = JsFuture::from(wake);
        std::future::poll_fn(|cx| -> std::task::Poll<Result<JsValue, JsValue>> {
            let _ = std::future::Future::poll(std::pin::Pin::new(&mut wake), cx);
            panic!("a bug with a wake-up pending")
        })
        .await
    }))
}

/// A call that writes `row("b", 1)` in one replace, put early (its transaction is armed
/// from its first poll until its planner has run, after its reads).
fn replace_writing_b(store: Rc<Store>) -> Promise {
    outbox_idb::panic::guarded(Box::pin(async move {
        let put = ReplacePlan { puts: vec![row("b", 1)], ..Default::default() };
        let planner: Planner<'_> = Box::new(move |_| Some(put));
        let port = RecordPort::default();
        store
            .transact_records(vec![(vec![Scope::target("o", "t")], planner)], Durability::Strict, &port, &[row("b", 1)])
            .await?;
        Ok(JsValue::UNDEFINED)
    }))
}

#[wasm_bindgen_test]
async fn a_task_polled_again_after_its_panic_leaves_another_calls_transaction_alone() {
    outbox_idb::panic::install();
    let store = Store::open(&db_name("panic-woken-again")).await.unwrap();
    let (wake, go) = pending();
    let a = panicking_with_a_wake_up(wake);
    settled(a).await.expect_err("a panic rejects the call");

    // B's first poll arms its transaction and issues its reads; then A's task is woken and
    // traps again while B waits for them. That trap is no bug of B's: B commits.
    let b = replace_writing_b(store.clone());
    go.call0(&JsValue::NULL).unwrap();
    settled(b).await.expect("the other call commits");
    assert_eq!(store.read_all().await.unwrap(), vec![row("b", 1)]);
}

#[wasm_bindgen_test]
async fn a_call_woken_in_the_same_tick_as_one_that_panics_is_still_polled() {
    outbox_idb::panic::install();
    let (wake, go) = pending();
    let c_wake = wake.clone();
    // A and C wait on the same promise: its resolution wakes both in one tick, A first,
    // and A panics in that poll.
    let a = outbox_idb::panic::guarded(Box::pin(async move {
        JsFuture::from(wake).await?;
        panic!("a bug after a wake-up")
    }));
    let c = outbox_idb::panic::guarded(Box::pin(async move { JsFuture::from(c_wake).await }));
    go.call1(&JsValue::NULL, &"woken".into()).unwrap();
    // Nothing else is scheduled meanwhile: C is polled because the panic's clean-up
    // scheduled the futures again, not because something else came along.
    let out = settled(c).await.expect("C settles");
    assert_eq!(out.as_string().as_deref(), Some("woken"));
    settled(a).await.expect_err("a panic rejects the call");
}
