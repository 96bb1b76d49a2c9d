//! SPEC §8 answers written together, in the browser: an answer that arrives while another
//! send is out waits for company at most `ACK_WAIT_MS`. The wait is a timer of the driver:
//! a send that does not answer keeps no other answer unwritten.

mod common;

use common::*;
use js_sys::{Function, Promise};
use serde_json::json;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn sleep(ms: u32) {
    let p = js("ms", "return new Promise((done) => setTimeout(done, ms));").call1(&JsValue::NULL, &ms.into()).unwrap();
    let _ = settle(p.unchecked_into::<Promise>()).await;
}

/// An outbox with updates of `w:0` and `w:1` queued for alice, and a `send` (its body) that
/// answers w:0 at once and w:1 only when the test calls the global function `key`.
async fn w1_answers_when_told(name: &str) -> (outbox_idb::Outbox, String, String) {
    let db = db_name(name);
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:0", json!({"i": 0})).await;
    enqueue_update(&a, "alice", "w:1", json!({"i": 1})).await;
    let key = format!("answer_{}", db.replace('-', "_"));
    let send = format!(
        "if (op.target === 'w:1') return new Promise((ok) => {{ globalThis.{key} = () => ok({{type: 'success', receipt: {{}}}}); }});
         return {{type: 'success', receipt: {{}}}};"
    );
    (a, key, send)
}

#[wasm_bindgen_test]
async fn s8_an_answer_beside_a_send_that_does_not_answer_is_written_within_the_wait() {
    let (a, key, send) = w1_answers_when_told("answers-together").await;
    let flush = a.flush(flush_opts("alice", &send));
    let mut targets = Vec::new();
    for _ in 0..300 {
        let rows = ok(a.rows("alice".into())).await;
        targets = rows.as_array().unwrap().iter().map(|r| r["target"].clone()).collect::<Vec<_>>();
        if targets == [json!("w:1")] {
            break;
        }
        sleep(10).await;
    }
    assert_eq!(targets, [json!("w:1")], "w:0's answer is written while w:1's send is still out");
    get(&js_sys::global(), &key).unchecked_into::<Function>().call0(&JsValue::NULL).unwrap();
    let rep = ok(flush).await;
    assert_eq!((rep["claimed"].clone(), rep["succeeded"].clone()), (json!(2), json!(2)), "{rep}");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}

#[wasm_bindgen_test]
async fn s8_a_flush_that_is_done_ends_without_waiting_for_its_answers_timer() {
    // w:0's answer comes while w:1's send is out: it waits for company, and the driver sets
    // a timer of ACK_WAIT_MS for it. The test holds that timer (it never fires). w:1's
    // answer then comes: no send is out, both answers are written, and the flush is done.
    // It must resolve then, not when the timer it no longer needs would fire.
    let (a, key, send) = w1_answers_when_told("answers-done").await;
    // Timers of ACK_WAIT_MS are held; every other one runs.
    let hold = "globalThis.heldTimers = []; const set = globalThis.setTimeout; globalThis.plainSetTimeout = set;
                globalThis.setTimeout = (f, ms, ...r) => ms === wait ? (heldTimers.push(f), -1) : set(f, ms, ...r);";
    js("wait", hold).call1(&JsValue::NULL, &outbox_core::flush::ACK_WAIT_MS.into()).unwrap();
    let flush = a.flush(flush_opts("alice", &send));
    let held = || get(&js_sys::global(), "heldTimers").unchecked_into::<js_sys::Array>().length();
    for _ in 0..300 {
        if held() > 0 {
            break;
        }
        sleep(10).await;
    }
    let waited = held();
    // Nothing between the stub and its removal may panic (later tests share the page).
    let answer = get(&js_sys::global(), &key).dyn_into::<Function>().map(|f| f.call0(&JsValue::NULL));
    let within = js(
        "p",
        "return Promise.race([p, new Promise((_, no) => plainSetTimeout(() => no('the flush waited for a timer it no longer needed'), 5000))]);",
    );
    let rep = match within.call1(&JsValue::NULL, &flush) {
        Ok(p) => settle(p.unchecked_into::<Promise>()).await,
        Err(e) => Err(e),
    };
    js("", "globalThis.setTimeout = plainSetTimeout;").call0(&JsValue::NULL).unwrap();
    assert!(matches!(answer, Ok(Ok(_))), "w:1's send was made and answered: {answer:?}");
    assert_eq!(waited, 1, "w:0's answer waited for company with a timer of ACK_WAIT_MS");
    let rep = rep.unwrap_or_else(|e| panic!("{e:?}"));
    let rep = outbox_idb::convert::from_js(&rep, "report").unwrap();
    assert_eq!((rep["claimed"].clone(), rep["succeeded"].clone()), (json!(2), json!(2)), "{rep}");
    assert_eq!(ok(a.rows("alice".into())).await, json!([]));
}
