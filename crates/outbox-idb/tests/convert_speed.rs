//! The JS → JSON conversion of 1,000 realistic rows, bodies and outcomes: each must read
//! back exactly as the engine's own `JSON.stringify` writes it (floats to the last bit,
//! non-ASCII text, key order), then the conversion is timed and the figures printed, never
//! asserted (issue 35). The timing is meant for `--release`; its figures only compare one
//! build with another on one machine.
#![cfg(target_arch = "wasm32")]

use outbox_idb::convert::{fields_from_js, from_js, stored_from_js, to_js};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// 1,000 rows as IndexedDB gives them back: a body of a dozen fields, evidence, a claim.
fn rows() -> js_sys::Array {
    let make = "return Array.from({ length: 1000 }, (_, i) => ({
        id: `op-${i}`, owner: 'alice', target: `todo:${i % 50}`, kind: 'update', savedAt: 1700000000000 + i,
        state: 'sending', fingerprint: 'f0e1d2c3b4a59687',
        body: { title: `Buy milk ${i}`, done: i % 2 === 0, price: 12.5 + i, qty: i, tags: ['home', 'shop'],
                note: 'a longer note with some words in it, é and 😀', at: { lat: 48.85 + i / 1e4, lng: 2.35 }, by: null,
                neg: -i, big: 2 ** 60 + i * 4096, tiny: 5e-324 * (i + 1), sum: 0.1 * i + 0.2, text: `line\n\"q\"\\\\ \u{1}\t${i}` },
        claim: { tabId: 'tab-a', expiresAt: 1700000010000, fence: 3 },
        evidence: { attemptCount: 2, lastErrorCode: 'HTTP_503' } }));";
    js("", make).call0(&JsValue::NULL).unwrap().into()
}

fn now() -> f64 {
    js("", "return performance.now();").call0(&JsValue::NULL).unwrap().as_f64().unwrap()
}

/// Milliseconds per 1,000 calls of `f` over `items`, best of twenty passes.
fn time(items: &js_sys::Array, f: impl Fn(&JsValue)) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..20 {
        let start = now();
        for item in items.iter() {
            f(&item);
        }
        best = best.min(now() - start);
    }
    best * 1000.0 / f64::from(items.length())
}

/// Every item converted by `f` and back (`to_js`) is, as JSON text, the item's own.
fn assert_exact(items: &js_sys::Array, f: impl Fn(&JsValue) -> serde_json::Value) {
    let text = |v: &JsValue| js_sys::JSON::stringify(v).unwrap().as_string().unwrap();
    for item in items.iter() {
        assert_eq!(text(&to_js(&f(&item))), text(&item));
    }
}

#[wasm_bindgen_test]
fn conversion_of_1000_rows_bodies_and_outcomes_is_exact_and_timed() {
    let rows = rows();
    let bodies: js_sys::Array = rows.iter().map(|r| get(&r, "body")).collect();
    let outcomes: js_sys::Array = js(
        "",
        "return Array.from({ length: 1000 }, (_, i) => ({ type: 'success', receipt: { id: `s:${i}`, rev: i }, replayed: false }));",
    )
    .call0(&JsValue::NULL)
    .unwrap()
    .into();
    assert_exact(&rows, stored_from_js);
    assert_exact(&bodies, |b| from_js(b, "body").unwrap());
    assert_exact(&outcomes, |o| fields_from_js(o, "outcome").unwrap());
    let stored = time(&rows, |r| drop(stored_from_js(r)));
    let given = time(&bodies, |b| drop(from_js(b, "body").unwrap()));
    let fields = time(&outcomes, |o| drop(fields_from_js(o, "outcome").unwrap()));
    // The floor: the engine's own walk of the same rows into JSON text.
    let stringify = js("rows", "const t = performance.now(); for (let k = 0; k < 20; k++) for (const r of rows) JSON.stringify(r); return (performance.now() - t) / 20;")
        .call1(&JsValue::NULL, &rows)
        .unwrap()
        .as_f64()
        .unwrap();
    console_log!(
        "convert timing (ms per 1,000): stored rows {stored:.2}, bodies {given:.2}, outcomes {fields:.2} \
         (JSON.stringify of the rows: {stringify:.2})"
    );
}
