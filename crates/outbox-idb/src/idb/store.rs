//! The outbox store over one IndexedDB connection: scoped reads, and **replace** (SPEC §4)
//! as one readwrite transaction — read the scopes, plan synchronously, compare with the
//! plan's `expected` as stored, apply all or nothing. Nothing else writes the store.

use super::app_schema::AppSchema;
use super::connection::Connection;
use super::records::{self, AppStores, Changed};
use super::request::{completion, request};
use super::schema::{BY_OWNER, BY_OWNER_SAVED_AT, BY_OWNER_TARGET, DEFAULT_OPEN_TIMEOUT_MS, STORE};
pub use super::transaction::Durability;
use super::transaction::{begin, transaction_failed, Armed, CommittableTransaction};
use super::view::{self, View};
use crate::convert::{stored_from_js, stored_to_js};
use crate::error::{dom_name, OutboxError, Result};
use js_sys::Array;
use outbox_core::plan::matches_expected;
use outbox_core::records::{Reconcile, RecordWrite};
use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use serde_json::Value;
use std::collections::HashSet;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{IdbKeyRange, IdbObjectStore, IdbTransaction, IdbTransactionMode};

/// One database of one app, shared by the tabs of an origin.
pub struct Store {
    name: String,
    conn: Rc<Connection>,
}

impl Store {
    /// Opens `name` now (so that a bad name or a refused database fails at `open`), waiting
    /// at most [`DEFAULT_OPEN_TIMEOUT_MS`] for other tabs.
    ///
    /// # Errors
    /// `BLOCKED`, `STORAGE`, `QUOTA` when the database cannot be opened.
    pub async fn open(name: &str) -> Result<Rc<Store>> {
        Store::open_with(name, DEFAULT_OPEN_TIMEOUT_MS).await
    }

    /// [`Store::open`], where opening (and every later reopen) fails with `BLOCKED` after
    /// waiting `open_timeout_ms` for other tabs.
    ///
    /// # Errors
    /// `BLOCKED`, `STORAGE`, `QUOTA` when the database cannot be opened.
    pub async fn open_with(name: &str, open_timeout_ms: u32) -> Result<Rc<Store>> {
        Store::open_app(name, open_timeout_ms, None).await
    }

