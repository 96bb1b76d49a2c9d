//! Flushes of one owner take turns across tabs (`src/turn.rs`): two outboxes of one page on
//! one database stand for two tabs (Web Locks are shared by every context of an origin).
#![cfg(target_arch = "wasm32")]

use futures_util::future::join;
use js_sys::Reflect;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// `tab`'s options with `concurrency: 1` (one row sent at a time and one claimed ahead: a
/// claim batch of two rows at most, so two flushes running at once would interleave their
/// claims) and `turnWaitMs` if given.
fn tab_options(db: &str, tab: &str, turn_wait_ms: Option<u32>) -> JsValue {
    let o = options(db, tab);
    set(&o, "concurrency", &1.into());
    if let Some(ms) = turn_wait_ms {
        set(&o, "turnWaitMs", &ms.into());
    }
    o
}

async fn enqueue_creates(outbox: &outbox_idb::Outbox, owner: &str, n: usize) {
    for i in 0..n {
        let op = obj(json!({"owner": owner, "kind": "create", "body": {"n": i}}));
        ok(outbox.enqueue(op, JsValue::UNDEFINED)).await;
    }
}

/// A `send` that logs `tab` in `globalThis[log]` and answers success a moment later.
fn logging_send(log: &str, tab: &str) -> JsValue {
    js_fn(
        "op",
        &format!(
            "(globalThis.{log} ||= []).push('{tab}');
             return new Promise((r) => setTimeout(() => r({{type: 'success', receipt: {{serverId: 's-' + op.id}}}}), 2));"
        ),
    )
}

fn flush_with(owner: &str, send: JsValue) -> JsValue {
    let o = obj(json!({"owner": owner}));
    set(&o, "send", &send);
    o
}

fn log_of(log: &str) -> Vec<String> {
    let v = Reflect::get(&js_sys::global(), &log.into()).unwrap();
    js_sys::Array::from(&v).iter().map(|s| s.as_string().unwrap()).collect()
}

/// Tabs A and B (with `turn_wait_ms`) on a new database with ten queued creates, flushing
/// at once; their reports. Every send is logged in `globalThis[log]`.
async fn two_tabs_flush_ten(test: &str, turn_wait_ms: Option<u32>, log: &str) -> (Value, Value) {
    let db = db_name(test);
    let a = outbox_idb::Outbox::open_with(tab_options(&db, "tab-a", turn_wait_ms)).await.unwrap();
    let b = outbox_idb::Outbox::open_with(tab_options(&db, "tab-b", turn_wait_ms)).await.unwrap();
    enqueue_creates(&a, "alice", 10).await;
    let reports = join(
        ok(a.flush(flush_with("alice", logging_send(log, "a")))),
        ok(b.flush(flush_with("alice", logging_send(log, "b")))),
    )
    .await;
    assert_eq!(ok(a.rows("alice".into())).await, json!([]), "the queue was drained");
    reports
}

fn claimed(report: &Value) -> u64 {
    report["claimed"].as_u64().unwrap()
}

#[wasm_bindgen_test]
async fn two_tabs_flushing_one_owner_at_once_take_turns_one_sends_everything() {
    let (ra, rb) = two_tabs_flush_ten("turns", None, "turnLog1").await;
    // One flush had the turn and sent all ten; the other ran after it and found nothing.
    assert_eq!(claimed(&ra) + claimed(&rb), 10, "{ra} {rb}");
    assert!(claimed(&ra) == 10 || claimed(&rb) == 10, "interleaved: {ra} {rb}");
    assert_eq!(ra["stale"].as_u64().unwrap() + rb["stale"].as_u64().unwrap(), 0, "{ra} {rb}");
    let log = log_of("turnLog1");
    assert_eq!(log.len(), 10, "one send per row: {log:?}");
    assert!(log.iter().all(|t| *t == log[0]), "sends of one tab only: {log:?}");
}

