//! What a panic leaves behind. A panic is a bug, never an answer to bad input (that is a
//! coded error). The package's module is built with panics as traps
//! (`-Cpanic=immediate-abort`, scripts/build.sh: −3.9 KB gzip with the hook left out): the panicking code executes
//! `unreachable`, no destructor runs, no hook, and the future being polled is never polled
//! again. The trap reaches JavaScript as a `WebAssembly.RuntimeError` thrown out of the
//! call into the module; the package's glue catches it at every call into the module
//! (`scripts/guard-traps.mjs`) and calls [`clean_up`], then [`report`], which do what
//! unwinding would have done:
//!
//! - it aborts every readwrite transaction whose writes are not all issued
//!   ([`crate::idb::transaction::Armed`]); IndexedDB would otherwise commit the half that
//!   was (SPEC §4: all or nothing). Only a trap while a call's future is polled does: one
//!   outside any call, or in the task of a call that trapped before, woken again (its
//!   future was never dropped, and its next poll traps at once), issued no write;
//! - it rejects the API call whose future was being polled with `INTERNAL` ([`guarded`]),
//!   which would otherwise never settle;
//! - it schedules the futures again: the calls woken in the same tick after the one that
//!   trapped would otherwise wait unpolled until something else is scheduled;
//! - it releases the turns of flushes (`turn.rs`), which no dropped future will;
//! - it writes the message to `console.error`: the trap's text and, where the engine's
//!   stack gives them (V8, SpiderMonkey), the index of the module's function and the offset
//!   where it happened (`wasm-function[N]:0x…`), which locate it in the build of that
//!   version.
//!
//! A build with panic messages (the tests', or `OUTBOX_PREBUILT_STD=1`) installs a panic
//! hook instead ([`install`]), which does the same with the panic's message before the
//! trap; the guard then leaves the trap unreported.
//!
//! The instance goes on: other calls, old handles and new `Outbox.open`s keep working
//! (`tests/panic.rs`, `tests/e2e/trap.spec.ts`). wasm-bindgen's `schedule_reinit` would
//! give a fresh instance instead, but the glue of 0.2.130 checks a handle's instance before
//! the reinit runs, so the first call on an app's existing `Outbox` would run with a
//! dangling pointer in the fresh instance.

use crate::error::OutboxError;
use js_sys::{Function, Promise};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::spawn_local;

thread_local! {
    /// The `reject` of the API call whose future is being polled.
    static POLLED: Cell<Option<Rc<Function>>> = const { Cell::new(None) };
}

/// What a panic or a trap leaves behind, cleaned up: the transactions it left half-issued
/// aborted and the flushes' turns released. Allocates nothing, so that it works even after
/// a trap in the allocator (its message is reported after, by [`report`]).
///
/// Writes are issued only while a call's future is polled (every task of the module is
/// one, [`guarded`]). A trap with none being polled — outside any call, or in a call's task
/// woken again after its panic (whose report emptied [`POLLED`]) — has left no write
/// half-issued, so it aborts nothing: another call's transaction, armed and waiting for its
/// reads, goes on.
pub fn clean_up() {
    if POLLED.with(|p| {
        let call = p.take();
        let polled = call.is_some();
        p.set(call);
        polled
    }) {
        crate::idb::transaction::abort_armed();
    }
    crate::turn::release_all();
}

/// The API call being polled rejected with `INTERNAL` and `message`, and `message` written
/// to the console.
pub fn report(message: &str) {
    if let Some(reject) = POLLED.with(Cell::take) {
        let _ = reject.call1(&JsValue::NULL, &OutboxError::internal(message.to_owned()).into());
    }
    let _ = crate::js::console_error_text(message);
    // The trap cut short the run of the futures woken in this tick: those after the one
    // that trapped wait, unpolled, until a future is scheduled again (and one whose
    // transaction is armed would see it commit half-issued). Something is scheduled now
    // (after the message: should this trap too, the message is out).
    spawn_local(std::future::ready(()));
}

thread_local! {
    /// A build with a panic hook: the hook cleaned up and reported the panic whose trap the
    /// glue's guard is about to report again.
    static HOOK_REPORTED: Cell<bool> = const { Cell::new(false) };
}

/// The glue's guard (`scripts/guard-traps.mjs`) reports a trap here first. Not part of the
/// API.
#[wasm_bindgen(js_name = "__outboxTrapped", skip_typescript)]
pub fn trapped_js() {
    clean_up();
}

/// Then here, with the message. Not part of the API.
#[wasm_bindgen(js_name = "__outboxTrapReport", skip_typescript)]
pub fn trap_report_js(message: &str) {
    if !HOOK_REPORTED.with(|r| r.replace(false)) {
        report(message);
    }
}

/// Installs the hook, in place of any other (once per instance, at start; again in a test,
/// in place of the test harness's), in a build whose panics have messages. After a panic
/// the instance counts as panicking for good, which `set_hook` refuses: the hook already
/// there stays.
#[cfg(not(panic = "immediate-abort"))]
pub fn install() {
    if std::thread::panicking() {
        return;
    }
    std::panic::set_hook(Box::new(move |info| {
        // A module built without panic locations (`-Z location-detail=none`) reads
        // `<redacted>:0:0`: the message stands alone there; the tests' builds name the place.
        let what = info.payload_as_str().unwrap_or("a panic");
        let mut message = format!("outbox-idb: internal error, please report it: {what}");
        if let Some(at) = info.location().filter(|at| at.line() != 0) {
            message.push_str(" (at ");
            message.push_str(at.file());
            for n in [at.line(), at.column()] {
                message.push(':');
                crate::js::push_decimal(&mut message, n as usize);
            }
            message.push(')');
        }
        clean_up();
        report(&message);
        HOOK_REPORTED.with(|r| r.set(true));
    }));
}

/// A promise of `fut` that also rejects, with `INTERNAL`, when `fut` panics.
pub fn guarded(fut: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>) -> Promise {
    let (promise, resolve, reject) = crate::js::with_resolvers();
    spawn_local(Settle { call: Polled { fut, reject: Rc::new(reject) }, resolve });
    promise
}

/// A call's future settling its promise: a plain future, not an `async` block (no states
/// and drop glue of its own, issue 35).
struct Settle {
    call: Polled,
    resolve: Function,
}

impl Future for Settle {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let Poll::Ready(out) = Pin::new(&mut this.call).poll(cx) else { return Poll::Pending };
        let _ = match out {
            Ok(v) => this.resolve.call1(&JsValue::NULL, &v),
            Err(e) => this.call.reject.call1(&JsValue::NULL, &e),
        };
        Poll::Ready(())
    }
}

/// A call's future, polled with its `reject` in [`POLLED`].
struct Polled {
    fut: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>,
    reject: Rc<Function>,
}

impl Future for Polled {
    type Output = Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let outer = POLLED.with(|p| p.replace(Some(this.reject.clone())));
        let out = this.fut.as_mut().poll(cx);
        POLLED.with(|p| p.set(outer));
        out
    }
}
