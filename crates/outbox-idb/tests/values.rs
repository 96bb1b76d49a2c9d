//! Values across the boundary (SPEC §3 rules 2 and 4): what the app gives must be JSON and
//! is refused otherwise, naming where; what other code stored is carried through as stored,
//! whatever it holds; and no value, given or stored, can take the module down.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Promise};

use outbox_idb::convert::to_js;
use outbox_idb::Outbox;
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// The `(code, message)` of a rejected call.
async fn refused(p: Promise) -> (String, String) {
    let err = settle(p).await.expect_err("call fails");
    coded(&err)
}

async fn raw_get(db: &str, id: &str) -> JsValue {
    raw_all(db).await.iter().find(|r| get(r, "id").as_string().as_deref() == Some(id)).unwrap_or(JsValue::UNDEFINED)
}

/// Writes `row` as some other code would: plain IndexedDB, any structured-cloneable value.
async fn raw_put(db: &str, row: &JsValue) {
    let script = "return new Promise((ok, err) => { const r = indexedDB.open(db); r.onerror = () => err(r.error);
        r.onsuccess = () => { const tx = r.result.transaction('outbox', 'readwrite'); tx.objectStore('outbox').put(row);
          tx.oncomplete = () => { r.result.close(); ok(); }; tx.onerror = () => err(tx.error); }; });";
    settle(js("db, row", script).call2(&JsValue::NULL, &db.into(), row).unwrap().unchecked_into()).await.unwrap();
}

/// Non-JSON bodies (a JS expression each) and the path the error must name.
const HOSTILE_BODIES: &[(&str, &str, &str)] = &[
    ("{ at: new Date(5) }", "body.at", "Date"),
    ("{ file: new Blob(['x']) }", "body.file", "Blob"),
    ("{ file: new File(['x'], 'a.txt') }", "body.file", "File"),
    ("{ m: new Map([[1, 2]]) }", "body.m", "Map"),
    ("{ s: new Set([1]) }", "body.s", "Set"),
    ("{ n: 10n }", "body.n", "BigInt"),
    ("{ bytes: new Uint8Array([1, 2]) }", "body.bytes", "Uint8Array"),
    ("{ buf: new ArrayBuffer(4) }", "body.buf", "ArrayBuffer"),
    ("{ f() { return 1; } }", "body.f", "function"),
    ("{ p: new (class Point { constructor() { this.x = 1; } })() }", "body.p", "Point"),
    ("{ x: NaN }", "body.x", "NaN"),
    ("{ x: -Infinity }", "body.x", "Infinity"),
    ("{ x: undefined }", "body.x", "undefined"),
    ("{ list: [1, new Date(0)] }", "body.list[1]", "Date"),
    ("{ a: { 'b c': { at: new Date(0) } } }", "body.a[\"b c\"].at", "Date"),
    ("{ s: 'ab\\uD800' }", "body.s", "surrogate"),
    ("(() => { const o = { a: {} }; o.a.back = o; return o; })()", "body.a.back", "cycle"),
    ("{ k: { $outboxOpaque: 'Date:1' } }", "body.k", "$outboxOpaque"),
    ("{ p: new Proxy({}, { ownKeys() { throw new Error('no keys'); } }) }", "body.p", "cannot be read"),
    ("{ get g() { throw new Error('boom'); } }", "body.g", "cannot be read (boom)"),
];

#[wasm_bindgen_test]
async fn s3_rule4_enqueue_refuses_each_value_json_cannot_hold_naming_its_path() {
    let db = db_name("hostile-enqueue");
    let a = open(&db, "tab-a").await;
    for (body, path, what) in HOSTILE_BODIES {
        let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
        set(&op, "body", &expr(body));
        let (code, message) = refused(a.enqueue(op, JsValue::UNDEFINED)).await;
        assert_eq!(code, "INVALID_ARGUMENT", "{body}: {message}");
        assert!(message.contains(&format!("`{path}`")), "{body}: names the path {path}: {message}");
        assert!(message.contains(what), "{body}: says what it is ({what}): {message}");
    }
    let proxy = expr("new Proxy({}, { ownKeys() { throw new Error('no keys'); } })");
    assert_eq!(refused(a.enqueue(proxy, JsValue::UNDEFINED)).await.0, "INVALID_ARGUMENT", "a hostile operation object");
    assert_eq!(raw_all(&db).await.length(), 0, "nothing was written");
    // Leaving an optional field of the operation `undefined` is fine: it is absent.
    let op = obj(json!({"owner": "alice", "kind": "create", "body": {"a": 1}}));
    set(&op, "target", &JsValue::UNDEFINED);
    set(&op, "revision", &JsValue::UNDEFINED);
    assert_eq!(ok(a.enqueue(op, JsValue::UNDEFINED)).await["state"], "queued");
}