#[wasm_bindgen_test]
async fn another_owners_flush_does_not_wait_for_the_turn() {
    let db = db_name("turns-owners");
    // Long leases and waits: a flush that waited for alice's turn would wait for minutes.
    let long = |tab: &str| {
        let o = tab_options(&db, tab, Some(600_000));
        set(&o, "leaseMs", &600_000.into());
        o
    };
    let a = outbox_idb::Outbox::open_with(long("tab-a")).await.unwrap();
    let b = outbox_idb::Outbox::open_with(long("tab-b")).await.unwrap();
    enqueue_creates(&a, "alice", 2).await;
    enqueue_creates(&a, "bob", 3).await;
    let fa = a.flush(flush_with("alice", stuck_send("turnLog2", "turnRelease2")));
    wait_for(|| !Reflect::get(&js_sys::global(), &"turnLog2".into()).unwrap().is_undefined()).await;
    // Bob's flush has a turn of its own: it ends while alice's is still stuck.
    let fb = wasm_bindgen_futures::JsFuture::from(b.flush(flush_with("bob", logging_send("turnLog2b", "b"))));
    let timer = wasm_bindgen_futures::JsFuture::from(sleep(5_000));
    match futures_util::future::select(fb, timer).await {
        futures_util::future::Either::Left((r, _)) => {
            let rb: Value = outbox_idb::convert::from_js(&r.unwrap(), "report").unwrap();
            assert_eq!(rb["succeeded"], json!(3), "{rb}");
        }
        futures_util::future::Either::Right(_) => panic!("bob's flush waited for alice's turn"),
    }
    release("turnRelease2");
    assert_eq!(ok(fa).await["succeeded"], json!(2));
}

/// A `send` that counts its calls in `globalThis[log]` and answers only when
/// `globalThis[release]()` is called (then every call made so far answers success, and
/// every later one at once).
fn stuck_send(log: &str, release: &str) -> JsValue {
    js_fn(
        "op",
        &format!(
            "globalThis.{log} = (globalThis.{log} || 0) + 1;
             if (globalThis.{release}Done) return {{type: 'success', receipt: {{}}}};
             return new Promise((r) => {{
               const before = globalThis.{release};
               globalThis.{release} = () => {{
                 globalThis.{release}Done = true;
                 if (before) before();
                 r({{type: 'success', receipt: {{}}}});
               }};
             }});"
        ),
    )
}

fn release(name: &str) {
    let f: js_sys::Function = Reflect::get(&js_sys::global(), &name.into()).unwrap().into();
    f.call0(&JsValue::NULL).unwrap();
}

fn sleep(ms: i32) -> js_sys::Promise {
    js_sys::Promise::new(&mut |r, _| {
        let set_timeout: js_sys::Function = Reflect::get(&js_sys::global(), &"setTimeout".into()).unwrap().into();
        set_timeout.call2(&JsValue::NULL, &r, &ms.into()).unwrap();
    })
}

async fn wait_for(cond: impl Fn() -> bool) {
    while !cond() {
        wasm_bindgen_futures::JsFuture::from(sleep(5)).await.unwrap();
    }
}

#[wasm_bindgen_test]
async fn with_turn_wait_zero_flushes_run_side_by_side() {
    let (ra, rb) = two_tabs_flush_ten("turns-off", Some(0), "turnLog3").await;
    assert_eq!(claimed(&ra) + claimed(&rb), 10, "{ra} {rb}");
    // Both took part (every row still went once).
    assert!(claimed(&ra) > 0 && claimed(&rb) > 0, "{ra} {rb}");
    assert_eq!(log_of("turnLog3").len(), 10);
}

