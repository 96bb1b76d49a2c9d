//! The outbox store over one IndexedDB connection: scoped reads, and **replace** (SPEC §4)
//! as one readwrite transaction — read the scopes, plan synchronously, compare with the
//! plan's `expected` as stored, apply all or nothing. Nothing else writes the store.

use super::request::{completion, request};
use super::schema::{open, BY_OWNER_SAVED_AT, BY_OWNER_TARGET, STORE};
use crate::convert::{stored_from_js, stored_to_js};
use crate::error::{OutboxError, Result};
use js_sys::Array;
use outbox_core::plan::{matches_expected, rows_in_scopes};
use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbDatabase, IdbKeyRange, IdbObjectStore, IdbTransaction, IdbTransactionMode};

#[wasm_bindgen]
extern "C" {
    /// An `IDBDatabase` seen through the options form of `transaction(stores, mode,
    /// {durability})`: web-sys binds it only behind `web_sys_unstable_apis`.
    type DatabaseWithOptions;

    #[wasm_bindgen(method, catch, js_name = transaction)]
    fn transaction_with_options(
        this: &DatabaseWithOptions,
        stores: &JsValue,
        mode: &str,
        options: &JsValue,
    ) -> std::result::Result<IdbTransaction, JsValue>;
}

/// How hard a commit must be flushed to disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `"strict"`: the app's edit must survive a crash right after the call returns.
    Strict,
    /// The browser's default: losing this write in a crash only causes a resend.
    Default,
}