/// A value made by `e` in a fresh same-origin iframe: another realm, with its own
/// `Object.prototype` (as a WebDriver script's arguments have in Firefox).
fn expr_in_iframe(e: &str) -> JsValue {
    let script = format!(
        "const f = document.createElement('iframe'); document.body.appendChild(f);
         return f.contentWindow.eval({});",
        serde_json::to_string(&format!("({e})")).unwrap()
    );
    js("", &script).call0(&JsValue::NULL).unwrap()
}

#[wasm_bindgen_test]
async fn s3_rule4_plain_objects_of_another_realm_are_json() {
    let db = db_name("realm");
    let a = open(&db, "tab-a").await;
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(&op, "body", &expr_in_iframe("{ w: 1, list: [1, { c: 'x' }], inner: { n: null } }"));
    let row = ok(a.enqueue(op, JsValue::UNDEFINED)).await;
    assert_eq!(row["body"], json!({"w": 1, "list": [1, {"c": "x"}], "inner": {"n": null}}));
    // What JSON cannot hold is still refused, whichever realm made it.
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(&op, "body", &expr_in_iframe("{ at: new Date(5) }"));
    let (code, message) = refused(a.enqueue(op, JsValue::UNDEFINED)).await;
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("body.at") && message.contains("Date"), "{message}");
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(&op, "body", &expr_in_iframe("new (class Point { constructor() { this.x = 1; } })()"));
    let (code, message) = refused(a.enqueue(op, JsValue::UNDEFINED)).await;
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("Point"), "{message}");
}

#[wasm_bindgen_test]
async fn a_hostile_body_does_not_poison_the_page() {
    let db = db_name("poison");
    let a = open(&db, "tab-a").await;
    let bodies = [
        "(() => { const o = {}; o.self = o; return o; })()",
        "(() => { let o = {}; for (let i = 0; i < 3000; i++) o = { o }; return o; })()",
        "(() => { let o = []; for (let i = 0; i < 3000; i++) o = [o]; return { o }; })()",
        // Shared (not cyclic) references that double at each level: 2^60 paths.
        "(() => { let o = { leaf: 1 }; for (let i = 0; i < 60; i++) o = { l: o, r: o }; return o; })()",
    ];
    for body in bodies {
        let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
        set(&op, "body", &expr(body));
        let (code, message) = refused(a.enqueue(op, JsValue::UNDEFINED)).await;
        assert_eq!(code, "INVALID_ARGUMENT", "{message}");
    }
    // The same page goes on: this outbox, and a fresh one.
    let row = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1}})),
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(row["body"], json!({"w": 1}));
    let b = open(&db_name("poison-after"), "tab-b").await;
    let row = ok(b.enqueue(
        obj(json!({"owner": "bob", "target": "w:2", "kind": "update", "body": {"w": 2}})),
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(row["state"], "queued");
    assert_eq!(raw_all(&db).await.length(), 1);
}

#[wasm_bindgen_test]
async fn deep_but_allowed_bodies_round_trip() {
    let db = db_name("deep-ok");
    let a = open(&db, "tab-a").await;
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    // 256 levels below the body: the documented limit, accepted.
    set(&op, "body", &expr("(() => { let o = { end: true }; for (let i = 1; i < 256; i++) o = { o }; return o; })()"));
    let row = settle(a.enqueue(op, JsValue::UNDEFINED)).await.unwrap();
    let mut depth = 1;
    let mut cur = get(&row, "body");
    while get(&cur, "o").is_object() {
        cur = get(&cur, "o");
        depth += 1;
    }
    assert_eq!((depth, get(&cur, "end")), (256, JsValue::TRUE));
    let op = obj(json!({"owner": "alice", "target": "w:1", "kind": "update"}));
    set(&op, "body", &expr("(() => { let o = { end: true }; for (let i = 1; i < 257; i++) o = { o }; return o; })()"));
    let (code, message) = refused(a.enqueue(op, JsValue::UNDEFINED)).await;
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("256"), "{message}");
}

/// A blocked update and a blocked delete of `alice`.
async fn blocked_rows(a: &Outbox) -> (String, String) {
    let u = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1}})),
        JsValue::UNDEFINED,
    ))
    .await;
    let d = ok(a.enqueue(obj(json!({"owner": "alice", "target": "w:2", "kind": "delete"})), JsValue::UNDEFINED)).await;
    let rep = ok(a.flush(flush_opts("alice", "return {type: 'permanent', code: 'INVALID'};"))).await;
    assert_eq!(rep["blocked"], 2);
    (u["id"].as_str().unwrap().to_owned(), d["id"].as_str().unwrap().to_owned())
}

