//! The outbox commands besides `flush` and the admin ones (`admin.rs`) (SPEC §15): the
//! app's `enqueue`, `claim` and `ack`, and the reads (`record`, `records`, `rows`,
//! `undecodable`, `metrics`). Each one is a read and/or one replace transaction planned by
//! `outbox_core`; bad arguments fail before anything is written.

use crate::args::{app_store_arg, id_arg, owner_arg, writes_arg};
use crate::convert::{fields_from_js, metrics_to_js, outcome_from_js, row_to_js, ticket_to_js, undecodable_entry};
use crate::driver::{drive, Ports};
use crate::error::OutboxError;
use crate::idb::records::AppStores;
use crate::idb::replace::{Planner, RecordPort, Transacted};
use crate::idb::store::Read;
use crate::idb::{Durability, Store};
use crate::ops::own_row;
use crate::outbox::{promise, Outbox};
use js_sys::{Array, Promise};
use outbox_core::codec::Stored;
use outbox_core::enqueue::{enqueue_scope, plan_enqueue};
use outbox_core::flush::plan_app_claim;
use outbox_core::input::NewOperation;
use outbox_core::metrics::compute;
use outbox_core::records::enqueue_records;
use outbox_core::row::{find_stored as find, stored_order_key};
use outbox_core::{decode, Flush, FlushOptions, ReplaceOutcome, Scope, Ticket};
use serde_json::Value;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(js_class = Outbox)]
impl Outbox {
    /// Queues one operation (SPEC §7). Resolves with the stored row, or `null` when it
    /// cancelled an unsent create. Commits with `durability: "strict"`. `options.writes`
    /// are the app's record writes, committed in the same transaction whatever the enqueue
    /// planned (a new row, a merge, a cancelled create), or not at all.
    #[wasm_bindgen(unchecked_return_type = "Promise<OutboxRow | null>")]
    pub fn enqueue(
        &self,
        #[wasm_bindgen(unchecked_param_type = "EnqueueInput")] op: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EnqueueOptions")] options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            if !op.is_object() {
                return Err(OutboxError::invalid("the operation must be an object {owner, kind, target?, body, …}"));
            }
            let op = NewOperation::from_json(&fields_from_js(&op, "")?)?;
            let writes = writes_arg(&options)?;
            let id = crate::ids::new_id();
            let reissue = crate::ids::new_id();
            let now = inner.now();
            let records = enqueue_records(&op, &id, &writes);
            let port = RecordPort { stores: AppStores::of(&records), reconcile: None };
            let mut stored = None;
            let scopes = vec![enqueue_scope(&op, &id)];
            // Planned against an empty scope first, what almost every enqueue finds: that row
            // is put with the scope's read, and stands if the read finds the scope empty.
            let guess = plan_enqueue(&op, &id, &reissue, &[], &inner.tab, now);
            let early = guess.plan.puts.clone();
            let planner: Planner<'_> = Box::new(|rows| {
                let mut p =
                    if rows.is_empty() { guess } else { plan_enqueue(&op, &id, &reissue, rows, &inner.tab, now) };
                p.plan.records = records.clone();
                stored = Some(p.row.as_ref().map(|r| r.id.clone()));
                Some(p.plan)
            });
            let done = inner.store.transact_records(vec![(scopes, planner)], Durability::Strict, &port, &early).await?;
            if done.outcomes.first() != Some(&Some(ReplaceOutcome::Committed)) {
                return Err(OutboxError::storage("enqueue", &"the scope changed inside its own transaction".into()));
            }
            inner.notifier.changed_records("enqueue", Some(&op.owner), &done.changed);
            // The row as put: the same value `rows` would read back (IndexedDB keeps its own
            // copy, so the app may change this one).
            let row = stored.flatten().and_then(|id| done.puts.into_iter().find(|(i, _)| *i == id));
            Ok(row.map_or(JsValue::NULL, |(_, js)| js))
        }))
    }

    /// The app record under `key` in `store`, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<unknown>")]
    pub fn record(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] store: JsValue,
        #[wasm_bindgen(unchecked_param_type = "IDBValidKey")] key: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let store = app_store_arg(&store)?;
            let app = AppStores::Named(vec![store.clone()]);
            let read = inner.store.read_one(&app, Read::Record { store: &store, key: &key }).await?;
            Ok(Store::record_of(read))
        }))
    }

    /// The app records of `store` in key order; `query.index` reads through an index,
    /// `query.range` (an `IDBKeyRange` or a key) bounds them.
    #[wasm_bindgen(unchecked_return_type = "Promise<unknown[]>")]
    pub fn records(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] store: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RecordsQuery")] query: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let store = app_store_arg(&store)?;
            // A read that throws is INVALID_ARGUMENT, never an unbounded read of every record.
            let get = |k: &str| crate::args::field(&query, k);
            let index = match get("index")? {
                i if i.is_undefined() || i.is_null() => None,
                i => Some(
                    i.as_string()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| OutboxError::invalid("`query.index` must be an index name"))?,
                ),
            };
            let range = get("range")?;
            let app = AppStores::Named(vec![store.clone()]);
            let read = Read::Records { store: &store, index: index.as_deref(), range: &range };
            Ok(Store::records_of(inner.store.read_one(&app, read).await?))
        }))
    }

    /// Every row of `owner` in `(savedAt, id)` order; undecodable ones as
    /// `{id, owner, undecodable: true, error, raw}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Array<OutboxRow | UndecodableRow>>")]
    pub fn rows(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let owner = owner_arg(&owner)?;
            let mut out: Vec<(Value, Stored)> = Vec::new();
            let read = inner.store.read_one(&AppStores::None, Read::Values(Some(&owner))).await?;
            for raw in Store::rows_of(read)? {
                let stored = Stored::from_value(&raw);
                let owned = match &stored {
                    Stored::Row(r) => r.owner == owner,
                    Stored::Undecodable(u) => u.owner.as_deref() == Some(&owner),
                };
                if owned {
                    out.push((raw, stored));
                }
            }
            outbox_core::sort::stable_by_key(&mut out, |(raw, _)| stored_order_key(raw));
            // Pushed one by one: a `collect` into an `Array` builds its own copy of the
            // extend loop for every iterator type (issue 35).
            let list = Array::new();
            for (raw, stored) in &out {
                list.push(&match stored {
                    Stored::Row(_) => row_to_js(raw),
                    Stored::Undecodable(u) => undecodable_entry(u),
                });
            }
            Ok(JsValue::from(list))
        }))
    }

    /// Claims one row (SPEC §5). Resolves with the ticket, or `null` when the row is stale,
    /// in flight, another owner's, not sendable now, or of a record a flush of this tab is
    /// sending (§8).
    #[wasm_bindgen(unchecked_return_type = "Promise<Ticket | null>")]
    pub fn claim(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue,
        #[wasm_bindgen(js_name = rowId, unchecked_param_type = "string")] row_id: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let read = inner.store.read_one(&AppStores::None, Read::Row(&row_id)).await?;
            // The rows read are not kept across the next await (issue 35).
            let pred = Store::rows_of(read)?.first().and_then(|r| decode(r).ok()).and_then(|r| r.successor_of);
            let mut scopes = vec![Scope::Id(row_id.clone())];
            scopes.extend(pred.clone().map(Scope::Id));
            let now = inner.now();
            let mut ticket = None;
            // §8: the claim holds its record in this tab until the app's `ack` of it.
            let mut hold = None;
            let planner: Planner<'_> = Box::new(|cur| {
                let p = pred.as_deref().and_then(|p| find(cur, p));
                let planned = inner.outstanding.with(|out| {
                    if let Some(h) = hold.take() {
                        out.end(h); // planned again: the earlier plan's hold goes
                    }
                    plan_app_claim(&owner, find(cur, &row_id), p, &inner.tab, now, out)
                });
                let (cp, h) = planned.ok()?;
                (ticket, hold) = (Some(cp.ticket), Some(h));
                Some(cp.plan)
            });
            // `transact_records` itself, not `Store::transact`: no future of its own (issue 35).
            let r = inner
                .store
                .transact_records(vec![(scopes, planner)], Durability::Default, &RecordPort::default(), &[])
                .await
                .map(Transacted::outcome);
            let committed = matches!(r, Ok(Some(ReplaceOutcome::Committed)));
            if let (false, Some(h)) = (committed, hold) {
                inner.outstanding.with(|out| out.end(h));
            }
            r?;
            Ok(match (committed, ticket) {
                (true, Some(t)) => {
                    inner.notifier.changed("claim", Some(&owner));
                    ticket_to_js(&t)
                }
                _ => JsValue::NULL,
            })
        }))
    }

    /// Applies an answer the app obtained itself (SPEC §6): `"applied"`, or `"not-mine"`
    /// when the row is gone, its claim is no longer this ticket's, or the ticket is another tab's.
    #[wasm_bindgen(unchecked_return_type = "Promise<\"applied\" | \"not-mine\">")]
    pub fn ack(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue,
        #[wasm_bindgen(js_name = rowId, unchecked_param_type = "string")] row_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Ticket")] ticket: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Outcome")] outcome: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "AckPorts")] ports: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let ticket: Ticket = Ticket::from_json(&fields_from_js(&ticket, "ticket")?).map_err(|e| {
                OutboxError::invalid(outbox_core::text::concat(&["`ticket` must be {tabId, fence}: ", &e]))
            })?;
            let outcome = outcome_from_js(&outcome)?;
            let ports = Ports::parse(&ports, false)?;
            inner.counters.borrow_mut().record(&outcome);
            let mine = ticket.tab_id == inner.tab.tab_id;
            let fence = ticket.fence;
            // Not an `async` block of its own: no nested future (issue 35).
            let seen = inner.store.read_one(&AppStores::None, Read::Row(&row_id)).await;
            let seen = seen.and_then(Store::rows_of);
            let applied = match seen.map(|seen| own_row(&seen, &owner)) {
                Ok(Some(row)) => {
                    let mut opts = FlushOptions::new(owner.clone(), inner.tab.clone());
                    opts.backoff = inner.backoff;
                    opts.has_prepare = ports.prepare_successor.is_some();
                    opts.has_find = ports.find_create_receipt.is_some();
                    let flush = inner.outstanding.with(|o| Flush::for_answer(opts, row, ticket, outcome, o));
                    drive(&inner, flush, &ports).await.map(|r| r.applied > 0).map_err(|f| f.error)
                }
                Ok(None) => Ok(false),
                Err(e) => Err(e),
            };
            // The app's attempt has its answer, now applied (or not mine, the row gone, or
            // failed): its claim no longer holds the record in this tab (§8). Not before:
            // until the answer is written the row still looks claimable after its lease.
            if mine {
                inner.outstanding.with(|o| o.end_app_claim(&owner, &row_id, fence));
            }
            Ok(JsValue::from_str(if applied? { "applied" } else { "not-mine" }))
        }))
    }

    /// Every stored value this version cannot decode, of every owner: `{id, owner, error, raw}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<UndecodableRow[]>")]
    pub fn undecodable(&self) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let out = Array::new();
            let read = inner.store.read_one(&AppStores::None, Read::Values(None)).await?;
            for raw in &Store::rows_of(read)? {
                if let Stored::Undecodable(u) = Stored::from_value(raw) {
                    out.push(&undecodable_entry(&u));
                }
            }
            Ok(JsValue::from(out))
        }))
    }

    /// Counts by state, the oldest queued age, undecodable rows and this tab's counters
    /// (SPEC §12), for `owner` or for every owner.
    #[wasm_bindgen(unchecked_return_type = "Promise<Metrics>")]
    pub fn metrics(&self, #[wasm_bindgen(unchecked_optional_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(Box::pin(async move {
            inner.check_open()?;
            let owner = if owner.is_undefined() || owner.is_null() { None } else { Some(owner_arg(&owner)?) };
            let read = Read::Values(owner.as_deref());
            let rows = Store::rows_of(inner.store.read_one(&AppStores::None, read).await?)?;
            let counters = *inner.counters.borrow();
            Ok(metrics_to_js(&compute(&rows, owner.as_deref(), &counters, inner.now())))
        }))
    }
}
