//! Flushes of one owner take turns across tabs (issue 12: pages draining one queue at once
//! were slower together than one page alone, even when they shared no row).
//!
//! A flush first asks for the Web Lock `outbox-flush:<length of dbName>:<dbName>:<owner>`
//! (the length in UTF-8 bytes) and keeps it until it ends, so while one tab drains an
//! owner's queue the others wait instead of racing it, then find what is left. The lock is only a courtesy: every row is still claimed by its own
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
//! A request it stops waiting on is withdrawn. The wait runs on its own clock
//! (`performance.now()`), not the injected one.
//!
//! The browser releases the lock of a tab that closes or crashes; a flush that fails
//! releases it when its [`Turn`] is dropped, and a panic (which drops nothing: the module
//! aborts) releases every turn of the instance from its hook (`panic.rs`) and forgets that
//! the tabs hold them. A flush of an
//! owner whose turn this tab already holds (a flush started from inside another's `send`)
//! does not wait for itself: the tab's flushes share its turn (§8 keeps them apart).

use crate::clock::monotonic;
use crate::inner::{Held, Inner};
use crate::js::global_fn;
use js_sys::{Array, Function, Promise, Reflect};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The longest single sleep of a wait (it then looks again): an outbox closed meanwhile is
/// seen within it (and `setTimeout` fires at once for delays past 2³¹ − 1 ms).
const MAX_SLEEP_MS: f64 = 1_000.0;

thread_local! {
    /// Every turn of the instance by number: its release and its tab's turns. A panic
    /// releases them all and empties the lists: the flush it stranded will never drop its
    /// `Turn`, and the others go on without the lock.
    static RELEASES: RefCell<Vec<(u64, Function, Held)>> = const { RefCell::new(Vec::new()) };
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

/// Where a lock request stands: its callback and the wait read and write it.
const WAITING: u8 = 0;
const GRANTED: u8 = 1;
/// The wait went on without the lock: a grant that comes later passes the lock straight on.
const GAVE_UP: u8 = 2;

/// This flush's turn: held until dropped (then the lock, if it was granted, is released).
pub struct Turn {
    /// Resolves the promise the lock's callback returned, which releases the lock; its key
    /// in `RELEASES`.
    release: Option<(u64, Function)>,
    /// The tab's turns, where this one is listed (by its number) once the lock is granted.
    held: Option<(Held, u64)>,
    /// The lock's callback. Dropped with the turn: a grant after that makes it throw, which
    /// passes the lock straight on, and frees it (a callback never called would leak).
    _callback: Option<Closure<dyn FnMut(JsValue) -> JsValue>>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some((id, f)) = self.release.take() {
            RELEASES.with(|r| r.borrow_mut().retain(|(i, _, _)| *i != id));
            let _ = f.call0(&JsValue::NULL);
        }
        if let Some((held, id)) = self.held.take() {
            held.borrow_mut().retain(|(i, _)| *i != id);
        }
    }
}

/// Releases every turn of the instance (`panic::clean_up`, after a panic or a trap: the
/// stranded flush will never drop its `Turn`), and forgets that the tabs hold them, so that their next flushes ask again.
pub fn release_all() {
    let all = RELEASES.with(|r| r.try_borrow_mut().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default());
    for (_, f, held) in all {
        let _ = f.call0(&JsValue::NULL);
        if let Ok(mut held) = held.try_borrow_mut() {
            held.clear();
        }
    }
}

/// The lock's name: the length of the database's name (in UTF-8 bytes) first, so that
/// names holding `:` cannot meet.
fn lock_name(db: &str, owner: &str) -> String {
    let mut name = String::from("outbox-flush:");
    crate::js::push_decimal(&mut name, db.len());
    name.push(':');
    name.push_str(db);
    name.push(':');
    name.push_str(owner);
    name
}

/// Waits for the owner's turn (see the module's doc for when it goes on without it), for
/// at most `until_deadline` ms (the flush's `deadline`, as ms from now).
///
/// A request given up on is withdrawn (`AbortSignal`) where the engine can; a grant that
/// comes anyway hands the lock straight on.
pub async fn take(inner: &Inner, owner: &str, until_deadline: Option<f64>) -> Turn {
    let mut turn = Turn { release: None, held: None, _callback: None };
    if inner.turn_wait_ms == 0 || inner.turns.borrow().iter().any(|(_, o)| o == owner) {
        return turn;
    }
    let Some((locks, request)) = lock_request() else { return turn };
    // The lock is held until `hold` resolves; `granted` resolves with `true` when the
    // callback runs, with `false` if the engine refuses the request.
    let (hold, release, _) = crate::js::with_resolvers();
    let id = NEXT.with(|n| n.replace(n.get() + 1));
    RELEASES.with(|r| r.borrow_mut().push((id, release.clone(), inner.turns.clone())));
    turn.release = Some((id, release));
    let (granted, granted_resolve, _) = crate::js::with_resolvers();
    let on_refusal = granted_resolve.bind1(&JsValue::NULL, &JsValue::FALSE);
    let state = Rc::new(Cell::new(WAITING));
    // `FnMut`, not `Closure::once`: the lock manager calls it once anyway, and it needs no
    // wrapper of its own that takes the closure out on that call (issue 35).
    let callback = Closure::<dyn FnMut(JsValue) -> JsValue>::new({
        let state = state.clone();
        move |_lock: JsValue| -> JsValue {
            if state.get() == GAVE_UP {
                return JsValue::UNDEFINED;
            }
            state.set(GRANTED);
            let _ = granted_resolve.call1(&JsValue::NULL, &JsValue::TRUE);
            hold.clone().into()
        }
    });
    let abort = abort_controller();
    let lock_options = js_sys::Object::new();
    if let Some(signal) = abort.as_ref().and_then(|a| Reflect::get(a, &"signal".into()).ok()) {
        crate::js::set(&lock_options, "signal", &signal);
    }
    let name = lock_name(inner.store.name(), owner);
    let asked = request.call3(&locks, &name.into(), &lock_options, callback.as_ref());
    turn._callback = Some(callback);
    let Ok(asked) = asked else { return turn };
    // A refusal (an opaque origin, a document no longer active) or the withdrawal rejects
    // the request: the flush goes on at once, and the rejection counts as handled.
    if let Ok(then) = crate::js::get(&asked, "then").dyn_into::<Function>() {
        let _ = then.call2(&asked, &JsValue::UNDEFINED, &on_refusal);
    }
    // The wait, in this body itself (no future of its own, issue 35): whether the lock came
    // before it ended.
    let started = monotonic();
    let give_up_at = started + (inner.tab.lease_ms as f64).min(until_deadline.unwrap_or(f64::INFINITY));
    let got = loop {
        let ms = match wait_step(inner, owner, started, give_up_at, &state) {
            Ok(ms) => ms,
            Err(got) => break got,
        };
        match JsFuture::from(Promise::race(&Array::of2(&granted, &sleep(ms)))).await {
            Ok(v) if v.is_undefined() => {} // the sleep ended
            Ok(v) if v.as_bool() == Some(true) => break true,
            _ => break state.get() == GRANTED, // refused: no lock to wait for
        }
    };
    if got {
        inner.turns.borrow_mut().push((id, owner.to_owned()));
        turn.held = Some((inner.turns.clone(), id));
    } else {
        state.set(GAVE_UP);
        if let Some(abort) = abort {
            if let Ok(f) = crate::js::get(&abort, "abort").dyn_into::<Function>() {
                let _ = f.call0(&abort);
            }
        }
    }
    turn
}