#[wasm_bindgen_test]
async fn s7_retry_blocked_checks_its_body_like_enqueue() {
    let db = db_name("retry-body");
    let a = open(&db, "tab-a").await;
    let (update, delete) = blocked_rows(&a).await;
    let before = ok(a.rows("alice".into())).await;
    // Not JSON: refused, naming the path.
    for (body, path, _) in HOSTILE_BODIES {
        let (code, message) =
            refused(a.retry_blocked("alice".into(), update.as_str().into(), expr(body), JsValue::UNDEFINED)).await;
        assert_eq!(code, "INVALID_ARGUMENT", "{body}: {message}");
        assert!(message.contains(&format!("`{path}`")), "{body}: {message}");
    }
    // An update needs a body, as at enqueue: `null` is refused, not taken for "keep it".
    let (code, message) =
        refused(a.retry_blocked("alice".into(), update.as_str().into(), JsValue::NULL, JsValue::UNDEFINED)).await;
    assert_eq!(code, "INVALID_ARGUMENT", "{message}");
    assert!(message.contains("`body`"), "{message}");
    assert_eq!(ok(a.rows("alice".into())).await, before, "nothing was written");
    // A delete's body may be any JSON value, null included, as at enqueue.
    assert_eq!(
        ok(a.retry_blocked("alice".into(), delete.as_str().into(), JsValue::NULL, JsValue::UNDEFINED)).await,
        true
    );
    // Leaving it out keeps the body.
    assert_eq!(
        ok(a.retry_blocked("alice".into(), update.as_str().into(), JsValue::UNDEFINED, JsValue::UNDEFINED)).await,
        true
    );
    let rows = ok(a.rows("alice".into())).await;
    let mut bodies: Vec<(&Value, &Value)> =
        rows.as_array().unwrap().iter().map(|r| (&r["target"], &r["body"])).collect();
    bodies.sort_by_key(|(t, _)| t.to_string());
    assert_eq!(bodies, [(&json!("w:1"), &json!({"w": 1})), (&json!("w:2"), &Value::Null)]);
}

#[wasm_bindgen_test]
async fn s7_a_prepared_successor_that_is_not_json_is_never_sent() {
    let db = db_name("prepare-date");
    let a = open(&db, "tab-a").await;
    let c = ok(a.enqueue(obj(json!({"owner": "alice", "kind": "create", "body": {"name": "x"}})), JsValue::UNDEFINED))
        .await;
    let target = c["target"].as_str().unwrap().to_owned();
    ok(a.claim("alice".into(), c["id"].as_str().unwrap().into())).await;
    let u = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": target, "kind": "update", "body": {"name": "y"}})),
        JsValue::UNDEFINED,
    ))
    .await;
    let sent = Array::new();
    set(&js_sys::global(), "prepareDateSent", &sent);
    let o = flush_opts(
        "alice",
        "globalThis.prepareDateSent.push(op); return {type: 'success', receipt: {serverId: 's:1'}};",
    );
    set(&o, "prepareSuccessor", &js_fn("a", "return {target: 's:1', body: {at: new Date(1)}};"));
    // The create's lease must end before a flush resends it.
    let later = options(&db, "tab-b");
    set(&later, "now", &js_fn("", &format!("return {};", T0 + 20_000.0)));
    let b = Outbox::open_with(later).await.unwrap();
    ok(b.flush(o)).await;
    let sent: Vec<String> = sent.iter().map(|op| get(&op, "id").as_string().unwrap()).collect();
    assert_eq!(sent, [c["id"].as_str().unwrap()], "only the create went out");
    let rows = ok(b.rows("alice".into())).await;
    assert_eq!(rows[0]["id"], u["id"]);
    assert_eq!(rows[0]["state"], "blocked");
    assert_eq!(rows[0]["blockedCode"], "SUCCESSOR_UNPREPARED");
    assert_eq!(rows[0]["body"], json!({"name": "y"}), "the intent is kept as it was");
}