#[wasm_bindgen_test]
async fn a_flush_stops_waiting_for_a_turn_whose_holder_is_stuck() {
    let db = db_name("turns-stuck");
    let a = outbox_idb::Outbox::open_with(tab_options(&db, "tab-a", None)).await.unwrap();
    let b = outbox_idb::Outbox::open_with(tab_options(&db, "tab-b", Some(200))).await.unwrap();
    enqueue_creates(&a, "alice", 4).await;
    // A's send never answers until the test lets it: A keeps its turn, its first row and
    // the second, claimed ahead of its send.
    let fa = a.flush(flush_with("alice", stuck_send("turnLog4", "turnRelease4")));
    wait_for(|| !Reflect::get(&js_sys::global(), &"turnLog4".into()).unwrap().is_undefined()).await;
    // B sees no change for 200 ms, goes on without the turn and sends the other two; A's
    // rows are still claimed (their lease runs), so B leaves them.
    let rb = ok(b.flush(flush_with("alice", logging_send("turnLog4b", "b")))).await;
    assert_eq!(rb["claimed"], json!(2), "{rb}");
    assert_eq!(log_of("turnLog4b").len(), 2);
    release("turnRelease4");
    let ra = ok(fa).await;
    assert_eq!(ra["succeeded"], json!(2), "{ra}");
    assert_eq!(ok(b.rows("alice".into())).await, json!([]));
}

#[wasm_bindgen_test]
async fn turn_wait_must_be_a_number_of_at_least_zero() {
    let db = db_name("turns-bad");
    let o = tab_options(&db, "tab-a", None);
    set(&o, "turnWaitMs", &(-1).into());
    let err: JsValue = outbox_idb::Outbox::open_with(o).await.err().expect("refused").into();
    let (code, message) = coded(&err);
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("turnWaitMs"), "{message}");
}

/// `send` that logs `tab` in `globalThis[log]` and answers success after `ms`.
fn slow_send(log: &str, tab: &str, ms: u32) -> JsValue {
    js_fn(
        "op",
        &format!(
            "(globalThis.{log} ||= []).push('{tab}');
             return new Promise((r) => setTimeout(() => r({{type: 'success', receipt: {{}}}}), {ms}));"
        ),
    )
}

/// `p`'s report, or a panic naming `what` if it has not settled within 5 s.
async fn within_5s(p: js_sys::Promise, what: &str) -> Value {
    let fp = wasm_bindgen_futures::JsFuture::from(p);
    match futures_util::future::select(fp, wasm_bindgen_futures::JsFuture::from(sleep(5_000))).await {
        futures_util::future::Either::Left((r, _)) => outbox_idb::convert::from_js(&r.unwrap(), "report").unwrap(),
        futures_util::future::Either::Right(_) => panic!("{what}"),
    }
}

/// Options with minutes-long leases and waits: a flush that waited for a turn it should not
/// wait for would not end within a test.
fn patient(db: &str, tab: &str) -> JsValue {
    let o = tab_options(db, tab, Some(600_000));
    set(&o, "leaseMs", &600_000.into());
    o
}

/// Patient tabs A and B on a new database with `n` queued creates of alice, A's flush
/// holding the turn, stuck on its first row until `globalThis["turnRelease" + tag]()` (and
/// holding its second too, claimed ahead of its send).
async fn a_stuck_holder(test: &str, n: usize, tag: u32) -> (outbox_idb::Outbox, outbox_idb::Outbox, js_sys::Promise) {
    let db = db_name(test);
    let a = outbox_idb::Outbox::open_with(patient(&db, "tab-a")).await.unwrap();
    let b = outbox_idb::Outbox::open_with(patient(&db, "tab-b")).await.unwrap();
    enqueue_creates(&a, "alice", n).await;
    let log = format!("turnLog{tag}");
    let fa = a.flush(flush_with("alice", stuck_send(&log, &format!("turnRelease{tag}"))));
    wait_for(|| !Reflect::get(&js_sys::global(), &log.as_str().into()).unwrap().is_undefined()).await;
    (a, b, fa)
}

