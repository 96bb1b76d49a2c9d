//! Flushes of one owner take turns across tabs (issue 12: pages draining one queue at once
//! were slower together than one page alone, even when they shared no row).
//!
//! A flush first asks for the Web Lock `outbox-flush:<dbName>:<owner>` and keeps it until it
//! ends, so while one tab drains an owner's queue the others wait instead of racing it, then
//! find what is left. The lock is only a courtesy: every row is still claimed by its own
//! compare-and-swap (SPEC §5), so a flush that runs without it is as safe as before, only
//! slower beside others. It runs without it when
//!
//! - the lock is not offered (`navigator.locks` missing: Node, old engines);
//! - the wait sees no change of this owner, from any tab, for `turnWaitMs`: the holder is
//!   stuck (a `send` that never answers) and its rows will be taken over after their lease;
//! - the wait has lasted a whole lease (`leaseMs`), whatever the changes.
//!
//! The browser releases the lock of a tab that closes or crashes; a flush that fails or
//! panics releases it when its [`Turn`] is dropped.

use crate::inner::Inner;
use futures_util::future::{select, Either};
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// By default a flush waits for another's turn while it sees that one change the owner's
/// rows at least once a second (a draining tab tells others every 50 ms, `notify.rs`).
pub const DEFAULT_TURN_WAIT_MS: u32 = 1_000;

/// How often a waiting flush looks at the time of the owner's last change.
const POLL_MS: u32 = 100;

/// This flush's turn: held until dropped (then the lock, if it was granted, is released).
pub struct Turn {
    /// Resolves the promise the lock's callback returned, which releases the lock.
    release: Option<Function>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(f) = self.release.take() {
            let _ = f.call0(&JsValue::NULL);
        }
    }
}

thread_local! {
    /// Swallows the rejection of a lock request given up on (an `AbortError`).
    static IGNORE: Closure<dyn FnMut(JsValue)> = Closure::new(|_: JsValue| {});
}

/// Waits for the owner's turn (see the module's doc for when it goes on without it).
pub async fn take(inner: &Inner, owner: &str) -> Turn {
    let none = Turn { release: None };
    if inner.turn_wait_ms == 0 {
        return none;
    }
    let Some(locks) = lock_manager() else { return none };
    let Some(request) = Reflect::get(&locks, &"request".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) else {
        return none;
    };
    // The lock is held until `hold` resolves; `granted` resolves when the callback runs.
    let mut release = None;
    let hold = Promise::new(&mut |resolve, _| release = Some(resolve));
    let mut granted_resolve = None;
    let granted = Promise::new(&mut |resolve, _| granted_resolve = Some(resolve));
    let (Some(release), Some(granted_resolve)) = (release, granted_resolve) else { return none };
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = granted_resolve.call0(&JsValue::NULL);
        hold.into()
    });
    let abort = web_abort_controller();
    let options = js_sys::Object::new();
    if let Some(signal) = abort.as_ref().and_then(|a| Reflect::get(a, &"signal".into()).ok()) {
        let _ = Reflect::set(&options, &"signal".into(), &signal);
    }
    let name = format!("outbox-flush:{}:{owner}", inner.store.name());
    let asked = match request.call3(&locks, &name.into(), &options, &callback) {
        Ok(p) => p,
        Err(_) => return Turn { release: Some(release) },
    };
    if let Ok(p) = asked.dyn_into::<Promise>() {
        IGNORE.with(|f| {
            let _ = p.catch(f);
        });
    }
    let turn_wait = f64::from(inner.turn_wait_ms);
    let started = js_sys::Date::now();
    let lease = inner.tab.lease_ms as f64;
    let mut granted = JsFuture::from(granted);
    loop {
        match select(granted, JsFuture::from(sleep(POLL_MS))).await {
            Either::Left(_) => return Turn { release: Some(release) },
            Either::Right((_, pending)) => granted = pending,
        }
        let now = js_sys::Date::now();
        let last = inner.notifier.last_change(owner).max(started);
        if now - last >= turn_wait || now - started >= lease {
            break;
        }
    }
    // Gave up: withdraw the request. Granted in the meantime, the lock is released when the
    // returned turn drops (it resolves `hold`).
    if let Some(a) = abort {
        if let Some(f) = Reflect::get(&a, &"abort".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
            let _ = f.call0(&a);
        }
    }
    Turn { release: Some(release) }
}

/// `navigator.locks` of the global scope (a window or a worker), if offered.
fn lock_manager() -> Option<JsValue> {
    let nav = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    if !nav.is_object() {
        return None;
    }
    let locks = Reflect::get(&nav, &"locks".into()).ok()?;
    locks.is_object().then_some(locks)
}

/// A new `AbortController`, where there is one.
fn web_abort_controller() -> Option<JsValue> {
    let ctor = Reflect::get(&js_sys::global(), &"AbortController".into()).ok()?.dyn_into::<Function>().ok()?;
    Reflect::construct(&ctor, &js_sys::Array::new()).ok()
}

/// A promise that resolves after `ms` (never, where there is no `setTimeout`).
fn sleep(ms: u32) -> Promise {
    Promise::new(&mut |resolve, _| {
        if let Some(set) =
            Reflect::get(&js_sys::global(), &"setTimeout".into()).ok().and_then(|f| f.dyn_into::<Function>().ok())
        {
            let _ = set.call2(&js_sys::global(), &resolve, &ms.into());
        }
    })
}
