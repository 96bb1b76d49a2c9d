//! IndexedDB transactions: begun with their durability, committed early, aborted until
//! every write is issued ([`Armed`]: by a failure, a dropped future or a panic), and why one
//! did not commit.

use crate::error::{dom_name, OutboxError};
use js_sys::Array;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbDatabase, IdbTransaction, IdbTransactionMode};

#[wasm_bindgen]
extern "C" {
    /// An `IDBDatabase` seen through the options form of `transaction(stores, mode,
    /// {durability})`: web-sys binds it only behind `web_sys_unstable_apis`.
    pub(super) type DatabaseWithOptions;

    #[wasm_bindgen(method, catch, js_name = transaction)]
    pub(super) fn transaction_with_options(
        this: &DatabaseWithOptions,
        stores: &JsValue,
        mode: &str,
        options: &JsValue,
    ) -> std::result::Result<IdbTransaction, JsValue>;

    /// An `IDBTransaction` seen through `commit()`, which web-sys marks deprecated.
    pub(super) type CommittableTransaction;

    /// Throws (a `TypeError`) in an engine without it, which is then left to commit on its own.
    #[wasm_bindgen(method, catch, js_name = commit)]
    pub(super) fn commit_now(this: &CommittableTransaction) -> std::result::Result<(), JsValue>;
}

/// How hard a commit must be flushed to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `"strict"`: the app's edit must survive a crash right after the call returns.
    Strict,
    /// The browser's default: losing this write in a crash only causes a resend.
    Default,
}

thread_local! {
    /// `{durability: "strict"}`, made once (IndexedDB only reads it).
    static STRICT: JsValue = {
        let opts = js_sys::Object::new();
        crate::js::set(&opts, "durability", &"strict".into());
        opts.into()
    };
}

/// Starts a transaction on `stores`; a strict readwrite one asks for `durability: "strict"`.
pub(super) fn begin(
    db: &IdbDatabase,
    stores: &Array,
    mode: IdbTransactionMode,
    durability: Durability,
) -> std::result::Result<IdbTransaction, JsValue> {
    match (mode, durability) {
        (IdbTransactionMode::Readwrite, Durability::Strict) => STRICT
            .with(|opts| db.unchecked_ref::<DatabaseWithOptions>().transaction_with_options(stores, "readwrite", opts)),
        _ => db.transaction_with_str_sequence_and_mode(stores, mode),
    }
}

/// Why a transaction did not commit. `ConstraintError` is a unique index of an app store
/// that one of the record writes broke (the queue's own rows are written with `put`, under
/// indexes that are not unique): the app's argument, as docs/api.md says; anything else is
/// the database's failure.
pub(super) fn transaction_failed(e: &JsValue) -> OutboxError {
    if dom_name(e).as_deref() == Some("ConstraintError") {
        OutboxError::invalid(
            "a record write broke a unique index of an app store (ConstraintError); nothing was written",
        )
    } else {
        OutboxError::storage("commit", e)
    }
}

thread_local! {
    /// Readwrite transactions with some writes issued and not all: a panic aborts them.
    static ARMED: RefCell<Vec<IdbTransaction>> = const { RefCell::new(Vec::new()) };
}

/// Aborts every armed transaction (`panic::clean_up`: after a panic or a trap).
pub(crate) fn abort_armed() {
    // A panic while the list itself is borrowed leaves it as it is.
    let armed = ARMED.with(|a| a.try_borrow_mut().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default());
    for tx in armed {
        // Fails only for a transaction that has already finished.
        let _ = tx.abort();
    }
}

/// A readwrite transaction that a panic, a failure or a dropped future aborts until
/// [`Armed::disarm`] says every write is issued.
pub(crate) struct Armed(Option<IdbTransaction>);

impl Armed {
    pub(crate) fn new(tx: &IdbTransaction) -> Armed {
        ARMED.with(|a| a.borrow_mut().push(tx.clone()));
        Armed(Some(tx.clone()))
    }

    /// Every write is issued: let the transaction commit.
    pub(crate) fn disarm(mut self) {
        if let Some(tx) = self.0.take() {
            forget(&tx);
        }
    }
}

/// Takes `tx` off the list. A list left borrowed by a trap in the middle of a push stays as
/// it is: a failure to forget must not stop an abort.
fn forget(tx: &IdbTransaction) {
    ARMED.with(|a| {
        if let Ok(mut a) = a.try_borrow_mut() {
            a.retain(|t| t != tx);
        }
    });
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            // Aborted first: nothing after it can keep the half-issued writes from being
            // dropped. Fails only if it already finished: aborted by a failed request, or
            // committed before any write was issued. Either way nothing of this replace was
            // written.
            let _ = tx.abort();
            forget(&tx);
        }
    }
}