#[wasm_bindgen_test]
async fn a_flush_waits_as_long_as_the_holder_keeps_changing_the_owners_rows() {
    let db = db_name("turns-busy");
    let a = outbox_idb::Outbox::open_with(tab_options(&db, "tab-a", None)).await.unwrap();
    // B gives up after 300 ms without a change; A's sends take 120 ms each, 8 of them.
    let b = outbox_idb::Outbox::open_with(tab_options(&db, "tab-b", Some(300))).await.unwrap();
    enqueue_creates(&a, "alice", 8).await;
    let fa = a.flush(flush_with("alice", slow_send("turnLog6", "a", 120)));
    wait_for(|| !Reflect::get(&js_sys::global(), &"turnLog6".into()).unwrap().is_undefined()).await;
    let rb = ok(b.flush(flush_with("alice", slow_send("turnLog6", "b", 120)))).await;
    let ra = ok(fa).await;
    // A's answers kept coming more often than every 300 ms: B waited for all of them.
    assert_eq!(ra["claimed"], json!(8), "{ra} {rb}");
    assert_eq!(rb["claimed"], json!(0), "{ra} {rb}");
    assert!(log_of("turnLog6").iter().all(|t| t == "a"));
}

#[wasm_bindgen_test]
async fn a_flush_that_fails_hands_its_turn_on() {
    let db = db_name("turns-failed");
    let a = std::rc::Rc::new(outbox_idb::Outbox::open_with(patient(&db, "tab-a")).await.unwrap());
    let b = outbox_idb::Outbox::open_with(patient(&db, "tab-b")).await.unwrap();
    enqueue_creates(&a, "alice", 3).await;
    // A's first send closes A: its flush fails with CLOSED, holding the turn until then.
    let close = Closure::<dyn FnMut()>::new({
        let a = a.clone();
        move || a.close()
    });
    Reflect::set(&js_sys::global(), &"turnClose7".into(), close.as_ref()).unwrap();
    let closing = js_fn("op", "globalThis.turnClose7(); return {type: 'success', receipt: {}};");
    let err = settle(a.flush(flush_with("alice", closing))).await.expect_err("the flush fails");
    assert_eq!(coded(&err).0, "CLOSED");
    let rb =
        within_5s(b.flush(flush_with("alice", logging_send("turnLog7", "b"))), "B waited for a failed flush's turn")
            .await;
    // A's first two rows (one claimed ahead of its send) are still A's: their lease runs.
    assert_eq!(rb["claimed"], json!(1), "{rb}");
}

#[wasm_bindgen_test]
async fn a_flush_started_inside_a_send_of_the_same_tab_does_not_wait_for_its_own_turn() {
    let db = db_name("turns-nested");
    let a = outbox_idb::Outbox::open_with(patient(&db, "tab-a")).await.unwrap();
    enqueue_creates(&a, "alice", 4).await;
    let a: JsValue = a.into();
    Reflect::set(&js_sys::global(), &"turnOutbox8".into(), &a).unwrap();
    // The first send flushes the same owner again, in the same tab, and waits for it.
    let send = js_fn(
        "op",
        "globalThis.turnSends8 = (globalThis.turnSends8 || 0) + 1;
         if (globalThis.turnSends8 === 1) {
           const inner = (o) => { globalThis.turnSends8 += 1; return {type: 'success', receipt: {}}; };
           return globalThis.turnOutbox8.flush({owner: 'alice', send: inner})
             .then((r) => { globalThis.turnInner8 = r; return {type: 'success', receipt: {}}; });
         }
         return {type: 'success', receipt: {}};",
    );
    let flush: js_sys::Function = Reflect::get(&a, &"flush".into()).unwrap().into();
    let outer: js_sys::Promise = flush.call1(&a, &flush_with("alice", send)).unwrap().into();
    let ra = within_5s(outer, "the inner flush waited for its own tab's turn").await;
    let inner: Value = outbox_idb::convert::from_js(&get(&js_sys::global(), "turnInner8"), "inner").unwrap();
    assert_eq!(claimed(&ra) + claimed(&inner), 4, "{ra} {inner}");
    assert!(claimed(&inner) > 0, "the inner flush sent the rows the outer one was not sending: {inner}");
}