/// The wait for the lock, between two looks: it wakes when the wait would end if nothing
/// changed since, and goes on waiting (until then, from the latest change) while the holder
/// keeps changing the owner's rows. The next sleep (ms), or whether the lock came before
/// the wait ended (`Err`). The wait started at `started` and gives up at `give_up_at`.
fn wait_step(inner: &Inner, owner: &str, started: f64, give_up_at: f64, state: &Cell<u8>) -> Result<u32, bool> {
    // A grant whose news has not come through yet still counts.
    if state.get() == GRANTED {
        return Err(true);
    }
    if inner.store.is_closed() {
        return Err(false); // closed meanwhile: the flush fails with `CLOSED` at once
    }
    let last = inner.notifier.last_flush_change(owner).max(started);
    let now = monotonic();
    let wake = (last + f64::from(inner.turn_wait_ms)).min(give_up_at);
    if now >= wake {
        return Err(false);
    }
    Ok((wake - now).min(MAX_SLEEP_MS).ceil() as u32)
}

/// A new `AbortController`, where the engine has one.
fn abort_controller() -> Option<JsValue> {
    let ctor: Function = global_fn("AbortController")?;
    Reflect::construct(&ctor, &Array::new()).ok()
}

/// `navigator.locks` of the global scope (a window or a worker) and its `request`, if
/// offered, with `setTimeout` (which the wait needs).
fn lock_request() -> Option<(JsValue, Function)> {
    global_fn("setTimeout")?;
    let nav = crate::js::get(&js_sys::global(), "navigator");
    let locks = Some(crate::js::get(&nav, "locks")).filter(JsValue::is_object)?;
    let request = crate::js::get(&locks, "request").dyn_into().ok()?;
    Some((locks, request))
}

/// A promise that resolves (with `undefined`) after `ms`; at once where there is no
/// `setTimeout` (a flush's answers then wait for no timer, §8).
pub(crate) fn sleep(ms: u32) -> Promise {
    let (promise, resolve, _) = crate::js::with_resolvers();
    let _ = match global_fn("setTimeout") {
        Some(set) => set.call2(&js_sys::global(), &resolve, &ms.into()),
        None => resolve.call0(&JsValue::UNDEFINED),
    };
    promise
}

#[cfg(test)]
mod tests {
    use super::{lock_name, sleep};
    use js_sys::{Array, Promise, Reflect};
    use wasm_bindgen::JsValue;
    use wasm_bindgen_futures::JsFuture;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// Whether `p` is settled already: raced against a promise made after it, it wins.
    async fn settled(p: &Promise) -> bool {
        let later = Promise::resolve(&JsValue::from("pending"));
        let first = JsFuture::from(Promise::race(&Array::of2(p, &later))).await.expect("neither rejects");
        first.is_undefined()
    }

    /// §8: where there is no `setTimeout` (a worker scope without it, a test harness), a
    /// flush's answers wait for no timer: the sleep resolves at once, not never.
    #[wasm_bindgen_test]
    async fn a_sleep_without_set_timeout_resolves_at_once_and_with_it_waits() {
        let global = js_sys::global();
        let set_timeout = Reflect::get(&global, &"setTimeout".into()).expect("a window has setTimeout");
        Reflect::set(&global, &"setTimeout".into(), &JsValue::UNDEFINED).expect("writable");
        let without = sleep(60_000);
        Reflect::set(&global, &"setTimeout".into(), &set_timeout).expect("writable");
        assert!(settled(&without).await);
        assert!(!settled(&sleep(60_000)).await);
    }

    #[wasm_bindgen_test]
    fn the_lock_name_starts_with_the_database_names_length_in_utf8_bytes() {
        for len in [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12_345] {
            let db = "d".repeat(len);
            assert_eq!(lock_name(&db, "al:ice"), format!("outbox-flush:{len}:{db}:al:ice"));
        }
        assert_eq!(lock_name("\u{e9}", "o"), "outbox-flush:2:\u{e9}:o");
    }
}
