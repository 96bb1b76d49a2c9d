//! The outbox store over one IndexedDB connection: opening it, its transactions (reopened
//! once when another tab's upgrade closed the connection), and scoped reads. Its
//! **replace** (SPEC §4), the only write of the queue, is in [`super::replace`].

use super::app_schema::AppSchema;
use super::connection::Connection;
use super::reads::{await_reads, issue_reads, object_store, owner_range, values};
use super::records::{self, AppStores};
use super::request::request;
use super::schema::{BY_OWNER, BY_OWNER_SAVED_AT, DEFAULT_OPEN_TIMEOUT_MS, STORE};
use super::transaction::begin;
pub use super::transaction::Durability;
use crate::error::{dom_name, OutboxError, Result};
use js_sys::Array;
use outbox_core::Scope;
use serde_json::Value;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbObjectStore, IdbRequest, IdbTransaction, IdbTransactionMode};

/// One database of one app, shared by the tabs of an origin.
pub struct Store {
    name: String,
    conn: Rc<Connection>,
}

impl Store {
    /// Opens `name` now (so that a bad name or a refused database fails at `open`), waiting
    /// at most [`DEFAULT_OPEN_TIMEOUT_MS`] for other tabs; no app stores. The tests' store;
    /// an outbox opens its own with [`Store::new_app`] and [`Store::connect`].
    ///
    /// # Errors
    /// `BLOCKED`, `STORAGE`, `QUOTA` when the database cannot be opened.
    pub async fn open(name: &str) -> Result<Rc<Store>> {
        let store = Store::new_app(name, DEFAULT_OPEN_TIMEOUT_MS, None);
        store.connect().await?;
        Ok(store)
    }

    /// The store of database `name` with the app's own stores (`records`), created or
    /// upgraded with the queue's, not opened yet: [`Store::connect`] opens it, so that its
    /// caller awaits the open itself (no future of its own, issue 35). Opening, and every
    /// later reopen, fails with `BLOCKED` after waiting `open_timeout_ms` for other tabs.
    pub(crate) fn new_app(name: &str, open_timeout_ms: u32, app: Option<AppSchema>) -> Rc<Store> {
        let conn = Connection::new(name, open_timeout_ms, app.map(Rc::new));
        Rc::new(Store { name: name.to_owned(), conn })
    }

    /// Opens the connection now (see [`Store::new_app`]).
    ///
    /// # Errors
    /// `BLOCKED`, `STORAGE`, `QUOTA` when the database cannot be opened; `SCHEMA_NEWER` when
    /// it holds a newer app schema.
    pub(crate) fn connect(&self) -> impl std::future::Future<Output = Result<web_sys::IdbDatabase>> + '_ {
        self.conn.get()
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the connection for good; later calls, and calls still waiting for a reopen,
    /// fail with `CLOSED`. Dropping the store closes it too.
    pub fn close(&self) {
        self.conn.close();
    }

    /// True after [`Store::close`].
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    /// A transaction over the queue and the app stores `app`.
    pub(super) async fn transaction_over(
        self: &Rc<Self>,
        mode: IdbTransactionMode,
        durability: Durability,
        app: &AppStores,
    ) -> Result<IdbTransaction> {
        // One await of the connection for the first try and the retry (one state, issue 35).
        let mut retried = false;
        loop {
            let db = self.conn.get().await?;
            let stores = records::scope(&db, STORE, app)?;
            match begin(&db, &stores, mode, durability) {
                Ok(tx) => return Ok(tx),
                // The connection was closed under us: by another tab's versionchange (its
                // handler closes it without telling Rust) or by the browser. Reopen once,
                // with the same durability; calls racing here share the reopen.
                Err(e) if !retried && dom_name(&e).as_deref() == Some("InvalidStateError") => {
                    self.conn.forget(&db);
                    retried = true;
                }
                Err(e) => return Err(OutboxError::storage("transaction", &e)),
            }
        }
    }

    /// `get` of the app record under `key` in `store`, issued in `tx` ([`Read::Record`],
    /// over `AppStores::Named(vec![store])`), as [`Store::owner_queue`]; its result is
    /// [`Store::record_of`].
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a store the database lacks or a key IndexedDB refuses;
    /// `STORAGE`.
    fn record_request(tx: &IdbTransaction, store: &str, key: &JsValue) -> Result<IdbRequest> {
        app_store(tx, store)?.get(key).map_err(|e| key_refused(&e))
    }

