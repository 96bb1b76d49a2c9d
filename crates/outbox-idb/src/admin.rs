//! The admin commands (SPEC §15, planned by `outbox_core::admin`): a new login's
//! `resumeHeld`, `retryBlocked` of a blocked row, `discard` of one row, `purgeOwner` at
//! logout. Bad arguments fail before anything is written.

use crate::args::{id_arg, owner_arg, writes_arg};
use crate::convert::from_js;
use crate::idb::records::AppStores;
use crate::idb::store::Read;
use crate::idb::{Durability, Store};
use crate::ops::{committed, own_row, owner_wide, with_records};
use crate::outbox::{promise, Outbox};
use js_sys::Promise;
use outbox_core::admin::{plan_discard, plan_purge_owner, plan_resume_held, plan_retry_blocked};
use outbox_core::records::row_records;
use outbox_core::row::find_stored as find;
use outbox_core::{decode, Scope};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(js_class = Outbox)]
impl Outbox {
    /// Held rows of `owner` back to queued after a new login; resolves with their number.
    #[wasm_bindgen(js_name = resumeHeld, unchecked_return_type = "Promise<number>")]
    pub fn resume_held(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        promise(owner_wide(self.inner.clone(), owner, "resumeHeld", plan_resume_held))
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
        promise(Box::pin(async move {
            inner.check_open()?;
            let (owner, row_id) = (owner_arg(&owner)?, id_arg(&row_id)?);
            let writes = writes_arg(&options)?;
            // Left out (`undefined`): the body is kept. Given: checked as at enqueue (SPEC §3
            // rule 4) — JSON, any value but `null` for a create or an update.
            let body = if body.is_undefined() { None } else { Some(from_js(&body, "body")?) };
            let read = inner.store.read_one(&AppStores::None, Read::Row(&row_id)).await?;
            // The rows read are not kept across the next await (issue 35).
            let Some(row) = own_row(&Store::rows_of(read)?, &owner) else {
                return Ok(JsValue::FALSE);
            };
            if let Some(b) = &body {
                outbox_core::input::check_body(row.kind, b)?;
            }
            let new_id = crate::ids::new_id();
            let records = row_records(&writes, &row.target);
            let scopes = vec![Scope::Id(row_id.clone()), row.scope()];
            let (items, port) = with_records(
                scopes,
                records,
                Box::new(|cur| plan_retry_blocked(&owner, &row_id, body.as_ref(), cur, &new_id)),
            );
            let done = inner.store.transact_records(items, Durability::Strict, &port, &[]).await?;
            let ok = committed(&done);
            if ok {
                inner.notifier.changed_records("retryBlocked", Some(&owner), &done.changed);
            }
            Ok(JsValue::from_bool(ok))
        }))
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
        promise(Box::pin(async move {
            inner.check_open()?;
            let owner = if owner.is_null() { None } else { Some(owner_arg(&owner)?) };
            let row_id = id_arg(&row_id)?;
            let writes = writes_arg(&options)?;
            // `atTarget` needs the row's target: read it first (the replace re-checks the row).
            let target = match writes.is_empty() {
                true => String::new(),
                false => Store::rows_of(inner.store.read_one(&AppStores::None, Read::Row(&row_id)).await?)?
                    .first()
                    .and_then(|r| decode(r).ok())
                    .map(|r| r.target)
                    .unwrap_or_default(),
            };
            let now = inner.now();
            let lease = inner.tab.lease_ms;
            let (items, port) = with_records(
                vec![Scope::Id(row_id.clone())],
                row_records(&writes, &target),
                Box::new(|cur| plan_discard(owner.as_deref(), find(cur, &row_id), now, lease).ok()),
            );
            let done = inner.store.transact_records(items, Durability::Strict, &port, &[]).await?;
            let ok = committed(&done);
            if ok {
                inner.notifier.changed_records("discard", owner.as_deref(), &done.changed);
            }
            Ok(JsValue::from_bool(ok))
        }))
    }

    /// Removes every decodable row of `owner` (e.g. at logout); undecodable rows are kept.
    #[wasm_bindgen(js_name = purgeOwner, unchecked_return_type = "Promise<number>")]
    pub fn purge_owner(&self, #[wasm_bindgen(unchecked_param_type = "string")] owner: JsValue) -> Promise {
        promise(owner_wide(self.inner.clone(), owner, "purgeOwner", plan_purge_owner))
    }
}
