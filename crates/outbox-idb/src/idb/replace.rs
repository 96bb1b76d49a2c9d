//! Replace (SPEC §4) as one readwrite transaction — read the scopes, plan synchronously,
//! compare with the plan's `expected` as stored, apply all or nothing — with the app's
//! record writes and the `reconcile` port. Nothing else writes the store.

use super::reads::{await_reads, issue_reads, object_store};
use super::records::{self, AppStores, Changed};
use super::request::completion;
use super::store::Store;
use super::transaction::{transaction_failed, Armed, CommittableTransaction, Durability};
use super::view::{self, View};
use crate::convert::stored_to_js;
use crate::error::{OutboxError, Result};
use outbox_core::plan::matches_expected;
use outbox_core::records::{Reconcile, RecordWrite};
use outbox_core::{ReplaceOutcome, ReplacePlan, Scope};
use serde_json::Value;
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{IdbObjectStore, IdbTransactionMode};

impl Store {
    /// Replace (§4) in one readwrite transaction: read `scopes`, call `planner` with what was
    /// read (synchronously, inside the transaction), compare the plan's `expected` with the
    /// rows of the plan's scopes, then apply all of it or nothing. `None` when the planner
    /// planned nothing.
    ///
    /// Generic only here: the planner is boxed at once and the future is the one of
    /// [`Store::transact_records`] for every caller (issue 35).
    ///
    /// # Errors
    /// `STORAGE` or `QUOTA` when IndexedDB fails (the transaction is aborted: nothing is
    /// written), `CLOSED`, `BLOCKED`.
    pub fn transact<'a>(
        self: &'a Rc<Self>,
        scopes: &[Scope],
        durability: Durability,
        planner: impl FnOnce(&[Value]) -> Option<ReplacePlan> + 'a,
    ) -> impl Future<Output = Result<Option<ReplaceOutcome>>> + 'a {
        self.transact_one(scopes.to_vec(), durability, Box::new(planner))
    }

    async fn transact_one(
        self: &Rc<Self>,
        scopes: Vec<Scope>,
        durability: Durability,
        planner: Planner<'_>,
    ) -> Result<Option<ReplaceOutcome>> {
        let done = self.transact_records(vec![(scopes, planner)], durability, &RecordPort::default(), &[]).await?;
        Ok(done.outcome())
    }

    /// Several replaces in one readwrite transaction, planned and applied in order as if
    /// each had its own: every planner sees the scope rows as left by the replaces before
    /// it, and each replace commits or is stale on its own (answers that arrive together
    /// share one transaction this way). With the app's records: the transaction also covers
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
    /// `STORAGE` or `QUOTA` (the transaction is aborted: nothing at all is written),
    /// `CLOSED`, `BLOCKED` (reopening after another tab's upgrade); `INVALID_ARGUMENT` when
    /// IndexedDB refuses a record write (nothing at all is written).
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
            for s in scopes {
                if !read.contains(s) {
                    read.push(s.clone());
                }
            }
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
            let js = put(&store, &id, row)?;
            puts.push((id, js));
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
            let mut missing: Vec<Scope> = Vec::new();
            for s in &plan.scopes {
                if !read.contains(s) && !view.knows(s) {
                    missing.push(s.clone());
                }
            }
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
                        warn_reconcile_failed(&why);
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
            // A failure returns early: the armed guard aborts, so nothing is half-written.
            if value.is_null() {
                store.delete(&JsValue::from_str(id)).map_err(|e| OutboxError::storage("write", &e))?;
            } else {
                let js = put(&store, id, value)?;
                puts.push((id.clone(), js));
            }
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

/// Puts `row` (by `id`) as stored: its markers become the stored values they stand for
/// again (SPEC §3 rule 2). The value given to IndexedDB, which stored a copy.
fn put(store: &IdbObjectStore, id: &str, row: &Value) -> Result<JsValue> {
    stored_to_js(id, row).and_then(|js| store.put(&js).map(|_| js)).map_err(|e| OutboxError::storage("write", &e))
}

/// Says on the console that an answer's `reconcile` failed (`why`) and is left unapplied:
/// the one text of both ways it fails (the port here, IndexedDB refusing its writes in the
/// flush driver).
pub fn warn_reconcile_failed(why: &str) {
    let _ = crate::js::console_warn_text(&outbox_core::text::concat(&[
        "outbox: reconcile failed (",
        why,
        "); the answer is not applied, the row is sent again after its lease",
    ]));
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

impl Transacted {
    /// The outcome of a transaction of one replace (`None`: it planned nothing).
    #[must_use]
    pub fn outcome(mut self) -> Option<ReplaceOutcome> {
        self.outcomes.pop().flatten()
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
