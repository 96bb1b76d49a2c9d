//! Cross-tab notice (SPEC §12): a committed change is announced on a BroadcastChannel named
//! after the database, and reaches `subscribe` callbacks in every tab, this one included.
//!
//! This tab's callbacks hear every change at once. The channel hears a burst once: the
//! first change of a quiet moment is posted at once, the changes of the next
//! [`BURST_WINDOW_MS`] are merged (one notice per change and owner, their records
//! together) and posted when it ends. A post costs about as much as a strict enqueue, so a
//! burst of enqueues would otherwise spend most of its time telling other tabs.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, Event, MessageEvent};

type Subscribers = Rc<RefCell<Vec<(u32, js_sys::Function)>>>;

/// When a flush last changed each owner's rows, in this tab or another (the wait's own
/// clock, [`crate::clock::monotonic`]): a flush waiting for its turn watches it (`turn.rs`).
type LastChanges = Rc<RefCell<Vec<(String, f64)>>>;

/// The change a flush announces (its claims, answers, conversions).
const FLUSH_CHANGE: &str = "flush";

/// Owners whose last change is kept (the first noted is forgotten first): any page of the
/// origin can post notices, one per owner name it makes up. A forgotten owner reads as "no
/// change seen": a flush waiting for its turn then stops waiting sooner (the turn is never
/// needed for safety).
const MAX_LAST_CHANGES: usize = 1024;

fn note_change(last: &LastChanges, owner: &str) {
    let now = crate::clock::monotonic();
    let mut list = last.borrow_mut();
    match list.iter_mut().find(|(o, _)| o == owner) {
        Some(entry) => entry.1 = now,
        None => {
            if list.len() >= MAX_LAST_CHANGES {
                list.remove(0); // the first noted
            }
            list.push((owner.to_owned(), now));
        }
    }
}

/// How long changes after a posted one are gathered into one post per change and owner:
/// under the ~100 ms a person notices, long enough that a burst of strict enqueues (about
/// 1 ms each) pays one post per ~40 of them rather than one per ~12 (issue 12).
pub const BURST_WINDOW_MS: i32 = 50;

/// One pending post: a change of an owner, with the records it wrote.
struct Pending {
    change: String,
    owner: Option<String>,
    records: Vec<(String, JsValue)>,
}

/// The type of the crate's JS callbacks (event handlers and timers alike).
type Handler = Closure<dyn FnMut(Event)>;

/// The channel side: posts now, or gathers while a burst window is open.
struct Outgoing {
    channel: BroadcastChannel,
    tab_id: String,
    window_open: Cell<bool>,
    queued: RefCell<Vec<Pending>>,
    /// Typed as an event handler, its argument unused (`setTimeout` gives none): the
    /// crate's closures share one signature, one invoke shim in the module (issue 35).
    timer: RefCell<Option<Handler>>,
    /// The running window's timeout, cleared on close (its closure is freed with us).
    timeout: RefCell<Option<JsValue>>,
}

impl Outgoing {
    fn post(&self, p: &Pending) {
        let _ = self.channel.post_message(&message(&self.tab_id, &p.change, p.owner.as_deref(), &p.records));
    }

    fn send(self: &Rc<Self>, p: Pending) {
        if !self.window_open.get() {
            self.post(&p);
            self.open_window();
            return;
        }
        let mut queued = self.queued.borrow_mut();
        match queued.iter_mut().find(|q| q.change == p.change && q.owner == p.owner) {
            Some(q) => q.records.extend(p.records),
            None => queued.push(p),
        }
    }

    /// Opens a window; when it ends ([`Outgoing::tick`]), what was gathered is posted (and
    /// a new window opens), or, if nothing was, the channel is quiet again.
    fn open_window(self: &Rc<Self>) {
        self.window_open.set(true);
        let timer = self.timer.borrow();
        match (crate::js::global_fn("setTimeout"), timer.as_ref()) {
            (Some(set), Some(tick)) => {
                *self.timeout.borrow_mut() = set.call2(&js_sys::global(), tick.as_ref(), &BURST_WINDOW_MS.into()).ok();
            }
            _ => self.window_open.set(false), // no timers: post every change at once
        }
    }