    /// [`Store::open_with`] with the app's own stores (`records`), created or upgraded with
    /// the queue's.
    ///
    /// # Errors
    /// As [`Store::open_with`]; `SCHEMA_NEWER` when the database holds a newer app schema.
    pub async fn open_app(name: &str, open_timeout_ms: u32, app: Option<AppSchema>) -> Result<Rc<Store>> {
        let conn = Connection::new(name, open_timeout_ms, app.map(Rc::new));
        let store = Rc::new(Store { name: name.to_owned(), conn });
        store.conn.get().await?;
        Ok(store)
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

    async fn transaction(self: &Rc<Self>, mode: IdbTransactionMode, durability: Durability) -> Result<IdbTransaction> {
        self.transaction_over(mode, durability, &AppStores::None).await
    }

    /// A transaction over the queue and the app stores `app`.
    async fn transaction_over(
        self: &Rc<Self>,
        mode: IdbTransactionMode,
        durability: Durability,
        app: &AppStores,
    ) -> Result<IdbTransaction> {
        let db = self.conn.get().await?;
        let stores = records::scope(&db, STORE, app)?;
        match begin(&db, &stores, mode, durability) {
            Ok(tx) => Ok(tx),
            // The connection was closed under us: by another tab's versionchange (its
            // handler closes it without telling Rust) or by the browser. Reopen once, with
            // the same durability; calls racing here share the reopen.
            Err(e) if dom_name(&e).as_deref() == Some("InvalidStateError") => {
                self.conn.forget(&db);
                let db = self.conn.get().await?;
                let stores = records::scope(&db, STORE, app)?;
                begin(&db, &stores, mode, durability).map_err(|e| OutboxError::storage("transaction", &e))
            }
            Err(e) => Err(OutboxError::storage("transaction", &e)),
        }
    }

    /// The app record under `key` in `store` (`undefined` when there is none).
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a store the database lacks or a key IndexedDB refuses;
    /// `STORAGE`, `CLOSED`, `BLOCKED`.
    pub async fn read_record(self: &Rc<Self>, store: &str, key: &JsValue) -> Result<JsValue> {
        let app = AppStores::Named(vec![store.to_owned()]);
        let tx = self.transaction_over(IdbTransactionMode::Readonly, Durability::Default, &app).await?;
        let os = tx.object_store(store).map_err(|e| OutboxError::storage("object store", &e))?;
        let req = os.get(key).map_err(|e| key_refused(&e))?;
        let v = request(&req).await.map_err(|e| OutboxError::storage("read", &e))?;
        // A stub left by a rekey is no record.
        Ok(if records::moved_to(&v).is_some() { JsValue::UNDEFINED } else { v })
    }

    /// The app records of `store` (through `index` when given) within `range` (`undefined`
    /// for all), in key order.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for a store or index the database lacks or a range IndexedDB
    /// refuses; `STORAGE`, `CLOSED`, `BLOCKED`.
    pub async fn read_records(self: &Rc<Self>, store: &str, index: Option<&str>, range: &JsValue) -> Result<JsValue> {
        let app = AppStores::Named(vec![store.to_owned()]);
        let tx = self.transaction_over(IdbTransactionMode::Readonly, Durability::Default, &app).await?;
        let os = tx.object_store(store).map_err(|e| OutboxError::storage("object store", &e))?;
        let req = match index {
            Some(i) => os
                .index(i)
                .map_err(|_| OutboxError::invalid(format!("`{store}` has no index `{i}`")))?
                .get_all_with_key(range),
            None => os.get_all_with_key(range),
        }
        .map_err(|e| key_refused(&e))?;
        let all: Array = request(&req).await.map_err(|e| OutboxError::storage("read", &e))?.unchecked_into();
        Ok(all.iter().filter(|v| records::moved_to(v).is_none()).collect::<Array>().into())
    }

    /// Every row of `owner` with a numeric `savedAt`, in `(savedAt, id)` order.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read_owner(self: &Rc<Self>, owner: &str) -> Result<Vec<Value>> {
        let array = self.read_owner_queue(owner, false).await?;
        values(array)
    }

