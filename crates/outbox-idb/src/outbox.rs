//! The `Outbox` class of the npm package (SPEC §15): opening, identity, subscribe, close,
//! and `flush`. The other commands are in [`crate::commands`].

use crate::convert::report_to_js;
use crate::driver::{drive, Ports};
use crate::error::{OutboxError, Result};
use crate::idb::Store;
use crate::inner::{Inner, Options};
use crate::ops::Call;
use js_sys::{Function, Promise};
use outbox_core::{Flush, FlushOptions};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use wasm_bindgen::prelude::*;

/// A crash-safe, multi-tab offline outbox over one IndexedDB database.
///
/// Methods: `enqueue`, `rows`, `flush`, `claim`, `ack`, `resumeHeld`, `retryBlocked`,
/// `discard`, `undecodable`, `purgeOwner`, `metrics` (async); `subscribe`, `close`,
/// `dbName`, `tabId` (sync).
#[wasm_bindgen(js_name = Outbox)]
pub struct Outbox {
    pub(crate) inner: Rc<Inner>,
}

/// Runs an async API body as a promise that rejects with a coded `Error`. A panic inside
/// rejects it with `INTERNAL` ([`crate::panic`]).
pub(crate) fn promise(fut: Call) -> Promise {
    crate::panic::guarded(Box::pin(Coded(fut)))
}

/// An API call's body whose error is the coded `Error` thrown to JavaScript: a plain
/// future, not an `async` block (no states and drop glue of its own, issue 35).
struct Coded(Call);

impl Future for Coded {
    type Output = std::result::Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(|r| r.map_err(JsValue::from))
    }
}

impl Outbox {
    /// `Outbox.open` for Rust callers (the tests): the same future as `open`'s, resolving
    /// to the outbox itself instead of its `JsValue`.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` for bad options; `BLOCKED` when another tab keeps the database
    /// from opening for `openTimeoutMs`; `STORAGE` or `QUOTA` when it cannot be opened.
    pub fn open_with(options: JsValue) -> impl Future<Output = Result<Outbox>> {
        Outbox::opening(options)
    }

    /// Opening, one body for `open` (`T` = `JsValue`) and `open_with` (`T` = `Outbox`), so
    /// that the tests open as the JS API does; `open` boxes this future itself, no nested
    /// one (issue 35). An `async move` block, not an `async fn`: that would keep `options`
    /// twice in its state, as the argument and as the body's local (+27 B gzip).
    #[allow(clippy::manual_async_fn)]
    fn opening<T: From<Outbox>>(options: JsValue) -> impl Future<Output = Result<T>> {
        async move {
            let opts = Options::parse(&options)?;
            let store = Store::new_app(&opts.db_name, opts.open_timeout_ms, opts.records.clone());
            store.connect().await?;
            Ok(Outbox { inner: Rc::new(Inner::new(store, opts)) }.into())
        }
    }
}

#[wasm_bindgen(js_class = Outbox)]
impl Outbox {
    /// Opens (creating or upgrading) the outbox database. Rejects with code `BLOCKED` when
    /// another tab holds an older version of the database open for `openTimeoutMs`
    /// (default 5000): close or reload that tab, then open again.
    #[wasm_bindgen(unchecked_return_type = "Promise<Outbox>")]
    pub fn open(#[wasm_bindgen(unchecked_param_type = "OpenOptions")] options: JsValue) -> Promise {
        promise(Box::pin(Outbox::opening::<JsValue>(options)))
    }

    // Both names are returned as JS strings made here, not as Rust `String`s handed over:
    // no copy to allocate and free across the boundary in their glue (issue 35).
    /// The IndexedDB database name.
    #[wasm_bindgen(getter, js_name = dbName, unchecked_return_type = "string")]
    pub fn db_name(&self) -> JsValue {
        self.inner.store.name().into()
    }

    /// This tab's id.
    #[wasm_bindgen(getter, js_name = tabId, unchecked_return_type = "string")]
    pub fn tab_id(&self) -> JsValue {
        self.inner.tab.tab_id.as_str().into()
    }

