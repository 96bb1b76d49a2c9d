//! The outbox commands besides `flush` (SPEC §15). Each one is a read and/or one replace
//! transaction planned by `outbox_core`; bad arguments fail before anything is written.

use crate::args::{id_arg, owner_arg};
use crate::convert::{fields_from_js, from_js, outcome_from_js, row_to_js, to_js, unsendable_reason};
use crate::driver::{drive, Ports};
use crate::error::OutboxError;
use crate::idb::records::AppStores;
use crate::idb::replace::{Planner, RecordPort};
use crate::idb::Durability;
use crate::outbox::{promise, Outbox};
use js_sys::{Array, Promise};
use outbox_core::admin::{plan_discard, plan_purge_owner, plan_resume_held, plan_retry_blocked};
use outbox_core::claim::plan_app_claim;
use outbox_core::codec::Stored;
use outbox_core::enqueue::{enqueue_scope, plan_enqueue};
use outbox_core::input::NewOperation;
use outbox_core::metrics::compute;
use outbox_core::records::{enqueue_records, parse_writes, row_records, WriteInput};
use outbox_core::row::{find_stored as find, stored_order_key};
use outbox_core::{decode, Flush, FlushOptions, ReplaceOutcome, Scope, Ticket};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

/// `{id, owner, undecodable: true, error, raw}`; `raw` is the value as stored, including
/// what JSON cannot hold (SPEC §3 rule 3).
fn undecodable_entry(u: &outbox_core::Undecodable) -> JsValue {
    let error = unsendable_reason(&u.raw).unwrap_or_else(|| u.error.to_string());
    let entry = to_js(&json!({"id": u.id, "owner": u.owner, "undecodable": true, "error": error}));
    let _ = js_sys::Reflect::set(&entry, &"raw".into(), &row_to_js(&u.raw));
    entry
}

/// `options.writes` of `enqueue`: the app's record writes (none when absent).
fn writes_arg(options: &JsValue) -> Result<Vec<WriteInput>, OutboxError> {
    if options.is_undefined() || options.is_null() {
        return Ok(vec![]);
    }
    let writes = match fields_from_js(options, "options")?.get_mut("writes") {
        Some(w) => w.take(),
        None => Value::Null,
    };
    parse_writes(&writes, "options.writes").map_err(|e| OutboxError::invalid(e.0))
}

/// One strict replace over `scopes` with the app's record `writes`, which commit only if
/// the replace does. Returns whether it committed and the records it changed.
async fn with_records<'a>(
    inner: &'a crate::inner::Inner,
    scopes: Vec<Scope>,
    writes: Vec<outbox_core::records::RecordWrite>,
    planner: impl FnOnce(&[Value]) -> Option<outbox_core::ReplacePlan> + 'a,
) -> Result<(bool, Vec<crate::idb::records::Changed>), OutboxError> {
    let port = RecordPort { stores: AppStores::of(&writes), reconcile: None };
    let planner: Planner<'_> = Box::new(move |cur| {
        let mut plan = planner(cur)?;
        plan.records = writes;
        Some(plan)
    });
    let done = inner.store.transact_records(vec![(scopes, planner)], Durability::Strict, &port, &[]).await?;
    Ok((done.outcomes.first() == Some(&Some(ReplaceOutcome::Committed)), done.changed))
}

/// A required app store name.
fn app_store_arg(v: &JsValue) -> Result<String, OutboxError> {
    // The queue's own store is read through `rows` (one owner's, §11), never as records.
    v.as_string()
        .filter(|s| !s.is_empty() && s != outbox_core::records::QUEUE_STORE)
        .ok_or_else(|| OutboxError::invalid("`store` must be an app store's name"))
}

/// The decodable row `id` of `owner`, as stored now (read outside any write).
async fn own_row(inner: &crate::inner::Inner, owner: &str, id: &str) -> Result<Option<outbox_core::Row>, OutboxError> {
    let seen = inner.store.read(&[Scope::Id(id.to_owned())]).await?;
    Ok(seen.first().and_then(|r| decode(r).ok()).filter(|r| r.owner == owner))
}

/// Plans a change of all of one owner's rows; also says how many rows it changes.
type OwnerPlanner = fn(&str, &[Value]) -> Option<(outbox_core::ReplacePlan, usize)>;