    /// Ends the window now, posting what it gathered (the outbox is closing).
    fn finish(&self) {
        let queued = std::mem::take(&mut *self.queued.borrow_mut());
        for p in &queued {
            self.post(p);
        }
        if let (Some(id), Some(clear)) = (self.timeout.borrow_mut().take(), crate::js::global_fn("clearTimeout")) {
            let _ = clear.call1(&js_sys::global(), &id);
        }
        self.window_open.set(false);
    }

    /// The end of a window.
    fn tick(self: &Rc<Self>) {
        self.timeout.borrow_mut().take();
        let gathered = std::mem::take(&mut *self.queued.borrow_mut());
        if gathered.is_empty() {
            self.window_open.set(false);
            return;
        }
        for p in &gathered {
            self.post(p);
        }
        self.open_window();
    }

    /// Made once per notifier and reused for every window: a closure is never dropped while
    /// it runs.
    fn new(channel: BroadcastChannel, tab_id: &str) -> Rc<Outgoing> {
        let out = Rc::new(Outgoing {
            channel,
            tab_id: tab_id.to_owned(),
            window_open: Cell::new(false),
            queued: RefCell::new(Vec::new()),
            timer: RefCell::new(None),
            timeout: RefCell::new(None),
        });
        let weak = Rc::downgrade(&out);
        *out.timer.borrow_mut() = Some(Closure::<dyn FnMut(Event)>::new(move |_: Event| {
            if let Some(this) = weak.upgrade() {
                this.tick();
            }
        }));
        out
    }
}

fn message(tab_id: &str, what: &str, owner: Option<&str>, records: &[(String, JsValue)]) -> JsValue {
    let msg = js_sys::Object::new();
    if !records.is_empty() {
        let list = js_sys::Array::new();
        for (store, key) in records {
            let r = js_sys::Object::new();
            crate::js::set(&r, "store", &store.as_str().into());
            crate::js::set(&r, "key", key);
            list.push(&r);
        }
        crate::js::set(&msg, "records", &list);
    }
    crate::js::set(&msg, "tabId", &tab_id.into());
    crate::js::set(&msg, "change", &what.into());
    crate::js::set(&msg, "owner", &owner.map_or(JsValue::NULL, JsValue::from));
    msg.into()
}

/// The channel and this tab's subscribers.
pub struct Notifier {
    channel: Option<BroadcastChannel>,
    outgoing: Option<Rc<Outgoing>>,
    subscribers: Subscribers,
    next_id: RefCell<u32>,
    /// Typed as taking an `Event` (it gets a `MessageEvent`): one closure type for every
    /// event handler of the crate, built into the wasm module once (issue 35).
    _on_message: Option<Handler>,
    tab_id: String,
    last_changes: LastChanges,
}