    /// The app record [`Store::record_request`] read (`undefined` when there is none).
    pub(crate) fn record_of(v: JsValue) -> JsValue {
        // A stub left by a rekey is no record.
        if records::moved_to(&v).is_some() {
            JsValue::UNDEFINED
        } else {
            v
        }
    }

    /// `getAll` of the app records of `store` (through `index` when given) within `range`
    /// (`undefined` for all), issued in `tx` as [`Store::record_request`] ([`Read::Records`]);
    /// its result, in key
    /// order, is [`Store::records_of`].
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a store or index the database lacks or a range IndexedDB
    /// refuses; `STORAGE`.
    fn records_request(tx: &IdbTransaction, store: &str, index: Option<&str>, range: &JsValue) -> Result<IdbRequest> {
        let os = app_store(tx, store)?;
        match index {
            Some(i) => os
                .index(i)
                .map_err(|_| {
                    let mut e = OutboxError::invalid_key(store, "` has no index `");
                    e.message.push_str(i);
                    e.message.push('`');
                    e
                })?
                .get_all_with_key(range),
            None => os.get_all_with_key(range),
        }
        .map_err(|e| key_refused(&e))
    }

    /// The app records [`Store::records_request`] read, stubs left by rekeys left out.
    pub(crate) fn records_of(all: JsValue) -> JsValue {
        let all: Array = all.unchecked_into();
        let records = Array::new();
        for v in all.iter().filter(|v| records::moved_to(v).is_none()) {
            records.push(&v);
        }
        records.into()
    }

    /// Every stored value (rows of every owner and undecodable ones).
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read_all(self: &Rc<Self>) -> Result<Vec<Value>> {
        Store::rows_of(self.read_one(&AppStores::None, Read::Values(None)).await?)
    }

    /// `getAll` (or `getAllKeys`, primary keys, when `keys`) of `owner`'s range of the
    /// `[owner, savedAt]` index, issued in `tx` ([`Read::Queue`]): every row of `owner`
    /// with a numeric `savedAt`, in `(savedAt, id)` order ([`Store::rows_of`]), or their
    /// ids ([`Store::ids_of`]). The reads of the queue are issued by these plain functions
    /// and awaited by their callers through `read_one`: no async wrapper of its own for
    /// each (issue 35).
    ///
    /// # Errors
    /// `STORAGE`.
    fn owner_queue(tx: &IdbTransaction, owner: &str, keys: bool) -> Result<IdbRequest> {
        let store = object_store(tx)?;
        let range = owner_range(owner).map_err(|e| OutboxError::storage("key range", &e))?;
        let index = store.index(BY_OWNER_SAVED_AT).map_err(|e| OutboxError::storage("index", &e))?;
        if keys { index.get_all_keys_with_key(&range) } else { index.get_all_with_key(&range) }
            .map_err(|e| OutboxError::storage("read", &e))
    }

    /// Every value stored under `owner` (decodable or not), through the `byOwner` index; a
    /// database a newer version upgraded without that index is read whole. Callers still
    /// filter by owner. With no owner: every stored value (rows of every owner and
    /// undecodable ones). Issued in `tx` as [`Store::owner_queue`] ([`Read::Values`]).
    ///
    /// # Errors
    /// `STORAGE`.
    fn owner_values(tx: &IdbTransaction, owner: Option<&str>) -> Result<IdbRequest> {
        let store = object_store(tx)?;
        match owner {
            Some(owner) if store.index_names().contains(BY_OWNER) => {
                let index = store.index(BY_OWNER).map_err(|e| OutboxError::storage("index", &e))?;
                index.get_all_with_key(&owner.into())
            }
            _ => store.get_all(),
        }
        .map_err(|e| OutboxError::storage("read", &e))
    }

