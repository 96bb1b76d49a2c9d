//! `undecodable()` (SPEC §3 rule 3) over stores another writer filled directly: every
//! undecodable row is reported — whatever makes it undecodable — and left as stored, and
//! nothing the decoder accepts is reported. The oracle is the decoder itself over the whole
//! store, so any faster way of finding these rows must give the same answer.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise};
use outbox_core::codec::Stored;
use outbox_idb::idb::Store;
use serde_json::Value;
use std::collections::BTreeSet;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Opens `name` (at `version` when given, creating a bare `outbox` store if it is new),
/// puts the values `make()` returns (JS source of a function) and closes.
async fn put_raw(name: &str, version: Option<u32>, make: &str) {
    let script = format!(
        "return new Promise((ok, err) => {{
            const r = version ? indexedDB.open(name, version) : indexedDB.open(name);
            r.onupgradeneeded = () => {{
                if (!r.result.objectStoreNames.contains('outbox')) r.result.createObjectStore('outbox', {{ keyPath: 'id' }});
            }};
            r.onerror = () => err(r.error);
            r.onsuccess = () => {{
                const db = r.result;
                const tx = db.transaction('outbox', 'readwrite');
                for (const v of ({make})()) tx.objectStore('outbox').put(v);
                tx.oncomplete = () => {{ db.close(); ok(); }};
                tx.onerror = () => {{ db.close(); err(tx.error); }};
            }};
        }});"
    );
    let v = version.map_or(JsValue::UNDEFINED, JsValue::from);
    let p: Promise = js("name, version", &script).call2(&JsValue::NULL, &name.into(), &v).unwrap().unchecked_into();
    settle(p).await.expect("raw put");
}

/// The ids of the values the decoder refuses (`String(id)` in JS for a key that is not a
/// string), over the whole store.
fn oracle(all: &[Value]) -> BTreeSet<String> {
    all.iter()
        .filter(|v| matches!(Stored::from_value(v), Stored::Undecodable(_)))
        .map(|v| match &v["id"] {
            Value::String(s) => s.clone(),
            Value::Array(a) => {
                a.iter().map(|x| x.to_string().trim_matches('"').to_owned()).collect::<Vec<_>>().join(",")
            }
            other => other.to_string(),
        })
        .collect()
}

/// The ids `undecodable()` reports (`String(id ?? raw.id)`).
async fn reported(a: &outbox_idb::Outbox) -> BTreeSet<String> {
    let list = settle(a.undecodable()).await.expect("undecodable()");
    let ids: Array = js("l", "return l.map((u) => String(u.id ?? u.raw.id));")
        .call1(&JsValue::NULL, &list)
        .unwrap()
        .unchecked_into();
    ids.iter().map(|s| s.as_string().unwrap()).collect()
}

/// 150 decodable rows of several owners, some the cheap check cannot clear (a claim,
/// evidence, an emoji, an unknown object field), without fingerprints, as another writer
/// would put them.
const GOOD: &str = "() => Array.from({ length: 150 }, (_, i) => {
    const r = { id: `good-${i}`, owner: `user-${i % 7}`, target: `w:${i}`, kind: ['create', 'update', 'delete'][i % 3],
                body: { n: i, note: 'ok' }, savedAt: 1000 + i, state: ['queued', 'sending', 'held', 'blocked'][i % 4] };
    if (i % 10 === 1) r.claim = { tabId: 'tab-z', expiresAt: 5000, fence: 2 };
    if (i % 10 === 2) r.evidence = { attemptCount: 1, lastErrorCode: 'x' };
    if (i % 10 === 3) r.revision = i % 2 ? 7 : 'etag-1';
    if (i % 10 === 4) r.body = { emoji: '\\u{1F600}' };
    if (i % 10 === 5) r.future = { nested: [1, 2] };
    if (i % 10 === 6) r.noMerge = true;
    if (i % 10 === 7) r.sentAt = 12.5;
    if (i % 10 === 8) { r.fingerprint = 'f'; r.writer = { bundle: 'b', at: 1 }; r.unknownDate = new Date(0); }
    return r;
})";

/// One of each way to be undecodable, among the good rows.
const BAD: &str = "() => {
    const b = (id, patch) => { const r = { id, owner: 'user-1', target: 'w:bad', kind: 'update', body: { n: 1 },
                                           savedAt: 5, state: 'queued', ...patch };
                                for (const [k, v] of Object.entries(patch)) if (v === '<delete>') delete r[k];
                                return r; };
    const deep = {}; let d = deep; for (let i = 0; i < 300; i++) { d.x = {}; d = d.x; }
    const cyc = { a: 1 }; cyc.self = cyc;
    return [
        b('unknown-kind', { kind: 'upsert' }), b('kind-number', { kind: 42 }), b('unknown-state', { state: 'flying' }),
        b('owner-number', { owner: 42 }), b('no-owner', { owner: '<delete>' }), b('owner-undefined', { owner: undefined }),
        b('owner-object', { owner: { id: 'x' } }), b('no-target', { target: '<delete>' }), b('no-body', { body: '<delete>' }),
        b('body-undefined', { body: undefined }), b('savedAt-string', { savedAt: 'yesterday' }),
        b('savedAt-huge', { savedAt: 1e300 }), b('savedAt-nan', { savedAt: NaN }), b('savedAt-date', { savedAt: new Date(5) }),
        { ...b('x', {}), id: 7 }, { ...b('x', {}), id: ['a', 1] },
        b('body-date', { body: { at: new Date(0) } }), b('body-bytes', { body: new Uint8Array(4) }),
        b('sentAt-date', { sentAt: new Date(0) }), b('body-surrogate', { body: { s: '\\uD800' } }),
        b('body-bigint', { body: { n: 1n } }), b('revision-object', { revision: { v: 1 } }), b('revision-nan', { revision: NaN }),
        b('claim-truncated', { state: 'sending', claim: { tabId: 'tab-z' } }), b('evidence-negative', { evidence: { attemptCount: -1 } }),
        b('noMerge-string', { noMerge: 'yes' }), b('body-marker', { body: { $outboxOpaque: 'Date:1' } }),
        b('body-deep', { body: deep }), b('body-cycle', { body: cyc }), b('body-map', { body: new Map([[1, 2]]) }),
    ];
}";