/// One database of one app, shared by the tabs of an origin.
pub struct Store {
    name: String,
    conn: RefCell<Option<IdbDatabase>>,
    closed: std::cell::Cell<bool>,
    on_version_change: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Store {
    /// Opens `name` now (so that a bad name or a refused database fails at `open`).
    ///
    /// # Errors
    /// `STORAGE` when the database cannot be opened.
    pub async fn open(name: &str) -> Result<Rc<Store>> {
        let store = Rc::new(Store {
            name: name.to_owned(),
            conn: RefCell::new(None),
            closed: std::cell::Cell::new(false),
            on_version_change: RefCell::new(None),
        });
        store.connection().await?;
        Ok(store)
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Closes the connection for good; later calls fail with `CLOSED`.
    pub fn close(&self) {
        self.closed.set(true);
        if let Some(db) = self.conn.borrow_mut().take() {
            db.close();
        }
    }

    /// True after [`Store::close`].
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    async fn connection(self: &Rc<Self>) -> Result<IdbDatabase> {
        if self.closed.get() {
            return Err(OutboxError::closed());
        }
        if let Some(db) = self.conn.borrow().as_ref() {
            return Ok(db.clone());
        }
        let db = open(&self.name).await?;
        // Another tab wants to upgrade: let go now, reopen lazily on the next call.
        let weak = Rc::downgrade(self);
        let handler = Closure::<dyn FnMut()>::new(move || {
            if let Some(s) = weak.upgrade() {
                if let Some(db) = s.conn.borrow_mut().take() {
                    db.close();
                }
            }
        });
        db.set_onversionchange(Some(handler.as_ref().unchecked_ref()));
        *self.on_version_change.borrow_mut() = Some(handler);
        *self.conn.borrow_mut() = Some(db.clone());
        Ok(db)
    }

    async fn transaction(self: &Rc<Self>, mode: IdbTransactionMode, durability: Durability) -> Result<IdbTransaction> {
        let db = self.connection().await?;
        let stores = JsValue::from_str(STORE);
        let tx = match (mode, durability) {
            (IdbTransactionMode::Readwrite, Durability::Strict) => {
                let opts = js_sys::Object::new();
                let _ = js_sys::Reflect::set(&opts, &"durability".into(), &"strict".into());
                db.unchecked_ref::<DatabaseWithOptions>().transaction_with_options(&stores, "readwrite", &opts)
            }
            _ => db.transaction_with_str_and_mode(STORE, mode),
        };
        match tx {
            Ok(tx) => Ok(tx),
            Err(e) => {
                // The connection may have been closed under us (versionchange): reopen once.
                self.conn.borrow_mut().take();
                let db = self.connection().await?;
                db.transaction_with_str_and_mode(STORE, mode).map_err(|_| OutboxError::storage("transaction", &e))
            }
        }
    }

    /// Every row of `owner` with a numeric `savedAt`, in `(savedAt, id)` order.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`.
    pub async fn read_owner(self: &Rc<Self>, owner: &str) -> Result<Vec<Value>> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        let store = object_store(&tx)?;
        let lower = Array::of2(&owner.into(), &JsValue::from_f64(f64::NEG_INFINITY));
        let upper = Array::of2(&owner.into(), &JsValue::from_f64(f64::INFINITY));
        let range = IdbKeyRange::bound(&lower, &upper).map_err(|e| OutboxError::storage("key range", &e))?;
        let index = store.index(BY_OWNER_SAVED_AT).map_err(|e| OutboxError::storage("index", &e))?;
        let req = index.get_all_with_key(&range).map_err(|e| OutboxError::storage("read", &e))?;
        values(request(&req).await.map_err(|e| OutboxError::storage("read", &e))?)
    }

    /// Every stored value (rows of every owner and undecodable ones).
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`.
    pub async fn read_all(self: &Rc<Self>) -> Result<Vec<Value>> {
        let tx = self.transaction(IdbTransactionMode::Readonly, Durability::Default).await?;
        let req = object_store(&tx)?.get_all().map_err(|e| OutboxError::storage("read", &e))?;
        values(request(&req).await.map_err(|e| OutboxError::storage("read", &e))?)
    }

    /// The rows of `scopes`, read in a readonly transaction.
    ///
    /// # Errors
    /// `STORAGE`, `CLOSED`.
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
    /// `STORAGE` when IndexedDB fails (the transaction is aborted: nothing is written),
    /// `CLOSED`.
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
    /// `STORAGE` (nothing at all is written), `CLOSED`.
    pub async fn transact_many(
        self: &Rc<Self>,
        items: Vec<(Vec<Scope>, Planner<'_>)>,
        durability: Durability,
    ) -> Result<Vec<Option<ReplaceOutcome>>> {
        let tx = self.transaction(IdbTransactionMode::Readwrite, durability).await?;
        let done = completion(&tx);
        let store = object_store(&tx)?;
        let mut read: Vec<Scope> = Vec::new();
        for (scopes, _) in &items {
            read.extend(scopes.iter().filter(|s| !read.contains(s)).cloned().collect::<Vec<_>>());
        }
        let mut view = View::default();
        view.load(read_scopes(&store, &read).await?);
        let mut results = Vec::with_capacity(items.len());
        for (scopes, planner) in items {
            let Some(plan) = planner(&view.rows(&scopes)) else {
                results.push(None);
                continue;
            };
            let missing: Vec<Scope> = plan.scopes.iter().filter(|s| !read.contains(s)).cloned().collect();
            if !missing.is_empty() {
                view.load(read_scopes(&store, &missing).await?);
                read.extend(missing);
            }
            if matches_expected(&plan.expected, &view.rows(&plan.scopes)) {
                view.apply(&plan);
                results.push(Some(ReplaceOutcome::Committed));
            } else {
                results.push(Some(ReplaceOutcome::Stale));
            }
        }
        for (id, value) in &view.writes {
            match value {
                None => store.delete(&JsValue::from_str(id)),
                // Markers become the stored values they stand for again (SPEC §3 rule 2);
                // any failure aborts, so that no put of this replace is committed alone.
                Some(v) => stored_to_js(id, v).and_then(|js| store.put(&js)).inspect_err(|_| {
                    let _ = tx.abort();
                }),
            }
            .map_err(|e| OutboxError::storage("write", &e))?;
        }
        done.await.map_err(|e| OutboxError::storage("commit", &e))?;
        Ok(results)
    }
}

/// A planner called inside a transaction with the rows of its scopes.
pub type Planner<'a> = Box<dyn FnOnce(&[Value]) -> Option<ReplacePlan> + 'a>;

/// The rows a transaction read, as changed by the replaces planned so far in it.
#[derive(Default)]
struct View {
    rows: Vec<(String, Value)>,
    /// Final write per key, in first-touched order (`None`: delete).
    writes: Vec<(String, Option<Value>)>,
}

fn key(row: &Value) -> String {
    row.get("id").and_then(Value::as_str).map_or_else(|| outbox_core::plan::key_string(row), str::to_owned)
}

impl View {
    /// Adds rows read from the store, unless this transaction already wrote their key.
    fn load(&mut self, rows: Vec<Value>) {
        for r in rows {
            let k = key(&r);
            if !self.writes.iter().any(|(w, _)| *w == k) && !self.rows.iter().any(|(x, _)| *x == k) {
                self.rows.push((k, r));
            }
        }
    }

    fn rows(&self, scopes: &[Scope]) -> Vec<Value> {
        rows_in_scopes(self.rows.iter().map(|(_, v)| v), scopes)
    }

    fn set(&mut self, k: String, value: Option<Value>) {
        self.rows.retain(|(x, _)| *x != k);
        if let Some(v) = &value {
            self.rows.push((k.clone(), v.clone()));
        }
        match self.writes.iter_mut().find(|(w, _)| *w == k) {
            Some(w) => w.1 = value,
            None => self.writes.push((k, value)),
        }
    }

    fn apply(&mut self, plan: &ReplacePlan) {
        for id in &plan.deletes {
            self.set(id.clone(), None);
        }
        for put in &plan.puts {
            self.set(key(put), Some(put.clone()));
        }
    }
}

fn object_store(tx: &IdbTransaction) -> Result<IdbObjectStore> {
    tx.object_store(STORE).map_err(|e| OutboxError::storage("object store", &e))
}

/// Issues every scope's read at once, then awaits them (all requests of this transaction).
async fn read_scopes(store: &IdbObjectStore, scopes: &[Scope]) -> Result<Vec<Value>> {
    let mut pending = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let req = match scope {
            Scope::Id(id) => store.get_all_with_key(&JsValue::from_str(id)),
            Scope::Target { owner, target } => store
                .index(BY_OWNER_TARGET)
                .and_then(|i| i.get_all_with_key(&Array::of2(&owner.into(), &target.into()))),
        }
        .map_err(|e| OutboxError::storage("read", &e))?;
        pending.push(request(&req));
    }
    let mut out = Vec::new();
    for p in pending {
        out.extend(values(p.await.map_err(|e| OutboxError::storage("read", &e))?)?);
    }
    Ok(dedup(&out).into_iter().cloned().collect())
}

fn dedup(rows: &[Value]) -> Vec<&Value> {
    let mut seen = HashSet::new();
    rows.iter().filter(|r| seen.insert(key(r))).collect()
}

fn values(array: JsValue) -> Result<Vec<Value>> {
    let array: Array = array.dyn_into().map_err(|_| OutboxError::storage("read", &"not an array".into()))?;
    Ok(array.iter().map(|v| stored_from_js(&v)).collect())
}
