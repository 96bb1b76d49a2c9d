//! Flushes of one owner take turns across tabs (issue 12: pages draining one queue at once
//! were slower together than one page alone, even when they shared no row).
//!
//! A flush first asks for the Web Lock `outbox-flush:<length of dbName>:<dbName>:<owner>`
//! and keeps it until it
//! ends, so while one tab drains an owner's queue the others wait instead of racing it, then
//! find what is left. The lock is only a courtesy: every row is still claimed by its own
//! compare-and-swap (§5), so a flush that runs without it is as safe as before, only
//! slower beside others. It runs without it when
//!
//! - the lock is not offered (`navigator.locks` missing: Node, old engines) or is refused;
//! - the wait sees no flush, in any tab, change this owner's rows for `turnWaitMs`: the
//!   holder is stuck (a `send` that never answers) and its rows will be taken over after
//!   their lease;
//! - the wait has lasted a whole lease (`leaseMs`), whatever the changes, or reached the
//!   flush's `deadline`.
//!
//! The wait runs on its own clock (`performance.now()`), not the injected one.
//!
//! The browser releases the lock of a tab that closes or crashes; a flush that fails
//! releases it when its [`Turn`] is dropped, and a panic (which drops nothing: the module
//! aborts) releases every turn of the instance from its hook (`panic.rs`). A flush of an
//! owner whose turn this tab already holds (a flush started from inside another's `send`)
//! does not wait for itself: the tab's flushes share its turn (§8 keeps them apart).

use crate::inner::Inner;
use js_sys::{Array, Function, Promise, Reflect};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// By default a flush waits for another's turn while it sees that one change the owner's
/// rows at least once a second (a draining tab tells others every 50 ms, `notify.rs`).
pub const DEFAULT_TURN_WAIT_MS: u32 = 1_000;

/// The longest single sleep of a wait (it then looks again): `setTimeout` fires at once for
/// delays past 2³¹ − 1 ms.
const MAX_SLEEP_MS: f64 = 60_000.0;

/// The owners whose turn a tab (one open outbox) holds, once per flush holding it.
pub type Held = Rc<RefCell<Vec<String>>>;

thread_local! {
    /// The release of every turn of the instance, by turn: a panic calls them all.
    static RELEASES: RefCell<Vec<(u64, Function)>> = const { RefCell::new(Vec::new()) };
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

/// This flush's turn: held until dropped (then the lock, if it was granted, is released).
pub struct Turn {
    /// Resolves the promise the lock's callback returned, which releases the lock; its key
    /// in `RELEASES`.
    release: Option<(u64, Function)>,
    /// The tab's turns and the owner this one counts for there, once the lock is granted.
    held: Option<(Held, String)>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some((id, f)) = self.release.take() {
            RELEASES.with(|r| r.borrow_mut().retain(|(i, _)| *i != id));
            let _ = f.call0(&JsValue::NULL);
        }
        if let Some((held, owner)) = self.held.take() {
            let mut held = held.borrow_mut();
            if let Some(i) = held.iter().position(|o| *o == owner) {
                held.swap_remove(i);
            }
        }
    }
}

/// Releases every turn of the instance (the panic hook: no `Turn` will be dropped).
pub fn release_all() {
    let all = RELEASES.with(|r| r.try_borrow_mut().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default());
    for (_, f) in all {
        let _ = f.call0(&JsValue::NULL);
    }
}

/// Milliseconds of a clock that only goes forward (`performance.now()`; `Date.now()` where
/// there is none): the wait's own time, never the injected clock of the contract.
pub fn monotonic() -> f64 {
    Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .filter(JsValue::is_object)
        .and_then(|p| Some((Reflect::get(&p, &"now".into()).ok()?.dyn_into::<Function>().ok()?, p)))
        .and_then(|(now, p)| now.call0(&p).ok()?.as_f64())
        .unwrap_or_else(js_sys::Date::now)
}

/// Waits for the owner's turn (see the module's doc for when it goes on without it), for
/// at most `until_deadline` ms (the flush's `deadline`, as ms from now).
///
/// A request given up on is not withdrawn: when the lock comes to it, its callback returns
/// the promise this turn resolved when it dropped, so the lock passes straight on.
pub async fn take(inner: &Inner, owner: &str, until_deadline: Option<f64>) -> Turn {
    let mut turn = Turn { release: None, held: None };
    if inner.turn_wait_ms == 0 || inner.turns.borrow().iter().any(|o| o == owner) {
        return turn;
    }
    let Some((locks, request)) = lock_request() else { return turn };
    // The lock is held until `hold` resolves; `granted` resolves with `true` when the
    // callback runs, or with the error if the engine refuses the request.
    let mut release = None;
    let hold = Promise::new(&mut |resolve, _| release = Some(resolve));
    let Some(release) = release else { return turn };
    let id = NEXT.with(|n| n.replace(n.get() + 1));
    RELEASES.with(|r| r.borrow_mut().push((id, release.clone())));
    turn.release = Some((id, release));
    let mut granted_resolve = None;
    let granted = Promise::new(&mut |resolve, _| granted_resolve = Some(resolve));
    let Some(granted_resolve) = granted_resolve else { return turn };
    let on_refusal = granted_resolve.clone();
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = granted_resolve.call1(&JsValue::NULL, &JsValue::TRUE);
        hold.into()
    });
    // The length of the database's name first: names holding `:` cannot meet.
    let db = inner.store.name();
    let mut name = String::from("outbox-flush:");
    name.push_str(&db.len().to_string());
    name.push(':');
    name.push_str(db);
    name.push(':');
    name.push_str(owner);
    let Ok(asked) = request.call2(&locks, &name.into(), &callback) else { return turn };
    // A refusal (an opaque origin, a document no longer active) rejects the request: the
    // flush goes on at once, and the rejection counts as handled.
    if let Some(then) = Reflect::get(&asked, &"then".into()).ok().and_then(|f| f.dyn_into::<Function>().ok()) {
        let _ = then.call2(&asked, &JsValue::UNDEFINED, &on_refusal);
    }
    // Wakes when the wait would end if nothing changed since; goes on waiting (until then,
    // from the latest change) while the holder keeps changing the owner's rows.
    let turn_wait = f64::from(inner.turn_wait_ms);
    let started = monotonic();
    let give_up_at = started + (inner.tab.lease_ms as f64).min(until_deadline.unwrap_or(f64::INFINITY));
    loop {
        let last = inner.notifier.last_flush_change(owner).max(started);
        let now = monotonic();
        let wake = (last + turn_wait).min(give_up_at);
        if now >= wake {
            return turn;
        }
        let race = Promise::race(&Array::of2(&granted, &sleep((wake - now).min(MAX_SLEEP_MS).ceil() as u32)));
        match JsFuture::from(race).await {
            Ok(v) if v.is_undefined() => {} // the sleep ended
            Ok(v) if v.as_bool() == Some(true) => {
                inner.turns.borrow_mut().push(owner.to_owned());
                turn.held = Some((inner.turns.clone(), owner.to_owned()));
                return turn;
            }
            _ => return turn, // refused: no lock to wait for
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