#[wasm_bindgen_test]
async fn s9_a_conflict_answer_that_is_not_json_is_not_stored() {
    let db = db_name("outcome-date");
    let a = open(&db, "tab-a").await;
    let row = ok(a.enqueue(
        obj(json!({"owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1}})),
        JsValue::UNDEFINED,
    ))
    .await;
    let rep = ok(a.flush(flush_opts("alice", "return {type: 'conflict', actualRevision: new Date(3)};"))).await;
    assert_eq!((rep["conflicts"].clone(), rep["deferred"].clone()), (json!(0), json!(1)), "{rep}");
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["id"], row["id"]);
    assert_eq!(rows[0]["evidence"]["lastErrorCode"], "BAD_OUTCOME");
    assert!(rows[0].get("revision").is_none(), "no revision {{}} was stored: {}", rows[0]);
    // The same answer given to `ack` is a coded error.
    let ticket = json!({"tabId": "tab-a", "fence": 1});
    let outcome = expr("{ type: 'conflict', actualRevision: new Date(3) }");
    let (code, message) =
        refused(a.ack("alice".into(), row["id"].as_str().unwrap().into(), obj(ticket), outcome, JsValue::UNDEFINED))
            .await;
    assert_eq!(code, "INVALID_ARGUMENT");
    assert!(message.contains("`outcome.actualRevision`") && message.contains("Date"), "{message}");
}

/// §10: the body is the server's: one JSON cannot hold (a lone surrogate a server's
/// `slice` cut out of an emoji, a Date, deeper than 256 levels) is read as no body and the
/// answer classified by its status. Refused, a success the server had applied failed the
/// send, and the row was sent again after every lease, for ever.
#[wasm_bindgen_test]
fn classify_http_reads_a_body_json_cannot_hold_as_no_body() {
    let classify = |status: u16, body: &str| {
        let out = outbox_idb::classify_http_js(status.into(), JsValue::UNDEFINED, expr(body), T0.into()).unwrap();
        outbox_idb::convert::from_js(&out, "outcome").unwrap()
    };
    let deep = "(() => { let o = {}; for (let i = 0; i < 300; i++) o = { o }; return o; })()";
    for body in ["{ at: new Date(0) }", "{ name: 'x\\uD83D' }", deep] {
        assert_eq!(classify(201, body), json!({"type": "success", "receipt": null, "replayed": false}), "{body}");
    }
    // By its status alone: a bare 412, blocked (never resent without a base).
    let conflict = classify(412, "{ code: 'REVISION_CONFLICT', actualRevision: new Date(0) }");
    assert_eq!((conflict["type"].clone(), conflict["code"].clone()), (json!("permanent"), json!("HTTP_412")));
    assert_eq!(classify(201, "{ id: 7 }"), json!({"type": "success", "receipt": {"id": 7}, "replayed": false}));
}

/// A row as another writer stored it: known fields are JSON, unknown ones hold a Date, a
/// Blob and a nested object with a Date.
fn foreign_row(id: &str, blobs: bool) -> JsValue {
    let row = obj(json!({"id": id, "owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1},
                         "savedAt": T0 as i64 - 1_000, "state": "queued", "meta": {"n": 1}}));
    set(&row, "at", &expr("new Date(1234567)"));
    if blobs {
        set(&row, "file", &expr("new Blob(['hello'], { type: 'text/plain' })"));
    }
    set(&get(&row, "meta"), "when", &expr("new Date(7654321)"));
    set(&row, "bytes", &expr("new Uint8Array([1, 2, 3])"));
    set(&row, "tags", &expr("new Set(['a'])"));
    row
}

/// Whether this engine's IndexedDB stores a `Blob` at all. WebKit refuses one in the
/// ephemeral session WebDriver gives it ("Error preparing Blob/File data to be stored"):
/// other code cannot have stored one there, so its rows carry no Blob. Every other engine
/// must store it, so the Blob case is never dropped silently elsewhere.
async fn blobs_storable() -> bool {
    let script = "return new Promise((ok) => { const r = indexedDB.open(name);
        r.onupgradeneeded = () => r.result.createObjectStore('s');
        r.onsuccess = () => { const tx = r.result.transaction('s', 'readwrite'); tx.objectStore('s').put(new Blob(['x']), 1);
          tx.oncomplete = () => { r.result.close(); ok(true); }; tx.onabort = () => { r.result.close(); ok(false); }; }; });";
    let name = db_name("blob-probe");
    let stored =
        settle(js("name", script).call1(&JsValue::NULL, &name.into()).unwrap().unchecked_into()).await.unwrap();
    let ua = js("", "return navigator.userAgent;").call0(&JsValue::NULL).unwrap().as_string().unwrap();
    let webkit = ua.contains("AppleWebKit") && !ua.contains("Chrome");
    assert!(stored.is_truthy() || webkit, "only WebKit may refuse a Blob: {ua}");
    stored.is_truthy()
}