/// An owner-wide change (`resumeHeld`, `purgeOwner`): read the owner's queue, plan, then
/// re-plan inside one strict transaction over the rows the first plan named.
async fn owner_wide(
    inner: &std::rc::Rc<crate::inner::Inner>,
    owner: &JsValue,
    what: &str,
    planner: OwnerPlanner,
) -> Result<usize, OutboxError> {
    inner.check_open()?;
    let owner = owner_arg(owner)?;
    let rows = inner.store.read_owner(&owner).await?;
    let Some((first, _)) = planner(&owner, &rows) else { return Ok(0) };
    let mut n = 0;
    inner
        .store
        .transact(&first.scopes, Durability::Strict, |cur| {
            let (plan, count) = planner(&owner, cur)?;
            n = count;
            Some(plan)
        })
        .await?;
    if n > 0 {
        inner.notifier.changed(what, Some(&owner));
    }
    Ok(n)
}

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
        promise(async move {
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
        })
    }

    /// The app record under `key` in `store`, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Promise<unknown>")]
    pub fn record(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] store: JsValue,
        #[wasm_bindgen(unchecked_param_type = "IDBValidKey")] key: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let store = app_store_arg(&store)?;
            inner.store.read_record(&store, &key).await
        })
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
        promise(async move {
            inner.check_open()?;
            let store = app_store_arg(&store)?;
            let get = |k: &str| {
                if query.is_object() {
                    js_sys::Reflect::get(&query, &k.into()).unwrap_or(JsValue::UNDEFINED)
                } else {
                    JsValue::UNDEFINED
                }
            };
            let index = match get("index") {
                i if i.is_undefined() || i.is_null() => None,
                i => Some(
                    i.as_string()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| OutboxError::invalid("`query.index` must be an index name"))?,
                ),
            };
            inner.store.read_records(&store, index.as_deref(), &get("range")).await
        })
    }

    /// Every row of `owner` in `(savedAt, id)` order; undecodable ones as
    /// `{id, owner, undecodable: true, error, raw}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<Array<OutboxRow | UndecodableRow>>")]
    pub fn rows(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let owner = owner_arg(&owner)?;
            let mut out: Vec<(Value, Stored)> = inner
                .store
                .read_owner_values(&owner)
                .await?
                .into_iter()
                .map(|raw| {
                    let stored = Stored::from_value(&raw);
                    (raw, stored)
                })
                .filter(|(_, stored)| match stored {
                    Stored::Row(r) => r.owner == owner,
                    Stored::Undecodable(u) => u.owner.as_deref() == Some(&owner),
                })
                .collect();
            outbox_core::sort::stable_by_key(&mut out, |(raw, _)| stored_order_key(raw));
            let out: Array = out
                .iter()
                .map(|(raw, stored)| match stored {
                    Stored::Row(_) => row_to_js(raw),
                    Stored::Undecodable(u) => undecodable_entry(u),
                })
                .collect();
            Ok(JsValue::from(out))
        })
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
        promise(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let seen = inner.store.read(&[Scope::Id(row_id.clone())]).await?;
            let pred = seen.first().and_then(|r| decode(r).ok()).and_then(|r| r.successor_of);
            let mut scopes = vec![Scope::Id(row_id.clone())];
            scopes.extend(pred.clone().map(Scope::Id));
            let now = inner.now();
            let mut ticket = None;
            // §8: the claim holds its record in this tab until the app's `ack` of it.
            let mut hold = None;
            let r = inner
                .store
                .transact(&scopes, Durability::Default, |cur| {
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
                })
                .await;
            let committed = matches!(r, Ok(Some(ReplaceOutcome::Committed)));
            if let (false, Some(h)) = (committed, hold) {
                inner.outstanding.with(|out| out.end(h));
            }
            r?;
            Ok(match (committed, ticket) {
                (true, Some(t)) => {
                    inner.notifier.changed("claim", Some(&owner));
                    to_js(&t)
                }
                _ => JsValue::NULL,
            })
        })
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
        promise(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let ticket: Ticket = Ticket::from_json(&fields_from_js(&ticket, "ticket")?)
                .map_err(|e| OutboxError::invalid(format!("`ticket` must be {{tabId, fence}}: {e}")))?;
            let outcome = outcome_from_js(&outcome)?;
            let ports = Ports::parse(&ports, false)?;
            inner.counters.borrow_mut().record(&outcome);
            // The app's attempt has its answer, whatever comes of it below (the row may be
            // gone): its claim no longer holds the record in this tab (§8).
            if ticket.tab_id == inner.tab.tab_id {
                inner.outstanding.with(|o| o.end_app_claim(&owner, &row_id, ticket.fence));
            }
            let Some(row) = own_row(&inner, &owner, &row_id).await? else {
                return Ok(JsValue::from_str("not-mine"));
            };
            let mut opts = FlushOptions::new(owner.clone(), inner.tab.clone());
            opts.backoff = inner.backoff;
            opts.has_prepare = ports.prepare_successor.is_some();
            opts.has_find = ports.find_create_receipt.is_some();
            let flush = inner.outstanding.with(|o| Flush::for_answer(opts, row, ticket, outcome, o));
            let report = drive(&inner, flush, &ports).await.map_err(|f| f.error)?;
            Ok(JsValue::from_str(if report.applied > 0 { "applied" } else { "not-mine" }))
        })
    }

    /// Held rows of `owner` back to queued after a new login; resolves with their number.
    #[wasm_bindgen(js_name = resumeHeld, unchecked_return_type = "Promise<number>")]
    pub fn resume_held(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let n = owner_wide(&inner, &owner, "resumeHeld", plan_resume_held).await?;
            Ok(JsValue::from(n as u32))
        })
    }

    /// Re-issues a blocked row under a new operation id (SPEC §7), with `body` replacing its
    /// body when given. Resolves `true` if it was re-issued.
    #[wasm_bindgen(js_name = retryBlocked, unchecked_return_type = "Promise<boolean>")]
    pub fn retry_blocked(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue,
        #[wasm_bindgen(js_name = rowId, unchecked_param_type = "string")] row_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "unknown")] body: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EnqueueOptions")] options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let writes = writes_arg(&options)?;
            // Left out (`undefined`): the body is kept. Given: checked as at enqueue (SPEC §3
            // rule 4) — JSON, any value but `null` for a create or an update.
            let body = if body.is_undefined() { None } else { Some(from_js(&body, "body")?) };
            let Some(row) = own_row(&inner, &owner, &row_id).await? else {
                return Ok(JsValue::FALSE);
            };
            if let Some(b) = &body {
                outbox_core::input::check_body(row.kind, b)?;
            }
            let new_id = crate::ids::new_id();
            let records = row_records(&writes, &row.target);
            let scopes = vec![Scope::Id(row_id.clone()), row.scope()];
            let (ok, changed) = with_records(&inner, scopes, records, |cur| {
                plan_retry_blocked(&owner, &row_id, body.as_ref(), cur, &new_id)
            })
            .await?;
            if ok {
                inner.notifier.changed_records("retryBlocked", Some(&owner), &changed);
            }
            Ok(JsValue::from_bool(ok))
        })
    }

    /// Removes one row of `owner` (`null` for an undecodable row whose owner cannot be
    /// read). Resolves `false` if there is no such row or it is in flight.
    #[wasm_bindgen(unchecked_return_type = "Promise<boolean>")]
    pub fn discard(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string | null")] owner: JsValue,
        #[wasm_bindgen(js_name = rowId, unchecked_param_type = "string")] row_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "EnqueueOptions")] options: JsValue,
    ) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let owner = if owner.is_null() { None } else { Some(owner_arg(&owner)?) };
            let row_id = id_arg(&row_id)?;
            let writes = writes_arg(&options)?;
            // `atTarget` needs the row's target: read it first (the replace re-checks the row).
            let target = match writes.is_empty() {
                true => String::new(),
                false => inner
                    .store
                    .read(&[Scope::Id(row_id.clone())])
                    .await?
                    .first()
                    .and_then(|r| decode(r).ok())
                    .map(|r| r.target)
                    .unwrap_or_default(),
            };
            let now = inner.now();
            let lease = inner.tab.lease_ms;
            let (ok, changed) =
                with_records(&inner, vec![Scope::Id(row_id.clone())], row_records(&writes, &target), |cur| {
                    plan_discard(owner.as_deref(), find(cur, &row_id), now, lease).ok()
                })
                .await?;
            if ok {
                inner.notifier.changed_records("discard", owner.as_deref(), &changed);
            }
            Ok(JsValue::from_bool(ok))
        })
    }

    /// Every stored value this version cannot decode, of every owner: `{id, owner, error, raw}`.
    #[wasm_bindgen(unchecked_return_type = "Promise<UndecodableRow[]>")]
    pub fn undecodable(&self) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let out: Array = inner
                .store
                .read_all()
                .await?
                .iter()
                .filter_map(|raw| match Stored::from_value(raw) {
                    Stored::Undecodable(u) => Some(undecodable_entry(&u)),
                    Stored::Row(_) => None,
                })
                .collect();
            Ok(JsValue::from(out))
        })
    }

    /// Removes every decodable row of `owner` (e.g. at logout); undecodable rows are kept.
    #[wasm_bindgen(js_name = purgeOwner, unchecked_return_type = "Promise<number>")]
    pub fn purge_owner(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            let n = owner_wide(&inner, &owner, "purgeOwner", plan_purge_owner).await?;
            Ok(JsValue::from(n as u32))
        })
    }

    /// Counts by state, the oldest queued age, undecodable rows and this tab's counters
    /// (SPEC §12), for `owner` or for every owner.
    #[wasm_bindgen(unchecked_return_type = "Promise<Metrics>")]
    pub fn metrics(&self, #[wasm_bindgen(unchecked_optional_param_type = "string")] owner: JsValue) -> Promise {
        let inner = self.inner.clone();
        promise(async move {
            inner.check_open()?;
            let owner = if owner.is_undefined() || owner.is_null() { None } else { Some(owner_arg(&owner)?) };
            let rows = match &owner {
                Some(o) => inner.store.read_owner_values(o).await?,
                None => inner.store.read_all().await?,
            };
            let counters = *inner.counters.borrow();
            Ok(to_js(&compute(&rows, owner.as_deref(), &counters, inner.now())))
        })
    }
}
