//! Owner and row id arguments are taken exactly (§11): a string with a lone surrogate is
//! refused with INVALID_ARGUMENT. Converted lossily it became another string (U+FFFD in
//! the surrogate's place), and `purgeOwner` or `flush` then acted on that other owner's
//! rows (found by an attack on the binding, 2026-12-03).
#![cfg(target_arch = "wasm32")]

use js_sys::Array;
use serde_json::json;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

mod common;

use common::*;

wasm_bindgen_test_configure!(run_in_browser);

/// SPEC §3 rule 4 (bad input rejected, nothing written), §11 ("every read, claim and delete
/// is scoped by owner"; "purge an owner's rows"). `enqueue` refuses the owner `"x\uD800"`
/// (a string with an unpaired surrogate) with INVALID_ARGUMENT, and so does `purgeOwner`, which
/// used to resolve 1 and delete the rows of the different owner `"x\uFFFD"`.
#[wasm_bindgen_test]
async fn s11_purge_owner_with_a_lone_surrogate_is_refused_and_deletes_nothing() {
    let db = db_name("owner-strings-purge");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "x\u{FFFD}", "w:1", json!({"w": 1})).await;
    let lone = expr("'x\\uD800'");
    let refused = settle(a.enqueue(
        {
            let op = obj(json!({"target": "w:1", "kind": "update", "body": {"w": 2}}));
            set(&op, "owner", &lone);
            op
        },
        JsValue::UNDEFINED,
    ))
    .await;
    assert_eq!(coded(&refused.expect_err("enqueue refuses the owner")).0, "INVALID_ARGUMENT");
    let purged = settle(a.purge_owner(lone)).await;
    let left = raw_all(&db).await.length();
    assert!(
        purged.as_ref().is_err_and(|e| coded(e).0 == "INVALID_ARGUMENT") && left == 1,
        "purgeOwner('x\\uD800') gave {purged:?} and left {left} row(s) of owner 'x\\uFFFD'"
    );
}

/// SPEC §11 ("A flush runs for one owner and only reads, claims and deletes that owner's
/// rows"; "Logging out never sends one account's rows with another account's session").
/// `flush({owner: "x\uD800"})` is refused; it used to claim, send (with the caller's
/// session) and delete the row of owner `"x\uFFFD"`.
#[wasm_bindgen_test]
async fn s11_flush_with_a_lone_surrogate_owner_is_refused_and_sends_nothing() {
    let db = db_name("owner-strings-flush");
    let a = open(&db, "tab-a").await;
    enqueue_update(&a, "x\u{FFFD}", "w:1", json!({"w": 1})).await;
    let sent = Array::new();
    set(&js_sys::global(), "ownerStringsSent", &sent);
    let o = flush_opts("unused", "globalThis.ownerStringsSent.push(op.owner); return {type: 'success', receipt: {}};");
    set(&o, "owner", &expr("'x\\uD800'"));
    let r = settle(a.flush(o)).await;
    let left = raw_all(&db).await.length();
    assert!(
        sent.length() == 0 && left == 1,
        "a flush for 'x\\uD800' ({}) sent {} row(s) of owner 'x\\uFFFD'; {left} left",
        if r.is_ok() { "resolved" } else { "rejected" },
        sent.length()
    );
}

// ---------------------------------------------------------------------------------------
// (a) Flush options that are not numbers are silently ignored (at `open`, the same
// mistakes are refused with INVALID_ARGUMENT).
// ---------------------------------------------------------------------------------------

/// §5 (a claim names its tab), §15 (`Outbox.open` options): `tabId` and `dbName` with a
/// lone surrogate are refused too. Converted lossily, the tabs `"A\uD800"` and `"A\uDC00"`
/// were one tab (each would take the other's claims for its own), and two database names
/// one database. `selectSendable`'s `tabId` is read the same way.
#[wasm_bindgen_test]
async fn s5_tab_ids_and_database_names_with_a_lone_surrogate_are_refused() {
    for (key, value) in [("tabId", "A\\uD800"), ("dbName", "outbox-\\uDC00")] {
        let o = options(&db_name("owner-strings-tab"), "tab-a");
        set(&o, key, &expr(&format!("'{value}'")));
        let err: JsValue =
            outbox_idb::Outbox::open_with(o).await.err().unwrap_or_else(|| panic!("{key} {value} opened")).into();
        let (code, message) = coded(&err);
        assert_eq!(code, "INVALID_ARGUMENT", "{key}: {message}");
        assert!(message.contains(key), "{message}");
    }
    let err = outbox_idb::select_sendable_js(
        Array::new().into(),
        expr("'A\\uD800'"),
        T0.into(),
        JsValue::UNDEFINED,
        JsValue::UNDEFINED,
    )
    .expect_err("refused");
    assert_eq!(coded(&err).0, "INVALID_ARGUMENT");
}