/// The unknown fields of `foreign_row` are still what they were, as values, not JSON.
fn assert_foreign_fields_kept(row: &JsValue, blobs: bool) {
    let at = get(row, "at");
    assert!(at.is_instance_of::<js_sys::Date>(), "`at` is still a Date: {at:?}");
    assert_eq!(at.unchecked_ref::<js_sys::Date>().get_time(), 1_234_567.0);
    if blobs {
        let file = get(row, "file");
        let tag = js("v", "return Object.prototype.toString.call(v);").call1(&JsValue::NULL, &file).unwrap();
        assert_eq!(tag.as_string().as_deref(), Some("[object Blob]"), "`file` is still a Blob");
        assert_eq!(
            (get(&file, "size").as_f64(), get(&file, "type").as_string()),
            (Some(5.0), Some("text/plain".into()))
        );
    }
    let when = get(&get(row, "meta"), "when");
    assert!(when.is_instance_of::<js_sys::Date>(), "`meta.when` is still a Date");
    assert_eq!(when.unchecked_ref::<js_sys::Date>().get_time(), 7_654_321.0);
    assert_eq!(get(&get(row, "meta"), "n").as_f64(), Some(1.0));
    let bytes = get(row, "bytes");
    assert!(bytes.is_instance_of::<js_sys::Uint8Array>());
    assert_eq!(bytes.unchecked_ref::<js_sys::Uint8Array>().to_vec(), [1, 2, 3]);
    assert!(get(row, "tags").is_instance_of::<js_sys::Set>());
}

#[wasm_bindgen_test]
async fn s3_rule2_unknown_fields_holding_dates_and_blobs_survive_claim_and_answer() {
    let db = db_name("foreign-ack");
    let a = open(&db, "tab-a").await;
    let blobs = blobs_storable().await;
    raw_put(&db, &foreign_row("f1", blobs)).await;
    let ticket = ok(a.claim("alice".into(), "f1".into())).await;
    assert_eq!(ticket["fence"], 1, "the row decodes and is claimed");
    let claimed = raw_get(&db, "f1").await;
    assert_eq!(get(&claimed, "state").as_string().as_deref(), Some("sending"));
    assert_foreign_fields_kept(&claimed, blobs);
    let transient = obj(json!({"type": "transient", "code": "HTTP_503"}));
    assert_eq!(ok(a.ack("alice".into(), "f1".into(), obj(ticket), transient, JsValue::UNDEFINED)).await, "applied");
    let answered = raw_get(&db, "f1").await;
    assert_eq!(get(&answered, "state").as_string().as_deref(), Some("queued"));
    assert_foreign_fields_kept(&answered, blobs);
    // `rows` hands them to the app as they are stored.
    let rows: Array = settle(a.rows("alice".into())).await.unwrap().unchecked_into();
    assert_foreign_fields_kept(&rows.get(0), blobs);
}

#[wasm_bindgen_test]
async fn s3_rule2_unknown_fields_survive_a_flush_and_a_reissue() {
    let db = db_name("foreign-flush");
    let a = open(&db, "tab-a").await;
    let blobs = blobs_storable().await;
    raw_put(&db, &foreign_row("f1", blobs)).await;
    let rep = ok(a.flush(flush_opts("alice", "return {type: 'transient', code: 'HTTP_503'};"))).await;
    assert_eq!(rep["claimed"], 1);
    let row = raw_get(&db, "f1").await;
    assert_eq!(get(&get(&row, "evidence"), "lastErrorCode").as_string().as_deref(), Some("HTTP_503"));
    assert_foreign_fields_kept(&row, blobs);
    // Blocked, then re-issued under a new id (SPEC §7 keeps unknown fields).
    let later = options(&db, "tab-b");
    set(&later, "now", &js_fn("", &format!("return {};", T0 + 600_000.0)));
    let b = Outbox::open_with(later).await.unwrap();
    let rep = ok(b.flush(flush_opts("alice", "return {type: 'permanent', code: 'INVALID'};"))).await;
    assert_eq!(rep["blocked"], 1);
    assert_foreign_fields_kept(&raw_get(&db, "f1").await, blobs);
    assert_eq!(ok(b.retry_blocked("alice".into(), "f1".into(), JsValue::UNDEFINED, JsValue::UNDEFINED)).await, true);
    let all = raw_all(&db).await;
    assert_eq!(all.length(), 1);
    let fresh = all.get(0);
    assert_ne!(get(&fresh, "id").as_string().as_deref(), Some("f1"), "a new operation id");
    assert_foreign_fields_kept(&fresh, blobs);
}