#[wasm_bindgen_test]
async fn without_web_locks_flushes_run_side_by_side() {
    let nav = get(&js_sys::global(), "navigator");
    let shadow = js("n", "Object.defineProperty(n, 'locks', {value: undefined, configurable: true});");
    shadow.call1(&JsValue::NULL, &nav).unwrap();
    let (ra, rb) = two_tabs_flush_ten("turns-nolocks", None, "turnLog9").await;
    js("n", "delete n.locks;").call1(&JsValue::NULL, &nav).unwrap();
    assert_eq!(claimed(&ra) + claimed(&rb), 10, "{ra} {rb}");
    assert!(claimed(&ra) > 0 && claimed(&rb) > 0, "both ran at once: {ra} {rb}");
    assert_eq!(log_of("turnLog9").len(), 10);
}

#[wasm_bindgen_test]
async fn only_a_flushs_changes_keep_a_waiting_flush_waiting() {
    let db = db_name("turns-enqueues");
    let a = outbox_idb::Outbox::open_with(tab_options(&db, "tab-a", None)).await.unwrap();
    // B gives up after 300 ms without a flush's change; its lease (the longest wait) is 10 s.
    let b = outbox_idb::Outbox::open_with(tab_options(&db, "tab-b", Some(300))).await.unwrap();
    let c = outbox_idb::Outbox::open_with(tab_options(&db, "tab-c", None)).await.unwrap();
    enqueue_creates(&a, "alice", 3).await;
    // A's flush holds the turn and is stuck on its first row.
    let fa = a.flush(flush_with("alice", stuck_send("turnLog10", "turnRelease10")));
    wait_for(|| !Reflect::get(&js_sys::global(), &"turnLog10".into()).unwrap().is_undefined()).await;
    // Meanwhile C keeps enqueueing for alice every 50 ms until B sends its first row:
    // changes of her rows, but no flush's. Were they counted, B would wait its whole lease
    // (10 s) before sending. (C stops there, not when B's flush ends: a flush drains, §8, so
    // a B slower than C's 50 ms would send C's rows for as long as C made them.)
    let b_sending = || !get(&js_sys::global(), "turnSent10b").is_undefined();
    let started = now_ms();
    let fb = ok(b.flush(flush_with("alice", timed_send("turnSent10b"))));
    let enqueues = async {
        let mut i = 0;
        while !b_sending() && i < 400 {
            let op = obj(json!({"owner": "alice", "kind": "create", "body": {"c": i}}));
            ok(c.enqueue(op, JsValue::UNDEFINED)).await;
            wasm_bindgen_futures::JsFuture::from(sleep(50)).await.unwrap();
            i += 1;
        }
    };
    let (rb, ()) = join(fb, enqueues).await;
    let waited = get(&js_sys::global(), "turnSent10b").as_f64().expect("B sent") - started;
    assert!(waited < 5_000.0, "C's enqueues kept B waiting for a stuck flush: {waited} ms");
    assert!(claimed(&rb) >= 2, "B sent rows A does not hold (A holds two: one sent, one claimed ahead): {rb}");
    release("turnRelease10");
    ok(fa).await;
}

/// `performance.now()`.
fn now_ms() -> f64 {
    let perf = get(&js_sys::global(), "performance");
    let now: js_sys::Function = get(&perf, "now").into();
    now.call0(&perf).unwrap().as_f64().unwrap()
}

/// A `send` that notes when it was first called (`performance.now()`) in `globalThis[first]`
/// and answers success a moment later.
fn timed_send(first: &str) -> JsValue {
    js_fn(
        "op",
        &format!(
            "globalThis.{first} ??= performance.now();
             return new Promise((r) => setTimeout(() => r({{type: 'success', receipt: {{}}}}), 2));"
        ),
    )
}