    /// Calls `callback({tabId, change, owner})` after any tab commits a change. Returns a
    /// function that unsubscribes.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(notice: ChangeNotice) => void")] callback: JsValue,
    ) -> std::result::Result<JsValue, JsValue> {
        self.inner.check_open()?;
        let f: Function =
            callback.dyn_into_function().ok_or_else(|| OutboxError::invalid("subscribe needs a function"))?;
        let id = self.inner.notifier.subscribe(f);
        let inner = Rc::downgrade(&self.inner);
        // Callable any number of times (only the first does anything): an app's cleanup
        // may well run twice.
        // Typed as the crate's event handlers, its argument unused: one signature, one
        // invoke shim in the module (issue 35; the JS function is the same: `(...args)`).
        let unsubscribe = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
            if let Some(i) = inner.upgrade() {
                i.notifier.unsubscribe(id);
            }
        });
        Ok(unsubscribe.into_js_value())
    }

    /// Closes the database connection and the channel; later calls, and calls still
    /// waiting for a reopen, fail with `CLOSED`. An outbox freed (`free()`) or collected
    /// without `close()` closes both as well (`Drop` of the store and the notifier).
    pub fn close(&self) {
        self.inner.store.close();
        self.inner.notifier.close();
    }

    /// Sends the owner's sendable rows (SPEC §8): claims, sends, applies answers, converts
    /// intents and writes conflict successors, and drains what becomes sendable meanwhile.
    #[wasm_bindgen(unchecked_return_type = "Promise<FlushReport>")]
    pub fn flush(&self, #[wasm_bindgen(unchecked_param_type = "FlushOptions")] options: JsValue) -> Promise {
        let inner = self.inner.clone();
        crate::panic::guarded(Box::pin(async move {
            inner.check_open()?;
            let (opts, ports) = flush_options(&inner, &options)?;
            // Flushes of one owner take turns across tabs (turn.rs); the turn ends when
            // this flush does, however it ends. An offline flush does nothing (§8): it
            // resolves at once, without waiting for a turn.
            let until_deadline = opts.deadline.map(|d| d.0.saturating_sub(inner.now().0) as f64);
            let _turn =
                if opts.offline { None } else { Some(crate::turn::take(&inner, &opts.owner, until_deadline).await) };
            inner.check_open()?;
            let flush = inner.outstanding.with(|o| Flush::new(opts, o));
            // A failure part way rejects with the report so far (`error.report`): the
            // receipts of answers already applied are not lost with it.
            let report = drive(&inner, flush, &ports).await?;
            Ok(report_to_js(&report))
        }))
    }
}

/// `flush`'s options and ports, checked in this order: a plain function, out of `flush`'s
/// state machine (issue 35; not inlined back into it: −33 B gzip).
#[inline(never)]
fn flush_options(inner: &Inner, options: &JsValue) -> std::result::Result<(FlushOptions, Ports), JsValue> {
    let owner = crate::args::owner_arg(&crate::js::get(options, "owner"))?;
    let ports = Ports::parse(options, true)?;
    let mut opts = FlushOptions::new(owner, inner.tab.clone());
    opts.backoff = inner.backoff;
    opts.concurrency = inner.concurrency;
    opts.has_prepare = ports.prepare_successor.is_some();
    opts.has_find = ports.find_create_receipt.is_some();
    // A number or absent: a string or a `Date` is refused, never silently ignored.
    let get = |k: &str| -> std::result::Result<Option<f64>, JsValue> {
        match crate::js::get(options, k) {
            v if v.is_undefined() || v.is_null() => Ok(None),
            v => v.as_f64().map(Some).ok_or_else(|| OutboxError::invalid_key(k, "` must be a number").into()),
        }
    };
    if let Some(m) = get("maxRows")? {
        if !(m >= 0.0 && m.is_finite()) {
            return Err(OutboxError::invalid("`maxRows` must be a number ≥ 0").into());
        }
        opts.max_rows = Some(m as u64);
    }
    if let Some(d) = get("deadline")? {
        // An instant of this outbox's clock (`now`), e.g. `Date.now() + 20_000`.
        opts.deadline = Some(
            outbox_core::Millis::from_json(&d.into())
                .ok_or_else(|| OutboxError::invalid("`deadline` must be a finite time in ms (the outbox's clock)"))?,
        );
    }
    if let Some(c) = get("concurrency")? {
        // As at `open`: NaN, Infinity or 0 is a mistake, not 1 or every row at once.
        if !(c >= 1.0 && c.is_finite()) {
            return Err(OutboxError::invalid("`concurrency` must be a number ≥ 1").into());
        }
        opts.concurrency = c as usize;
    }
    if let Some(t) = get("onlineSince")? {
        // §10: when the network came back, an instant of this outbox's clock.
        opts.online_since =
            Some(outbox_core::Millis::from_json(&t.into()).ok_or_else(|| {
                OutboxError::invalid("`onlineSince` must be a finite time in ms (the outbox's clock)")
            })?);
    }
    opts.offline =
        crate::args::flag_arg(options, "offline").ok_or_else(|| OutboxError::invalid("`offline` must be a boolean"))?;
    Ok((opts, ports))
}

trait DynIntoFunction {
    fn dyn_into_function(self) -> Option<Function>;
}

impl DynIntoFunction for JsValue {
    fn dyn_into_function(self) -> Option<Function> {
        use wasm_bindgen::JsCast;
        self.dyn_into::<Function>().ok()
    }
}