impl Notifier {
    /// Joins the channel of database `db_name`. Where BroadcastChannel is missing, only
    /// this tab's subscribers are told.
    pub fn new(db_name: &str, tab_id: &str) -> Notifier {
        let subscribers: Subscribers = Rc::new(RefCell::new(Vec::new()));
        let last_changes: LastChanges = Rc::new(RefCell::new(Vec::new()));
        let channel = BroadcastChannel::new(&outbox_core::text::concat(&["outbox:", db_name])).ok();
        let on_message = channel.as_ref().map(|ch| {
            let subs = subscribers.clone();
            let last = last_changes.clone();
            let closure = Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
                let data = ev.unchecked_into::<MessageEvent>().data();
                let field = |k: &str| crate::js::get(&data, k).as_string();
                if field("change").as_deref() == Some(FLUSH_CHANGE) {
                    if let Some(owner) = field("owner") {
                        note_change(&last, &owner);
                    }
                }
                deliver(&subs, &data);
            });
            ch.set_onmessage(Some(closure.as_ref().unchecked_ref()));
            closure
        });
        if let Some(ch) = &channel {
            unref(ch);
        }
        let outgoing = channel.as_ref().map(|ch| Outgoing::new(ch.clone(), tab_id));
        Notifier {
            channel,
            outgoing,
            subscribers,
            next_id: RefCell::new(0),
            _on_message: on_message,
            tab_id: tab_id.to_owned(),
            last_changes,
        }
    }

    /// Announces a committed change of `what` (e.g. `"enqueue"`) to every tab.
    pub fn changed(&self, what: &str, owner: Option<&str>) {
        self.changed_records(what, owner, &[]);
    }

    /// [`Notifier::changed`], naming the app records the change wrote (`records:
    /// [{store, key}]`, present only when some were), so other tabs re-render only those.
    pub fn changed_records(&self, what: &str, owner: Option<&str>, records: &[(String, JsValue)]) {
        if let (FLUSH_CHANGE, Some(o)) = (what, owner) {
            note_change(&self.last_changes, o);
        }
        // Other tabs first: nothing a subscriber of this tab does can keep them from hearing.
        if let Some(out) = &self.outgoing {
            out.send(Pending { change: what.to_owned(), owner: owner.map(str::to_owned), records: records.to_vec() });
        }
        if !self.subscribers.borrow().is_empty() {
            // the message is not built for nobody
            deliver(&self.subscribers, &message(&self.tab_id, what, owner, records));
        }
    }

    /// When a flush last changed `owner`'s rows (in this tab, or in another as its notice
    /// says); 0 when never since this outbox opened.
    pub fn last_flush_change(&self, owner: &str) -> f64 {
        self.last_changes.borrow().iter().find(|(o, _)| o == owner).map_or(0.0, |e| e.1)
    }

    /// Adds a callback; returns its id for [`Notifier::unsubscribe`].
    pub fn subscribe(&self, f: js_sys::Function) -> u32 {
        let mut n = self.next_id.borrow_mut();
        *n += 1;
        self.subscribers.borrow_mut().push((*n, f));
        *n
    }

    /// Removes a callback.
    pub fn unsubscribe(&self, id: u32) {
        self.subscribers.borrow_mut().retain(|(i, _)| *i != id);
    }

    /// Leaves the channel.
    pub fn close(&self) {
        if let Some(out) = &self.outgoing {
            out.finish();
        }
        if let Some(ch) = &self.channel {
            ch.set_onmessage(None);
            ch.close();
        }
        self.subscribers.borrow_mut().clear();
    }
}

impl Drop for Notifier {
    /// A freed outbox leaves the channel: its `onmessage` would otherwise call a freed
    /// closure on every other tab's notice.
    fn drop(&mut self) {
        self.close();
    }
}

/// In Node, a `BroadcastChannel` with a listener keeps the process alive until it is
/// closed: an app's test run that forgets `close()` would never exit. `unref()` (Node's
/// own method; browsers have none) lets the process end while notices still arrive as
/// long as it runs.
fn unref(channel: &BroadcastChannel) {
    if let Some(f) = crate::js::get(channel, "unref").dyn_ref::<js_sys::Function>() {
        let _ = f.call0(channel);
    }
}

fn deliver(subs: &Subscribers, msg: &JsValue) {
    // A copy: a callback may subscribe or unsubscribe.
    let mut list: Vec<js_sys::Function> = Vec::new();
    for (_, f) in subs.borrow().iter() {
        list.push(f.clone());
    }
    for f in list {
        if let Err(e) = f.call1(&JsValue::NULL, msg) {
            let what = JsValue::from_str("outbox: a subscribe callback threw");
            if crate::js::console_error(&what, &e).is_err() {
                let _ =
                    crate::js::console_error_text("outbox: a subscribe callback threw a value that cannot be printed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn last_changes_keep_at_most_their_cap_forgetting_the_first_noted() {
        let last: LastChanges = Rc::default();
        for i in 0..=MAX_LAST_CHANGES {
            note_change(&last, &format!("owner-{i}"));
        }
        note_change(&last, "owner-1"); // noted again: kept, not added
        let list = last.borrow();
        assert_eq!(list.len(), MAX_LAST_CHANGES);
        assert!(!list.iter().any(|(o, _)| o == "owner-0"), "the first noted is forgotten");
        assert!(list.iter().any(|(o, _)| o == &format!("owner-{MAX_LAST_CHANGES}")));
    }
}