#[wasm_bindgen_test]
async fn a_flush_waits_for_a_turn_at_most_its_lease_however_busy_the_holder() {
    let db = db_name("turns-lease");
    let a = outbox_idb::Outbox::open_with(patient(&db, "tab-a")).await.unwrap();
    // B would wait for ever on A's changes; its lease (400 ms) is the longest it waits.
    let b = tab_options(&db, "tab-b", Some(600_000));
    set(&b, "leaseMs", &400.into());
    let b = outbox_idb::Outbox::open_with(b).await.unwrap();
    // A sends 30 rows, 60 ms each (about 2 s), changing alice's rows all along.
    enqueue_creates(&a, "alice", 30).await;
    let fa = a.flush(flush_with("alice", slow_send("turnLog11", "a", 60)));
    wait_for(|| !Reflect::get(&js_sys::global(), &"turnLog11".into()).unwrap().is_undefined()).await;
    let rb = ok(b.flush(flush_with("alice", slow_send("turnLog11", "b", 60)))).await;
    let ra = ok(fa).await;
    assert!(claimed(&rb) > 0, "B waited past its lease for A's whole flush: {ra} {rb}");
    // ... and it did wait first: A sent some rows before B's first.
    let log = log_of("turnLog11");
    let first_b = log.iter().position(|t| t == "b").unwrap();
    assert!(first_b >= 2, "B did not wait for its lease: {log:?}");
    assert_eq!(claimed(&ra) + claimed(&rb), 30, "{ra} {rb}");
}

#[wasm_bindgen_test]
async fn a_flush_waits_for_a_turn_at_most_until_its_deadline() {
    // A holds the turn, stuck on its first row; B's wait and lease are minutes long.
    let (_a, b, fa) = a_stuck_holder("turns-deadline", 4, 12).await;
    // B's flush has a deadline 300 ms after now (the clock stands still): it stops waiting
    // then and sends what A is not sending.
    let opts = flush_with("alice", logging_send("turnLog12b", "b"));
    set(&opts, "deadline", &(T0 + 300.0).into());
    let rb = within_5s(b.flush(opts), "B waited for a stuck turn past its flush's deadline").await;
    assert_eq!(rb["claimed"], json!(2), "{rb}");
    release("turnRelease12");
    ok(fa).await;
}

#[wasm_bindgen_test]
async fn a_turn_given_up_on_is_withdrawn_not_granted_later() {
    // A holds the turn, stuck on its first row.
    let (_a, b, fa) = a_stuck_holder("turns-withdrawn", 3, 13).await;
    let b: JsValue = b.into();
    Reflect::set(&js_sys::global(), &"turnFlushA13".into(), &fa).unwrap();
    Reflect::set(&js_sys::global(), &"turnOutboxB13".into(), &b).unwrap();
    // B stops waiting at its deadline and sends a row; in that send, A is let go and ends
    // (handing its turn on), then B flushes alice again. Had B's request stayed queued, the
    // lock would now be B's own, unlisted: the inner flush would wait for it for minutes.
    let send = js_fn(
        "op",
        "if (globalThis.turnInner13) return {type: 'success', receipt: {}};
         globalThis.turnInner13 = 'started';
         const done = () => ({type: 'success', receipt: {}});
         return navigator.locks.query()
           .then((s) => {
             globalThis.turnPending13 = s.pending.filter((l) => l.name.includes('turns-withdrawn')).length;
             globalThis.turnRelease13();
             return globalThis.turnFlushA13;
           })
           .then(() => globalThis.turnOutboxB13.flush({owner: 'alice', send: done}))
           .then((r) => { globalThis.turnInner13 = r; return done(); });",
    );
    let opts = flush_with("alice", send);
    set(&opts, "deadline", &(T0 + 300.0).into());
    let flush: js_sys::Function = Reflect::get(&b, &"flush".into()).unwrap().into();
    let outer: js_sys::Promise = flush.call1(&b, &opts).unwrap().into();
    // While B waits, its request is in the lock's queue.
    wasm_bindgen_futures::JsFuture::from(sleep(100)).await.unwrap();
    let query = js("", "return navigator.locks.query().then((s) => s.pending.filter((l) => l.name.includes('turns-withdrawn')).length);");
    let pending = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(query.call0(&JsValue::NULL).unwrap()))
        .await
        .unwrap();
    assert_eq!(pending.as_f64(), Some(1.0), "B asked for the turn");
    let rb = within_5s(outer, "B's inner flush waited for a lock B's outer flush had given up on").await;
    assert!(claimed(&rb) >= 1, "{rb}");
    // B's request was withdrawn when it stopped waiting, not left in the lock's queue.
    assert_eq!(get(&js_sys::global(), "turnPending13").as_f64(), Some(0.0));
    let inner = get(&js_sys::global(), "turnInner13");
    assert!(inner.is_object(), "the inner flush ended: {inner:?}");
}

