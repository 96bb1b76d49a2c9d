//! One `indexedDB.open` request, bounded in time.
//!
//! An open that needs a version change waits until every other connection to the database
//! has closed, and an open queued behind another tab's pending upgrade waits for that one.
//! A tab running an older app (SPEC §1: older versions may still run in other tabs), or any
//! code without `versionchange` handling, may never close, and IndexedDB then waits
//! forever. So the request gets `timeout_ms` to reach `upgradeneeded` or `success`; after
//! that the call fails with `BLOCKED`. The clock stops at `upgradeneeded`: from there
//! nothing can block us, and creating an index over many rows may take its time.
//!
//! `blocked` alone is not an error: it only picks the message. It fires whenever another
//! connection is still open when our request runs, also while a well-behaved tab is about to
//! close on its `versionchange`.
//!
//! IndexedDB cannot cancel a request. One we gave up on is left with handlers that need no
//! Rust state, since the `Outbox` that made it may be gone by then: an upgrade that starts
//! later is aborted (the call failed; it must not change the schema behind the app's back),
//! and a connection that arrives later is closed, so it never lingers and blocks other tabs.

use crate::error::{dom_name, OutboxError};
use js_sys::Function;
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, IdbDatabase, IdbOpenDbRequest, IdbTransaction, IdbVersionChangeEvent};

/// Why an open failed.
pub(super) enum OpenError {
    /// `VersionError`: the database is at a newer version than the one asked for.
    Version,
    /// Anything else, coded (`BLOCKED`, `STORAGE`, `QUOTA`).
    Other(OutboxError),
}

/// Runs in `upgradeneeded` with the new connection, its versionchange transaction and the
/// version the database had. An error aborts the upgrade (nothing changes) and is the
/// open's error.
pub(super) type Upgrade = Box<dyn Fn(&IdbDatabase, &IdbTransaction, f64) -> Result<(), OutboxError>>;

/// Waits for `req` to open, at most `timeout_ms` before its upgrade starts. The connection
/// it returns (and a late one) closes itself on `versionchange`. A request that could not be
/// made (`Err`) fails at once.
pub(super) async fn wait(
    req: Result<IdbOpenDbRequest, OutboxError>,
    timeout_ms: u32,
    upgrade: Upgrade,
) -> Result<IdbDatabase, OpenError> {
    let req = req.map_err(OpenError::Other)?;
    let (promise, resolve, reject) = crate::js::with_resolvers();
    let timer = Rc::new(Cell::new(None::<JsValue>));
    let saw_blocked = Rc::new(Cell::new(false));
    let timed_out = Rc::new(Cell::new(false));
    let refused = Rc::new(Cell::new(None::<OutboxError>));

    // One handler for the request's four events, told apart by type, and for the timeout
    // (`setTimeout` calls it with no event): one closure type, its glue built into the
    // module once, instead of five (issue 35).
    let on_event = {
        let (req, timer, refused, saw_blocked, timed_out) =
            (req.clone(), timer.clone(), refused.clone(), saw_blocked.clone(), timed_out.clone());
        Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            if ev.is_undefined() {
                timed_out.set(true);
                // At once, not when this future next runs: `upgradeneeded` may be the next
                // task.
                abandon(&req);
                let _ = reject.call1(&JsValue::NULL, &JsValue::NULL);
                return;
            }
            let kind = ev.type_();
            if kind == "blocked" {
                saw_blocked.set(true);
                return;
            }
            clear_timeout(&timer);
            if kind == "success" {
                let db = req.result().unwrap_or(JsValue::UNDEFINED);
                // Before anything else can run: the connection lets go of other tabs'
                // upgrades from its first moment, whatever becomes of this future.
                db.unchecked_ref::<IdbDatabase>().set_onversionchange(Some(&close_on_versionchange()));
                let _ = resolve.call1(&JsValue::NULL, &db);
            } else if kind == "error" {
                let err = req.error().ok().flatten().map_or(JsValue::NULL, JsValue::from);
                let _ = reject.call1(&JsValue::NULL, &err);
            } else {
                // `upgradeneeded`
                let (Ok(db), Some(tx)) = (req.result(), req.transaction()) else { return };
                let old = ev.unchecked_ref::<IdbVersionChangeEvent>().old_version();
                if let Err(e) = upgrade(db.unchecked_ref(), &tx, old) {
                    refused.set(Some(e));
                    let _ = tx.abort();
                }
            }
        })
    };
    let handler = on_event.as_ref().unchecked_ref();
    req.set_onsuccess(Some(handler));
    req.set_onerror(Some(handler));
    req.set_onupgradeneeded(Some(handler));
    req.set_onblocked(Some(handler));
    timer.set(set_timeout(handler, timeout_ms));
    let mut pending = Pending { req, timer, settled: false, _handler: on_event };

    let result = JsFuture::from(promise).await;
    pending.settled = !timed_out.get();
    drop(pending);
    if let (Err(_), Some(e)) = (&result, refused.take()) {
        return Err(OpenError::Other(e));
    }
    match result {
        Ok(db) => Ok(db.unchecked_into()),
        Err(_) if timed_out.get() => Err(OpenError::Other(OutboxError::blocked(saw_blocked.get(), timeout_ms))),
        Err(e) if dom_name(&e).as_deref() == Some("VersionError") => Err(OpenError::Version),
        Err(e) => Err(OpenError::Other(OutboxError::storage("cannot open the database", &e))),
    }
}