/// Two blocked rows of one record hold `Set`s of one size (markers alike but for the row
/// they were read in): each re-issued row gets its own row's `Set`, not the other's.
#[wasm_bindgen_test]
async fn s3_rule2_a_reissued_row_keeps_its_own_unknown_values_not_another_rows_alike() {
    let db = db_name("foreign-reissue-alike");
    let a = open(&db, "tab-a").await;
    for (id, n, tag) in [("a", 1, "mine"), ("b", 2, "other")] {
        let row = obj(json!({"id": id, "owner": "alice", "target": "w:1", "kind": "update", "body": {"n": n},
                             "savedAt": n, "state": "blocked", "blockedCode": "INVALID"}));
        set(&row, "tags", &expr(&format!("new Set(['{tag}'])")));
        set(&row, "meta", &expr(&format!("new Map([['by', '{tag}']])")));
        raw_put(&db, &row).await;
    }
    let fresh_tags = |all: &Array, not: &[&str]| -> Vec<String> {
        all.iter()
            .filter(|r| !not.contains(&get(r, "id").as_string().unwrap().as_str()))
            .map(|r| {
                let both = "return [...row.tags].join() + '/' + row.meta.get('by');";
                js("row", both).call1(&JsValue::NULL, &r).unwrap().as_string().unwrap()
            })
            .collect()
    };
    assert_eq!(ok(a.retry_blocked("alice".into(), "a".into(), JsValue::UNDEFINED, JsValue::UNDEFINED)).await, true);
    assert_eq!(fresh_tags(&raw_all(&db).await, &["b"]), vec!["mine/mine".to_owned()]);
    assert_eq!(ok(a.retry_blocked("alice".into(), "b".into(), JsValue::UNDEFINED, JsValue::UNDEFINED)).await, true);
    let mut both = fresh_tags(&raw_all(&db).await, &[]);
    both.sort();
    assert_eq!(both, vec!["mine/mine".to_owned(), "other/other".to_owned()]);
}

#[wasm_bindgen_test]
async fn s3_rule2_cyclic_and_very_deep_unknown_fields_survive() {
    let db = db_name("foreign-cycle");
    let a = open(&db, "tab-a").await;
    let row = obj(json!({"id": "c1", "owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1},
                         "savedAt": 1, "state": "queued"}));
    set(&row, "loop", &expr("(() => { const o = { name: 'loop' }; o.self = o; return o; })()"));
    // 1000 levels: past what this version reads as JSON; Chromium's IndexedDB will not
    // store much deeper (its page dies at 3000).
    set(&row, "deep", &expr("(() => { let o = { end: 1 }; for (let i = 0; i < 1000; i++) o = { o }; return o; })()"));
    raw_put(&db, &row).await;
    let rep = ok(a.flush(flush_opts("alice", "return {type: 'transient', code: 'HTTP_503'};"))).await;
    assert_eq!(rep["claimed"], 1);
    let stored = raw_get(&db, "c1").await;
    let looped = get(&stored, "loop");
    assert!(get(&looped, "self") == looped, "the cycle is the same cycle");
    let mut cur = get(&stored, "deep");
    for _ in 0..1000 {
        cur = get(&cur, "o");
    }
    assert_eq!(get(&cur, "end").as_f64(), Some(1.0), "all 1000 levels kept");
    // The page is fine afterwards.
    assert_eq!(
        ok(a.enqueue(
            obj(json!({"owner": "alice", "target": "w:2", "kind": "update", "body": {}})),
            JsValue::UNDEFINED
        ))
        .await["state"],
        "queued"
    );
}

#[wasm_bindgen_test]
async fn s3_rule3_a_known_field_json_cannot_hold_makes_the_row_undecodable_and_untouched() {
    let db = db_name("foreign-body");
    let a = open(&db, "tab-a").await;
    let row = obj(json!({"id": "d1", "owner": "alice", "target": "w:1", "kind": "update", "body": {"w": 1},
                         "savedAt": 1, "state": "queued"}));
    set(&get(&row, "body"), "at", &expr("new Date(42)"));
    raw_put(&db, &row).await;
    let rep = ok(a.flush(flush_opts("alice", "return {type: 'success', receipt: {}};"))).await;
    assert_eq!(rep["claimed"], 0, "never sent: {rep}");
    let stored = raw_get(&db, "d1").await;
    assert_eq!(get(&stored, "state").as_string().as_deref(), Some("queued"));
    assert!(get(&get(&stored, "body"), "at").is_instance_of::<js_sys::Date>(), "left exactly as it is");
    let listed: Array = settle(a.rows("alice".into())).await.unwrap().unchecked_into();
    let entry = listed.get(0);
    assert_eq!(get(&entry, "undecodable"), JsValue::TRUE);
    let error = get(&entry, "error").as_string().unwrap();
    assert!(error.contains("`body.at`") && error.contains("Date"), "{error}");
    let raw = get(&entry, "raw");
    assert!(get(&get(&raw, "body"), "at").is_instance_of::<js_sys::Date>(), "raw is the stored value");
    let m = ok(a.metrics("alice".into())).await;
    assert_eq!((m["undecodable"].clone(), m["total"].clone()), (json!(1), json!(0)));
    assert_eq!(ok(a.discard("alice".into(), "d1".into(), JsValue::UNDEFINED)).await, true);
    assert_eq!(raw_all(&db).await.length(), 0);
}