#[wasm_bindgen_test]
async fn a_flush_waiting_for_a_turn_fails_closed_soon_after_its_outbox_closes() {
    let (_a, b, fa) = a_stuck_holder("turns-closed", 2, 14).await;
    // B waits for A's stuck turn (for minutes); its outbox is closed meanwhile.
    let fb = wasm_bindgen_futures::JsFuture::from(b.flush(flush_with("alice", logging_send("turnLog14b", "b"))));
    wasm_bindgen_futures::JsFuture::from(sleep(100)).await.unwrap();
    b.close();
    match futures_util::future::select(fb, wasm_bindgen_futures::JsFuture::from(sleep(5_000))).await {
        futures_util::future::Either::Left((r, _)) => assert_eq!(coded(&r.expect_err("B's flush fails")).0, "CLOSED"),
        futures_util::future::Either::Right(_) => panic!("B's flush went on waiting after its outbox closed"),
    }
    assert!(Reflect::get(&js_sys::global(), &"turnLog14b".into()).unwrap().is_undefined(), "B sent nothing");
    release("turnRelease14");
    ok(fa).await;
}

#[wasm_bindgen_test]
async fn a_flush_whose_deadline_is_as_early_as_a_time_can_be_ends_at_once() {
    let db = db_name("turns-early");
    let a = outbox_idb::Outbox::open_with(patient(&db, "tab-a")).await.unwrap();
    enqueue_creates(&a, "alice", 1).await;
    // The deadline minus now is below the smallest i64: the wait's bound must not overflow.
    let opts = flush_with("alice", logging_send("turnLog15", "a"));
    set(&opts, "deadline", &(-9_223_372_036_854_775_808.0).into());
    let ra = within_5s(a.flush(opts), "the flush did not end").await;
    assert_eq!(ra["claimed"], json!(0), "{ra}");
    assert_eq!(ok(a.rows("alice".into())).await.as_array().map(Vec::len), Some(1));
}

#[wasm_bindgen_test]
async fn the_turn_is_a_web_lock_named_after_the_databases_length_and_name_and_the_owner() {
    let (_a, _b, fa) = a_stuck_holder("turns-lock-name-\u{e9}", 1, 16).await;
    let query = js(
        "",
        "return navigator.locks.query().then((s) => s.held.map((l) => l.name).filter((n) => n.includes('turns-lock-name-')));",
    );
    let held = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(query.call0(&JsValue::NULL).unwrap()))
        .await
        .unwrap();
    let held: Vec<String> = js_sys::Array::from(&held).iter().map(|s| s.as_string().unwrap()).collect();
    // The database's name is the test's, `-` and a UUID: 18 + 1 + 36 = 55 bytes in UTF-8
    // (`é` is two), 54 characters.
    assert_eq!(held.len(), 1, "{held:?}");
    let name = &held[0];
    assert!(name.starts_with("outbox-flush:55:turns-lock-name-\u{e9}-"), "{name}");
    assert!(name.ends_with(":alice"), "{name}");
    assert_eq!(name.len(), "outbox-flush:55:".len() + 55 + ":alice".len(), "{name}");
    release("turnRelease16");
    ok(fa).await;
}