    /// `getAll` of the row stored under `id` (none or one), issued in `tx` as
    /// [`Store::owner_queue`] ([`Read::Row`]); its result is [`Store::rows_of`]. What the commands read
    /// of one row outside a write: [`Store::read`] of its `Id` scope, through `read_one`'s
    /// future (no future of its own, issue 35).
    ///
    /// # Errors
    /// `STORAGE`.
    fn row_request(tx: &IdbTransaction, id: &str) -> Result<IdbRequest> {
        object_store(tx)?.get_all_with_key(&JsValue::from_str(id)).map_err(|e| OutboxError::storage("read", &e))
    }

    /// The rows of what one of the reads above returned (the planner's JSON).
    ///
    /// # Errors
    /// `STORAGE` when it is no array.
    pub(crate) fn rows_of(array: JsValue) -> Result<Vec<Value>> {
        values(array)
    }

    /// The ids of what [`Store::owner_queue`] read with `keys`, in the same order; a key
    /// that is not a string is left out.
    pub(crate) fn ids_of(array: JsValue) -> Vec<String> {
        let array: Array = array.unchecked_into();
        let mut ids = Vec::with_capacity(array.length() as usize);
        for id in array.iter().filter_map(|k| k.as_string()) {
            ids.push(id);
        }
        ids
    }

    /// The result of the one request `read` in a readonly transaction over the queue and
    /// `app`. The one async body of the single-request reads (each async fn is a state
    /// machine of its own in the wasm module, issue 35).
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade); what issuing
    /// `read` fails with.
    pub(crate) async fn read_one(self: &Rc<Self>, app: &AppStores, read: Read<'_>) -> Result<JsValue> {
        let tx = self.transaction_over(IdbTransactionMode::Readonly, Durability::Default, app).await?;
        let req = match read {
            Read::Row(id) => Store::row_request(&tx, id),
            Read::Queue { owner, keys } => Store::owner_queue(&tx, owner, keys),
            Read::Values(owner) => Store::owner_values(&tx, owner),
            Read::Record { store, key } => Store::record_request(&tx, store, key),
            Read::Records { store, index, range } => Store::records_request(&tx, store, index, range),
        }?;
        request(&req).await.map_err(|e| OutboxError::storage("read", &e))
    }

    /// The rows of `scopes`, read in a readonly transaction.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read(self: &Rc<Self>, scopes: &[Scope]) -> Result<Vec<Value>> {
        // Issued and awaited here (no wrapper future of its own, issue 35).
        let tx = self.transaction_over(IdbTransactionMode::Readonly, Durability::Default, &AppStores::None).await?;
        await_reads(issue_reads(&object_store(&tx)?, scopes)?).await
    }
}

/// The one request of a [`Store::read_one`], as data: one `match` there, not a closure
/// type (its call shim and drop glue) per kind of read (issue 35).
#[derive(Clone, Copy)]
pub(crate) enum Read<'a> {
    /// The row stored under this id (none or one): [`Store::row_request`].
    Row(&'a str),
    /// An owner's queue, or its ids (`keys`): [`Store::owner_queue`].
    Queue { owner: &'a str, keys: bool },
    /// Every value stored under an owner, or every value (`None`): [`Store::owner_values`].
    Values(Option<&'a str>),
    /// The app record under `key` in `store`: [`Store::record_request`].
    Record { store: &'a str, key: &'a JsValue },
    /// App records of `store` (through `index`) within `range`: [`Store::records_request`].
    Records { store: &'a str, index: Option<&'a str>, range: &'a JsValue },
}

/// The app store `name` of a transaction over it.
fn app_store(tx: &IdbTransaction, name: &str) -> Result<IdbObjectStore> {
    tx.object_store(name).map_err(|e| OutboxError::storage("object store", &e))
}

/// A key or range IndexedDB refused (`DataError`) is the app's argument, and so is an
/// exception that is no `DOMException` (a getter of the key threw while IndexedDB read
/// it); anything else is the database's failure.
fn key_refused(e: &JsValue) -> OutboxError {
    if records::is_data_error(e) {
        OutboxError::invalid("IndexedDB refused the key or range given (DataError)")
    } else if e.dyn_ref::<web_sys::DomException>().is_none() {
        OutboxError::invalid(outbox_core::text::concat(&[
            "the key or range given cannot be read (",
            &crate::js::text_of(e),
            ")",
        ]))
    } else {
        OutboxError::storage("read", e)
    }
}