/// The request while this module's handlers are on it, and the handlers. Dropped settled,
/// it detaches them; dropped unsettled (timed out, or the future was dropped), it abandons
/// the request. Either way no handler is left pointing at a freed closure: the closure is a
/// field, dropped after `drop` has replaced the handlers.
struct Pending {
    req: IdbOpenDbRequest,
    timer: Rc<Cell<Option<JsValue>>>,
    settled: bool,
    _handler: Closure<dyn FnMut(Event)>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        clear_timeout(&self.timer);
        if self.settled {
            self.req.set_onsuccess(None);
            self.req.set_onerror(None);
            self.req.set_onupgradeneeded(None);
            self.req.set_onblocked(None);
        } else {
            abandon(&self.req);
        }
    }
}

/// Leaves a request nobody waits for with handlers that need no Rust state: abort its
/// upgrade, close its connection, swallow its error.
fn abandon(req: &IdbOpenDbRequest) {
    STATELESS.with(|h| {
        req.set_onupgradeneeded(Some(&h.abort_upgrade));
        req.set_onsuccess(Some(&h.close_result));
        req.set_onerror(Some(&h.ignore));
    });
    req.set_onblocked(None);
}

/// The `onversionchange` of every connection: close it so that another tab's upgrade (or
/// delete) proceeds. It holds no Rust state, so it works after the `Store` that opened the
/// connection is gone (an `Outbox` freed or collected without `close()`); the store notices
/// the closed connection on its next transaction and reopens (see `store.rs`).
pub(super) fn close_on_versionchange() -> Function {
    STATELESS.with(|h| h.close_target.clone())
}

/// Event handlers without state, made once per thread and owned by JavaScript (no `eval`,
/// which a strict Content-Security-Policy forbids).
struct Stateless {
    close_target: Function,
    close_result: Function,
    abort_upgrade: Function,
    ignore: Function,
}

thread_local! {
    static STATELESS: Stateless = Stateless {
        close_target: handler(|ev| {
            if let Some(db) = ev.target().and_then(|t| t.dyn_into::<IdbDatabase>().ok()) {
                db.close();
            }
        }),
        close_result: handler(|ev| {
            if let Some(db) = target_request(&ev).and_then(|r| r.result().ok()) {
                db.unchecked_into::<IdbDatabase>().close();
            }
        }),
        abort_upgrade: handler(|ev| {
            if let Some(tx) = target_request(&ev).and_then(|r| r.transaction()) {
                let _ = tx.abort();
            }
        }),
        // The aborted upgrade's `error`: expected, not worth the console's attention.
        ignore: handler(|ev| ev.prevent_default()),
    };
}

fn handler(f: fn(Event)) -> Function {
    Closure::<dyn FnMut(Event)>::new(f).into_js_value().unchecked_into()
}

fn target_request(ev: &Event) -> Option<IdbOpenDbRequest> {
    ev.target().and_then(|t| t.dyn_into::<IdbOpenDbRequest>().ok())
}

/// `setTimeout` of the global scope (a window or a worker); `None` where there is none, and
/// then the open is not bounded. The handle is kept as given: a number in browsers, a
/// `Timeout` object in Node, which must reach `clearTimeout` as it is or the timer keeps
/// running (and a Node process alive) after the open succeeded.
fn set_timeout(f: &Function, ms: u32) -> Option<JsValue> {
    crate::js::global_fn("setTimeout")?.call2(&js_sys::global(), f, &ms.into()).ok()
}

fn clear_timeout(timer: &Cell<Option<JsValue>>) {
    if let (Some(id), Some(clear)) = (timer.take(), crate::js::global_fn("clearTimeout")) {
        let _ = clear.call1(&js_sys::global(), &id);
    }
}