#[wasm_bindgen_test]
async fn pure_functions_take_rows_as_rows_returns_them() {
    let db = db_name("foreign-pure");
    let a = open(&db, "tab-a").await;
    let blobs = blobs_storable().await;
    raw_put(&db, &foreign_row("f1", blobs)).await;
    let rows = settle(a.rows("alice".into())).await.unwrap();
    let picked: Array =
        outbox_idb::select_sendable_js(rows.clone(), "tab-a".into(), T0.into(), JsValue::UNDEFINED, JsValue::UNDEFINED)
            .unwrap()
            .unchecked_into();
    assert_eq!(picked.length(), 1);
    assert_foreign_fields_kept(&picked.get(0), blobs);
    let row = rows.unchecked_ref::<Array>().get(0);
    assert!(!outbox_idb::is_row_in_flight_js(row, T0.into(), JsValue::UNDEFINED).unwrap());
}

#[wasm_bindgen_test]
async fn replace_plans_from_the_rows_it_reads_inside_its_transaction() {
    use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
    use outbox_idb::idb::{Durability, Store};
    let store = Store::open(&db_name("increment")).await.unwrap();
    let row = json!({"id": "r1", "owner": "o", "target": "t", "kind": "update", "body": {"n": 0}, "savedAt": 1, "state": "queued"});
    store
        .transact(&[], Durability::Default, |_| Some(ReplacePlan { puts: vec![row], ..Default::default() }))
        .await
        .unwrap();
    let scope = vec![Scope::target("o", "t")];
    // Eight increments at once, each planned from the row as its own transaction reads it:
    // each commits, and none is lost (a store that planned on an earlier read would lose them).
    let bumps = (0..8).map(|_| {
        let (store, scope) = (store.clone(), scope.clone());
        async move {
            store
                .transact(&scope, Durability::Default, |current| {
                    let mut next = current.first()?.clone();
                    next["body"]["n"] = json!(next["body"]["n"].as_i64()? + 1);
                    Some(ReplacePlan {
                        scopes: scope.clone(),
                        expected: current.to_vec(),
                        deletes: vec![],
                        puts: vec![next],
                        ..Default::default()
                    })
                })
                .await
                .unwrap()
        }
    });
    let results = futures_util::future::join_all(bumps).await;
    assert!(results.iter().all(|r| *r == Some(ReplaceOutcome::Committed)), "{results:?}");
    assert_eq!(store.read(&scope).await.unwrap()[0]["body"]["n"], 8);
}

/// What the planner sees of a stored Date is a marker naming its time, written as Rust
/// always wrote it (the digits of a whole number): a stored row reads the same across
/// versions, and two Dates that differ never read as the same value.
#[wasm_bindgen_test]
fn a_stored_date_reads_as_a_marker_with_its_time_in_whole_digits() {
    let stored = outbox_idb::convert::stored_from_js(&expr(
        "{ a: new Date(1234567), b: new Date(8.64e15), c: new Date(-5), d: new Date(NaN) }",
    ));
    let marker = |k: &str| stored[k]["$outboxOpaque"].clone();
    assert_eq!(marker("a"), "Date:1234567");
    assert_eq!(marker("b"), "Date:8640000000000000");
    assert_eq!(marker("c"), "Date:-5");
    assert_eq!(marker("d"), "Date:NaN");
}

#[wasm_bindgen_test]
async fn s7_retry_blocked_takes_any_json_body_enqueue_takes() {
    // A JSON Patch, a string, a number: an update's body need not be an object (§3), and a
    // blocked one is corrected the same way (before: only objects, unlike enqueue).
    for (i, body) in [json!([{"op": "replace", "path": "/w", "value": 2}]), json!("text"), json!(3)].iter().enumerate()
    {
        let db = db_name(&format!("retry-any-body-{i}"));
        let a = open(&db, "tab-a").await;
        let (update, _) = blocked_rows(&a).await;
        assert_eq!(
            ok(a.retry_blocked("alice".into(), update.as_str().into(), to_js(body), JsValue::UNDEFINED)).await,
            true
        );
        let rows = ok(a.rows("alice".into())).await;
        let row = rows.as_array().unwrap().iter().find(|r| r["target"] == "w:1").unwrap();
        assert_eq!((&row["body"], &row["state"]), (body, &json!("queued")), "{rows}");
        assert_ne!(row["id"], json!(update), "re-issued under a new id");
    }
}

