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
use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// By default a flush waits for another's turn while it sees that one change the owner's
/// rows at least once a second (a draining tab tells others every 50 ms, `notify.rs`).
pub const DEFAULT_TURN_WAIT_MS: u32 = 1_000;

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

/// Waits for the owner's turn (see the module's doc for when it goes on without it).
///
/// A request given up on is not withdrawn: when the lock comes to it, its callback returns
/// the promise this turn resolved when it dropped, so the lock passes straight on.
pub async fn take(inner: &Inner, owner: &str) -> Turn {
    let mut turn = Turn { release: None };
    if inner.turn_wait_ms == 0 {
        return turn;
    }
    let Some((locks, request)) = lock_request() else { return turn };
    // The lock is held until `hold` resolves; `granted` resolves (with `true`) when the
    // callback runs.
    let mut release = None;
    let hold = Promise::new(&mut |resolve, _| release = Some(resolve));
    turn.release = release;
    let mut granted_resolve = None;
    let granted = Promise::new(&mut |resolve, _| granted_resolve = Some(resolve));
    let Some(granted_resolve) = granted_resolve else { return turn };
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = granted_resolve.call1(&JsValue::NULL, &JsValue::TRUE);
        hold.into()
    });
    let mut name = String::from("outbox-flush:");
    name.push_str(inner.store.name());
    name.push(':');
    name.push_str(owner);
    if request.call2(&locks, &name.into(), &callback).is_err() {
        return turn;
    }
    // Wakes when the wait would end if nothing changed since; goes on waiting (until then,
    // from the latest change) while the holder keeps changing the owner's rows.
    let turn_wait = f64::from(inner.turn_wait_ms);
    let started = js_sys::Date::now();
    let give_up_at = started + inner.tab.lease_ms as f64;
    loop {
        let last = inner.notifier.last_change(owner).max(started);
        let now = js_sys::Date::now();
        let wake = (last + turn_wait).min(give_up_at);
        if now >= wake {
            return turn;
        }
        let race = Promise::race(&Array::of2(&granted, &sleep((wake - now).ceil() as u32)));
        if JsFuture::from(race).await.ok().and_then(|v| v.as_bool()) == Some(true) {
            return turn;
        }
    }
}

/// `navigator.locks` of the global scope (a window or a worker) and its `request`, if
/// offered, with `setTimeout` (which the wait needs).
fn lock_request() -> Option<(JsValue, Function)> {
    global_fn("setTimeout")?;
    let nav = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    let locks = Reflect::get(&nav, &"locks".into()).ok().filter(JsValue::is_object)?;
    let request = Reflect::get(&locks, &"request".into()).ok()?.dyn_into().ok()?;
    Some((locks, request))
}

fn global_fn(name: &str) -> Option<Function> {
    Reflect::get(&js_sys::global(), &name.into()).ok()?.dyn_into().ok()
}

/// A promise that resolves (with `undefined`) after `ms`.
fn sleep(ms: u32) -> Promise {
    Promise::new(&mut |resolve, _| {
        if let Some(set) = global_fn("setTimeout") {
            let _ = set.call2(&js_sys::global(), &resolve, &ms.into());
        }
    })
}
