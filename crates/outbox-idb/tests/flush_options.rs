//! `flush` options are checked (§3 rule 4, §8): `maxRows`, `deadline` and `concurrency`
//! must be numbers when given (a string or a `Date` used to be silently ignored), and a
//! `maxRows` of 2^32 or more is a bound, not cut to its low 32 bits on wasm32 (found by an
//! attack on the binding, 2026-12-03).
#![cfg(target_arch = "wasm32")]

use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// SPEC §3 rule 4 (bad input rejected with a clear error, nothing written); §8 (`maxRows`
/// bounds the sends); api.md: `maxRows` "optional bound on sends". `maxRows: "1"` (a
/// string, say from a config) is refused with INVALID_ARGUMENT, like `-1` or `NaN`; it used
/// to be ignored (every row sent).
#[wasm_bindgen_test]
async fn s8_flush_with_a_string_max_rows_is_refused() {
    let db = db_name("flush-options-maxrows");
    let a = open(&db, "tab-a").await;
    for i in 0..3 {
        enqueue_update(&a, "alice", &format!("w:{i}"), json!({"i": i})).await;
    }
    let o = flush_opts(
        "alice",
        "globalThis.flushOptionsSent = (globalThis.flushOptionsSent || 0) + 1; return {type: 'success', receipt: {}};",
    );
    set(&o, "maxRows", &"1".into());
    let r = settle(a.flush(o)).await;
    let sent = get(&js_sys::global(), "flushOptionsSent").as_f64().unwrap_or(0.0);
    let refused = r.as_ref().is_err_and(|e| coded(e).0 == "INVALID_ARGUMENT");
    assert!(
        refused || sent <= 1.0,
        "maxRows '1': {} and sent {sent} rows",
        if r.is_ok() { "resolved" } else { "rejected" }
    );
}

/// api.md: "`deadline` is an instant of the outbox's clock: from then on the flush claims no
/// more rows" (the service worker's `sync` handler must end in time). Given as a `Date`
/// already past — an easy mistake — it used to be ignored (every row claimed and sent); it
/// is refused with INVALID_ARGUMENT (as at `open` for a non-numeric option).
#[wasm_bindgen_test]
async fn s8_flush_with_a_date_deadline_is_refused() {
    let db = db_name("flush-options-deadline");
    let a = open(&db, "tab-a").await;
    for i in 0..3 {
        enqueue_update(&a, "alice", &format!("w:{i}"), json!({"i": i})).await;
    }
    let o = flush_opts("alice", "return {type: 'success', receipt: {}};");
    set(&o, "deadline", &js("", "return new Date(Date.now() - 60000);").call0(&JsValue::NULL).unwrap());
    let r = settle(a.flush(o)).await;
    let refused = r.as_ref().is_err_and(|e| coded(e).0 == "INVALID_ARGUMENT");
    let claimed = r.as_ref().ok().map(|rep| get(rep, "claimed").as_f64().unwrap_or(0.0)).unwrap_or(0.0);
    assert!(refused || claimed == 0.0, "a past deadline given as a Date: claimed {claimed} rows");
}

/// SPEC §8 (a flush drains: it ends when nothing is sendable, "or after `maxRows` sends")
/// and api.md (`maxRows`: "optional bound on sends"; non-negative numbers are accepted).
/// A bound of 2^32 or more used to be cut to its low 32 bits in the planner (`as usize` on
/// wasm32): `maxRows: 2 ** 32` sent nothing. It sends every row, as `1e300` or `100` do.
#[wasm_bindgen_test]
async fn s8_flush_with_max_rows_of_2_pow_32_sends_every_row() {
    let db = db_name("flush-options-maxrows-big");
    let a = open(&db, "tab-a").await;
    for i in 0..3 {
        enqueue_update(&a, "alice", &format!("w:{i}"), json!({"i": i})).await;
    }
    let o = flush_opts("alice", "return {type: 'success', receipt: {}};");
    set(&o, "maxRows", &4_294_967_296.0.into());
    let rep = ok(a.flush(o)).await;
    let left = ok(a.rows("alice".into())).await;
    assert_eq!((rep["claimed"].clone(), left.as_array().unwrap().len()), (json!(3), 0), "maxRows 2^32: {rep}");
}

/// SPEC §3 rule 4; api.md (`concurrency`: how many sends a flush keeps in flight, a
/// number). Given as a string (say from a config), it is refused with INVALID_ARGUMENT before
/// anything is claimed or sent — not silently read as the default.
#[wasm_bindgen_test]
async fn s8_flush_with_a_bad_concurrency_is_refused_and_claims_nothing() {
    let db = db_name("flush-options-concurrency");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:0", json!({"i": 0})).await;
    let o = flush_opts("alice", "return {type: 'success', receipt: {}};");
    set(&o, "concurrency", &"8".into());
    let err = settle(a.flush(o)).await.expect_err("a string concurrency is refused");
    let (code, message) = coded(&err);
    assert_eq!(code, "INVALID_ARGUMENT", "{message}");
    assert!(message.contains("concurrency"), "{message}");
    // NaN, Infinity and 0 are mistakes too (as at `open`), not 1 or every row at once.
    for bad in ["NaN", "Infinity", "0"] {
        let o = flush_opts("alice", "return {type: 'success', receipt: {}};");
        set(&o, "concurrency", &expr(bad));
        let err = settle(a.flush(o)).await.expect_err(bad);
        assert_eq!(coded(&err).0, "INVALID_ARGUMENT", "{bad}");
    }
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["state"], "queued", "nothing claimed: {rows}");
    // A number is taken.
    let o = flush_opts("alice", "return {type: 'success', receipt: {}};");
    set(&o, "concurrency", &2.into());
    assert_eq!(ok(a.flush(o)).await["succeeded"], 1);
}