/// §10: `classifyHttp` of a `Retry-After` too long to count keeps the longest delay a JS
/// number holds exactly, so `flush` reads it back as an Outcome: the row keeps its 503 and
/// its floor (it used to be refused as `BAD_OUTCOME`, and retried after the plain backoff).
#[wasm_bindgen_test]
async fn a_huge_retry_after_from_classify_http_is_an_outcome_flush_keeps() {
    let db = db_name("values-retry-after");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "alice", "w:1", json!({"w": 1})).await;
    let headers = obj(json!({"Retry-After": "99999999999999999999"}));
    let outcome = outbox_idb::classify_http_js(503.into(), headers, JsValue::NULL, T0.into()).unwrap();
    set(&js_sys::global(), "valuesOutcome503", &outcome);
    ok(a.flush(flush_opts("alice", "return globalThis.valuesOutcome503;"))).await;
    let rows = ok(a.rows("alice".into())).await;
    assert_eq!(rows[0]["evidence"]["lastErrorCode"], "HTTP_503", "{rows}");
    assert!(rows[0]["nextAttemptAt"].as_f64().unwrap_or(0.0) > T0 + 1e15, "{rows}");
}

/// §10 (`retryAfterMs` is a floor under the next attempt): an app-built answer whose
/// `retryAfterMs` is a fraction or larger than a JS number counts exactly is still a
/// transient answer with its floor — rounded up, at most 2^53 − 1 ms — not `BAD_OUTCOME`
/// (which lost the floor and retried after the plain backoff).
#[wasm_bindgen_test]
async fn an_app_retry_after_ms_with_a_fraction_or_too_large_keeps_its_floor() {
    let db = db_name("values-retry-after-app");
    let a = open(&db, "tab-a").await;
    for (target, given) in [("w:frac", "1500.25"), ("w:huge", "1e300")] {
        enqueue_update(&a, "alice", target, json!({"w": 1})).await;
        let send = format!("return {{type: 'transient', code: 'SLOW', retryAfterMs: {given}}};");
        ok(a.flush(flush_opts("alice", &send))).await;
    }
    let rows = ok(a.rows("alice".into())).await;
    let row = |t: &str| rows.as_array().unwrap().iter().find(|r| r["target"] == t).unwrap().clone();
    for t in ["w:frac", "w:huge"] {
        assert_eq!(row(t)["evidence"]["lastErrorCode"], "SLOW", "{rows}");
    }
    // The first retry's jittered delay is under 1 s: the floor decides, 1,501 ms after the answer.
    let answered = row("w:frac")["deferredAt"].as_f64().unwrap_or(0.0);
    assert_eq!(row("w:frac")["nextAttemptAt"].as_f64(), Some(answered + 1501.0), "{rows}");
    // 2^53 − 1 ms after the answer (about 9.007e15), not i64::MAX (9.2e18).
    let next = row("w:huge")["nextAttemptAt"].as_f64().unwrap_or(0.0);
    assert!((9.0e15..9.1e15).contains(&(next - answered)), "{rows}");
}

/// §15: `classifyHttp` gives every kind of outcome as `JSON.parse` made it of serde's text
/// before (its keys in that order too): the planner's outcome, written by serde, and the
/// object, written by `JSON.stringify`, are the same text.
#[wasm_bindgen_test]
fn classify_http_gives_each_outcome_as_serde_wrote_it() {
    let cases = [
        (201, json!({}), json!({"id": 7, "a": [1, 2.5, null], "z": "x"})),
        (200, json!({"Idempotent-Replayed": "true"}), json!(null)),
        (503, json!({"Retry-After": "120"}), json!(null)),
        (503, json!({"Retry-After": "99999999999999999999"}), json!(null)),
        (0, json!({}), json!(null)),
        (401, json!({}), json!(null)),
        (403, json!({}), json!(null)),
        (418, json!({}), json!(null)),
        (412, json!({}), json!({"code": "REVISION_CONFLICT", "actualRevision": "r9"})),
        (412, json!({}), json!({"code": "REVISION_CONFLICT", "actualRevision": null})),
    ];
    for (status, headers, body) in cases {
        let pairs: Vec<(String, String)> =
            headers.as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())).collect();
        let want = outbox_core::classify::classify_http(status, &pairs, &body, outbox_core::Millis(T0 as i64));
        let out = outbox_idb::classify_http_js(status.into(), obj(headers), to_js(&body), T0.into()).unwrap();
        let text = String::from(js_sys::JSON::stringify(&out).unwrap());
        assert_eq!(text, serde_json::to_string(&want).unwrap(), "{status} {body}");
    }
}