fn expected_bad() -> BTreeSet<String> {
    [
        "unknown-kind",
        "kind-number",
        "unknown-state",
        "owner-number",
        "no-owner",
        "owner-undefined",
        "owner-object",
        "no-target",
        "no-body",
        "body-undefined",
        "savedAt-string",
        "savedAt-huge",
        "savedAt-nan",
        "savedAt-date",
        "7",
        "a,1",
        "body-date",
        "body-bytes",
        "sentAt-date",
        "body-surrogate",
        "body-bigint",
        "revision-object",
        "revision-nan",
        "claim-truncated",
        "evidence-negative",
        "noMerge-string",
        "body-marker",
        "body-deep",
        "body-cycle",
        "body-map",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

async fn assert_reports_every_bad_row(db: &str) {
    let a = open(db, "tab-a").await;
    let store = Store::open(db).await.unwrap();
    let before = store.read_all().await.unwrap();
    assert_eq!(oracle(&before), expected_bad(), "the decoder refuses exactly the bad rows");
    assert_eq!(reported(&a).await, expected_bad());
    assert_eq!(store.read_all().await.unwrap(), before, "nothing was modified");
    let m = ok(a.metrics(JsValue::UNDEFINED)).await;
    assert_eq!(m["undecodable"], expected_bad().len());
}

/// Another writer puts the good rows and then the bad ones into `db` (at `version`, when
/// given); every bad row is reported, nothing is changed.
async fn reported_among_good_ones(db: &str, version: Option<u32>) {
    put_raw(db, version, GOOD).await;
    put_raw(db, version, BAD).await;
    assert_reports_every_bad_row(db).await;
}

#[wasm_bindgen_test]
async fn every_kind_of_undecodable_row_another_writer_puts_among_150_good_ones_is_reported_and_untouched() {
    let db = db_name("undec-many");
    drop(open(&db, "tab-a").await);
    reported_among_good_ones(&db, None).await;
}

#[wasm_bindgen_test]
async fn bad_rows_already_in_a_version_1_database_are_reported_after_the_upgrade() {
    // Version 1 had the store only; opening upgrades it to this version's schema.
    reported_among_good_ones(&db_name("undec-upgrade"), Some(1)).await;
}

#[wasm_bindgen_test]
async fn bad_rows_in_a_database_a_newer_version_upgraded_without_our_indexes_are_reported() {
    reported_among_good_ones(&db_name("undec-newer"), Some(10)).await;
}

#[wasm_bindgen_test]
async fn what_undecodable_reports_is_exactly_what_the_decoder_refuses_over_a_grid_of_odd_values() {
    // Every field of a good row replaced by each odd value (or deleted): what undecodable()
    // reports must be exactly what the decoder refuses, row for row.
    let db = db_name("undec-grid");
    drop(open(&db, "tab-a").await);
    let grid = "() => {
        const fields = ['owner', 'target', 'kind', 'state', 'savedAt', 'body', 'revision', 'claim', 'evidence', 'noMerge',
                        'sentAt', 'nextAttemptAt', 'blockedCode', 'fingerprint', 'writer', 'conflict', 'successorOf', 'future'];
        const odd = () => ['<delete>', undefined, null, 0, -0, 1.5, -1, 2 ** 64, NaN, Infinity, -Infinity, '', 'x', 'create',
                     'queued', '\\u{1F600}', '\\uDC00', true, false, [], [1, [2]], [1, , 3], {}, { a: undefined }, { a: [] },
                     new Date(0), new Uint8Array(1), new ArrayBuffer(2), 1n, { $outboxOpaque: 'x' }, new String('s'),
                     { tabId: 't', expiresAt: 5, fence: 1 }, { tabId: 't' }, { attemptCount: 2 }, { attemptCount: 1.5 },
                     { bundle: 'b', at: 1 }, /re/, new Set([1])];
        const out = [];
        for (const f of fields) odd().forEach((v, i) => {
            const r = { id: `m-${f}-${i}`, owner: 'o', target: 't', kind: 'update', body: { n: 1 }, savedAt: 5, state: 'queued' };
            if (v === '<delete>') delete r[f]; else r[f] = v;
            out.push(r);
        });
        return out;
    }";
    put_raw(&db, None, grid).await;
    let a = open(&db, "tab-a").await;
    let store = Store::open(&db).await.unwrap();
    let all = store.read_all().await.unwrap();
    let refused = oracle(&all);
    assert!(refused.len() > 100 && refused.len() < all.len(), "a grid of both: {} of {}", refused.len(), all.len());
    assert_eq!(reported(&a).await, refused);
}
