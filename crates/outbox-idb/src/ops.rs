//! What the commands (`commands.rs`, `admin.rs`) share over the store: one strict replace
//! with the app's record writes, the decodable row of an owner read outside any write, and
//! an owner-wide change planned twice.

use crate::args::owner_arg;
use crate::idb::records::AppStores;
use crate::idb::replace::{Planner, RecordPort, Transacted};
use crate::idb::store::Read;
use crate::idb::{Durability, Store};
use crate::inner::Inner;
use outbox_core::{decode, ReplaceOutcome, Scope};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// One strict replace over `scopes` with the app's record `writes`, which commit only if
/// the replace does: what its callers give [`Store::transact_records`] (with
/// [`Durability::Strict`]); whether it committed is [`committed`]. A plain function: the
/// callers await the transaction themselves, no future of its own (issue 35).
pub fn with_records<'a>(
    scopes: Vec<Scope>,
    writes: Vec<outbox_core::records::RecordWrite>,
    planner: Planner<'a>,
) -> (Vec<(Vec<Scope>, Planner<'a>)>, RecordPort<'a>) {
    let port = RecordPort { stores: AppStores::of(&writes), reconcile: None };
    let planner: Planner<'_> = Box::new(move |cur| {
        let mut plan = planner(cur)?;
        plan.records = writes;
        Some(plan)
    });
    (vec![(scopes, planner)], port)
}

/// Whether the one replace of a transaction committed.
pub fn committed(done: &Transacted) -> bool {
    done.outcomes.first() == Some(&Some(ReplaceOutcome::Committed))
}

/// The decodable row of `owner` in `seen`, a read of one row's `Id` scope (outside any
/// write). A plain function: the callers await the read themselves, no future of its own
/// (issue 35).
pub fn own_row(seen: &[Value], owner: &str) -> Option<outbox_core::Row> {
    seen.first().and_then(|r| decode(r).ok()).filter(|r| r.owner == owner)
}

/// An API call's body, made a promise by `outbox::promise`: one type of future (boxed) for
/// every exported method, so what turns it into a promise is built into the wasm module
/// once, not once per method (about 19 KB raw, issue 35). Here, in the driver layer, as
/// the owner-wide commands' body is one.
pub(crate) type Call = Pin<Box<dyn Future<Output = crate::error::Result<JsValue>>>>;

/// Plans a change of all of one owner's rows; also says how many rows it changes.
pub type OwnerPlanner = fn(&str, &[Value]) -> Option<(outbox_core::ReplacePlan, usize)>;

/// An owner-wide change (`resumeHeld`, `purgeOwner`): read the owner's queue, plan, then
/// re-plan inside one strict transaction over the rows the first plan named. The call's
/// body itself, resolving with the number of rows changed: no wrapper future per command
/// (issue 35).
pub fn owner_wide(inner: Rc<Inner>, owner: JsValue, what: &'static str, planner: OwnerPlanner) -> Call {
    Box::pin(async move {
        inner.check_open()?;
        let owner = owner_arg(&owner)?;
        let read = inner.store.read_one(&AppStores::None, Read::Queue { owner: &owner, keys: false }).await?;
        let rows = Store::rows_of(read)?;
        let Some((first, _)) = planner(&owner, &rows) else { return Ok(JsValue::from(0_u32)) };
        let mut n = 0;
        let plan: Planner<'_> = Box::new(|cur| {
            let (plan, count) = planner(&owner, cur)?;
            n = count;
            Some(plan)
        });
        // `transact_records` itself, not `Store::transact`: no future of its own (issue 35).
        let port = RecordPort::default();
        inner.store.transact_records(vec![(first.scopes, plan)], Durability::Strict, &port, &[]).await?;
        if n > 0 {
            inner.notifier.changed(what, Some(&owner));
        }
        Ok(JsValue::from(n as u32))
    })
}