    /// The ids of [`Store::read_owner`]'s rows, read as keys only (no value is read or
    /// converted), in the same order; a key that is not a string is left out.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read_owner_ids(self: &Rc<Self>, owner: &str) -> Result<Vec<String>> {
        let array: Array = self.read_owner_queue(owner, true).await?.unchecked_into();
        Ok(array.iter().filter_map(|k| k.as_string()).collect())
    }

    /// `getAll` (or `getAllKeys`, primary keys) of `owner`'s range of the `[owner, savedAt]`
    /// index.
    async fn read_owner_queue(self: &Rc<Self>, owner: &str, keys: bool) -> Result<JsValue> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        let store = object_store(&tx)?;
        let range = owner_range(owner).map_err(|e| OutboxError::storage("key range", &e))?;
        let index = store.index(BY_OWNER_SAVED_AT).map_err(|e| OutboxError::storage("index", &e))?;
        let req = if keys { index.get_all_keys_with_key(&range) } else { index.get_all_with_key(&range) }
            .map_err(|e| OutboxError::storage("read", &e))?;
        request(&req).await.map_err(|e| OutboxError::storage("read", &e))
    }

    /// Every value stored under `owner` (decodable or not), through the `byOwner` index; a
    /// database a newer version upgraded without that index is read whole. Callers still
    /// filter by owner.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read_owner_values(self: &Rc<Self>, owner: &str) -> Result<Vec<Value>> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        let store = object_store(&tx)?;
        let req = if store.index_names().contains(BY_OWNER) {
            let index = store.index(BY_OWNER).map_err(|e| OutboxError::storage("index", &e))?;
            index.get_all_with_key(&owner.into())
        } else {
            store.get_all()
        }
        .map_err(|e| OutboxError::storage("read", &e))?;
        values(request(&req).await.map_err(|e| OutboxError::storage("read", &e))?)
    }

    /// Every stored value (rows of every owner and undecodable ones).
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read_all(self: &Rc<Self>) -> Result<Vec<Value>> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        let req = object_store(&tx)?.get_all().map_err(|e| OutboxError::storage("read", &e))?;
        values(request(&req).await.map_err(|e| OutboxError::storage("read", &e))?)
    }

    /// The rows of `scopes`, read in a readonly transaction.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn read(self: &Rc<Self>, scopes: &[Scope]) -> Result<Vec<Value>> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        read_scopes(&object_store(&tx)?, scopes).await
    }

    /// Replace (§4) in one readwrite transaction: read `scopes`, call `planner` with what was
    /// read (synchronously, inside the transaction), compare the plan's `expected` with the
    /// rows of the plan's scopes, then apply all of it or nothing. `None` when the planner
    /// planned nothing.
    ///
    /// # Errors
    /// `STORAGE` or `QUOTA` when IndexedDB fails (the transaction is aborted: nothing is
    /// written), `CLOSED`, `BLOCKED`.
    pub async fn transact(
        self: &Rc<Self>,
        scopes: &[Scope],
        durability: Durability,
        planner: impl FnOnce(&[Value]) -> Option<ReplacePlan>,
    ) -> Result<Option<ReplaceOutcome>> {
        let mut out = self.transact_many(vec![(scopes.to_vec(), Box::new(planner) as Planner<'_>)], durability).await?;
        Ok(out.pop().flatten())
    }

    /// Several replaces in one readwrite transaction, planned and applied in order as if
    /// each had its own: every planner sees the scope rows as left by the replaces before
    /// it, and each replace commits or is stale on its own. Used to let answers that
    /// arrive together share one transaction.
    ///
    /// # Errors
    /// `STORAGE` or `QUOTA` (the transaction is aborted: nothing at all is written),
    /// `CLOSED`, `BLOCKED` (reopening after another tab's upgrade).
    pub async fn transact_many(
        self: &Rc<Self>,
        items: Vec<(Vec<Scope>, Planner<'_>)>,
        durability: Durability,
    ) -> Result<Vec<Option<ReplaceOutcome>>> {
        Ok(self.transact_records(items, durability, &RecordPort::default(), &[]).await?.outcomes)
    }

    /// [`Store::transact_many`] with the app's records: the transaction also covers
    /// `port.stores`; each plan that commits writes its record writes, and those the
    /// `reconcile` port gives for its answer (called synchronously, inside the transaction,
    /// only for a plan that commits). A port that fails leaves its plan unapplied, as a
    /// stale one (the row stays claimed; it is sent again after the lease). Returns the
    /// records changed, for the cross-tab notice.
    ///
    /// `early`: rows under fresh ids to put right after the reads are issued, a guess at what
    /// the plans will write ([`super::view`]); what the plans do not write as guessed is
    /// undone in the same transaction.
    ///
    /// # Errors
    /// As [`Store::transact_many`]; `INVALID_ARGUMENT` when IndexedDB refuses a record
    /// write (nothing at all is written).
    pub async fn transact_records(
        self: &Rc<Self>,
        items: Vec<(Vec<Scope>, Planner<'_>)>,
        durability: Durability,
        port: &RecordPort<'_>,
        early: &[Value],
    ) -> Result<Transacted> {
        let tx = self.transaction_over(IdbTransactionMode::Readwrite, durability, &port.stores).await?;
        // Until every write is issued, a failure, a dropped future or a panic aborts: IndexedDB
        // would commit whatever was issued once control returns to the event loop (SPEC §4:
        // all or nothing).
        let abort = Armed::new(&tx);
        let store = object_store(&tx)?;
        let mut read: Vec<Scope> = Vec::new();
        for (scopes, _) in &items {
            read.extend(scopes.iter().filter(|s| !read.contains(s)).cloned().collect::<Vec<_>>());
        }
        let mut view = View::default();
        let reads = issue_reads(&store, &read)?;
        // Listened for once the reads are on their way (before this task yields, so the
        // transaction cannot have ended yet).
        let done = completion(&tx);
        let mut puts = Vec::new();
        for row in early {
            // Requests run in order: the reads above do not see these.
            let id = view::key(row);
            let js = stored_to_js(&id, row).and_then(|js| store.put(&js).map(|_| js));
            puts.push((id, js.map_err(|e| OutboxError::storage("write", &e))?));
            view.early(row);
        }
        view.load(await_reads(reads).await?);
        let mut results = Vec::with_capacity(items.len());
        let mut record_writes = Vec::new();
        for (scopes, planner) in items {
            let Some(plan) = planner(&view.rows(&scopes)) else {
                results.push(None);
                continue;
            };
            // A row already read here (through its `[owner, target]` scope, say) or written
            // by an earlier plan of this transaction is known as it is now: its `Id` scope
            // needs no read of its own.
            let missing: Vec<Scope> =
                plan.scopes.iter().filter(|s| !read.contains(s) && !view.knows(s)).cloned().collect();
            if !missing.is_empty() {
                view.load(await_reads(issue_reads(&store, &missing)?).await?);
                read.extend(missing);
            }
            if !matches_expected(&plan.expected, &view.rows(&plan.scopes)) {
                results.push(Some(ReplaceOutcome::Stale));
                continue;
            }
            let mut writes = plan.records.clone();
            if let (Some(r), Some(reconcile)) = (&plan.reconcile, port.reconcile) {
                // Checked before anything is issued, so that one bad answer's writes leave the
                // other answers sharing this transaction alone.
                match reconcile(r).and_then(|w| records::check(&tx, &w).map(|()| w)) {
                    Ok(w) => writes.extend(w),
                    Err(why) => {
                        let _ = crate::js::console_warn_text(&format!("outbox: reconcile failed ({why}); the answer is not applied, the row is sent again after its lease"));
                        results.push(Some(ReplaceOutcome::Stale));
                        continue;
                    }
                }
            }
            view.apply(&plan);
            record_writes.extend(writes);
            results.push(Some(ReplaceOutcome::Committed));
        }
        let (writes, stand) = view.finish();
        puts.retain(|(id, _)| stand.contains(id));
        for (id, value) in &writes {
            match value {
                None => store.delete(&JsValue::from_str(id)).map(drop),
                // Markers become the stored values they stand for again (SPEC §3 rule 2). A
                // failure returns early: the armed guard aborts, so nothing is half-written.
                Some(v) => stored_to_js(id, v).and_then(|js| {
                    store.put(&js)?;
                    puts.push((id.clone(), js));
                    Ok(())
                }),
            }
            .map_err(|e| OutboxError::storage("write", &e))?;
        }
        let changed = records::apply(&tx, &record_writes).await?;
        abort.disarm();
        // Everything is issued: ask for the commit now, not when this task's microtasks have
        // run out, so that the disk's work starts while the caller's goes on. Not when the
        // app's records are written: Firefox (153 ESR) commits a transaction told to
        // `commit()` even when one of its puts then fails (a unique index of an app store),
        // keeping the queue's row without the record write (tests/records.rs). The queue's
        // own puts fail no index: none of its indexes is unique. A put refused for the quota
        // after `commit()` does abort the transaction in Firefox too (measured with a 10 MB
        // quota, 2026-12-02), so queue-only transactions keep the early commit.
        if record_writes.is_empty() {
            let _ = tx.unchecked_ref::<CommittableTransaction>().commit_now();
        }
        done.await.map_err(|e| transaction_failed(&e))?;
        Ok(Transacted { outcomes: results, changed, puts })
    }
}

/// What a committed [`Store::transact_records`] did.
pub struct Transacted {
    /// Each replace's outcome, in order (`None`: its planner planned nothing).
    pub outcomes: Vec<Option<ReplaceOutcome>>,
    /// The app records written, for the cross-tab notice.
    pub changed: Vec<Changed>,
    /// The rows put, by id, as the values given to IndexedDB (which stored a copy): what
    /// the app is shown of a row just written, without building it again.
    pub puts: Vec<(String, JsValue)>,
}

/// A key or range IndexedDB refused (`DataError`) is the app's argument, and so is an
/// exception that is no `DOMException` (a getter of the key threw while IndexedDB read
/// it); anything else is the database's failure.
fn key_refused(e: &JsValue) -> OutboxError {
    if records::is_data_error(e) {
        OutboxError::invalid("IndexedDB refused the key or range given (DataError)")
    } else if e.dyn_ref::<web_sys::DomException>().is_none() {
        OutboxError::invalid(format!("the key or range given cannot be read ({})", crate::js::text_of(e)))
    } else {
        OutboxError::storage("read", e)
    }
}

/// The `reconcile` port as the store calls it: the record writes for an answer, or why
/// there are none to apply.
pub type ReconcileFn<'a> = dyn Fn(&Reconcile) -> std::result::Result<Vec<RecordWrite>, String> + 'a;

/// The app's records in one replace transaction: the stores it covers and the `reconcile`
/// port, which maps an answer to record writes (or says why it cannot).
#[derive(Default)]
pub struct RecordPort<'a> {
    /// App stores the transaction covers.
    pub stores: AppStores,
    /// The port, called synchronously inside the transaction.
    pub reconcile: Option<&'a ReconcileFn<'a>>,
}

/// A planner called inside a transaction with the rows of its scopes.
pub type Planner<'a> = Box<dyn FnOnce(&[Value]) -> Option<ReplacePlan> + 'a>;

fn object_store(tx: &IdbTransaction) -> Result<IdbObjectStore> {
    tx.object_store(STORE).map_err(|e| OutboxError::storage("object store", &e))
}

/// Issues every scope's read at once, then awaits them (all requests of this transaction).
async fn read_scopes(store: &IdbObjectStore, scopes: &[Scope]) -> Result<Vec<Value>> {
    await_reads(issue_reads(store, scopes)?).await
}

/// `owner`'s range of the `[owner, savedAt]` index: its rows whose `savedAt` is a number
/// ([`Scope::Owner`]).
fn owner_range(owner: &str) -> std::result::Result<IdbKeyRange, JsValue> {
    let at = |t: f64| Array::of2(&owner.into(), &JsValue::from_f64(t));
    IdbKeyRange::bound(&at(f64::NEG_INFINITY), &at(f64::INFINITY))
}

/// Issues every scope's read, in order.
fn issue_reads(store: &IdbObjectStore, scopes: &[Scope]) -> Result<Vec<JsFuture>> {
    let mut pending = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let req = match scope {
            Scope::Id(id) => store.get_all_with_key(&JsValue::from_str(id)),
            Scope::Target { owner, target } => store
                .index(BY_OWNER_TARGET)
                .and_then(|i| i.get_all_with_key(&Array::of2(&owner.into(), &target.into()))),
            Scope::Owner(owner) => {
                owner_range(owner).and_then(|r| store.index(BY_OWNER_SAVED_AT)?.get_all_with_key(&r))
            }
        }
        .map_err(|e| OutboxError::storage("read", &e))?;
        pending.push(request(&req));
    }
    Ok(pending)
}

/// The rows the reads `pending` returned, each once.
async fn await_reads(pending: Vec<JsFuture>) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for p in pending {
        out.extend(values(p.await.map_err(|e| OutboxError::storage("read", &e))?)?);
    }
    Ok(dedup(&out).into_iter().cloned().collect())
}

fn dedup(rows: &[Value]) -> Vec<&Value> {
    let mut seen = HashSet::new();
    rows.iter().filter(|r| seen.insert(view::key(r))).collect()
}

fn values(array: JsValue) -> Result<Vec<Value>> {
    let array: Array = array.dyn_into().map_err(|_| OutboxError::storage("read", &"not an array".into()))?;
    Ok(array.iter().map(|v| stored_from_js(&v)).collect())
}
