//! Cross-tab notice (SPEC §12): a committed change is announced on a BroadcastChannel named
//! after the database, and reaches `subscribe` callbacks in every tab, this one included.

use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, MessageEvent};

type Subscribers = Rc<RefCell<Vec<(u32, js_sys::Function)>>>;

/// The channel and this tab's subscribers.
pub struct Notifier {
    channel: Option<BroadcastChannel>,
    subscribers: Subscribers,
    next_id: RefCell<u32>,
    _on_message: Option<Closure<dyn FnMut(MessageEvent)>>,
    tab_id: String,
}

impl Notifier {
    /// Joins the channel of database `db_name`. Where BroadcastChannel is missing, only
    /// this tab's subscribers are told.
    pub fn new(db_name: &str, tab_id: &str) -> Notifier {
        let subscribers: Subscribers = Rc::new(RefCell::new(Vec::new()));
        let channel = BroadcastChannel::new(&format!("outbox:{db_name}")).ok();
        let on_message = channel.as_ref().map(|ch| {
            let subs = subscribers.clone();
            let closure = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                deliver(&subs, &ev.data());
            });
            ch.set_onmessage(Some(closure.as_ref().unchecked_ref()));
            closure
        });
        if let Some(ch) = &channel {
            unref(ch);
        }
        Notifier { channel, subscribers, next_id: RefCell::new(0), _on_message: on_message, tab_id: tab_id.to_owned() }
    }

    /// Announces a committed change of `what` (e.g. `"enqueue"`) to every tab.
    pub fn changed(&self, what: &str, owner: Option<&str>) {
        self.changed_records(what, owner, &[]);
    }

    /// [`Notifier::changed`], naming the app records the change wrote (`records:
    /// [{store, key}]`, present only when some were), so other tabs re-render only those.
    pub fn changed_records(&self, what: &str, owner: Option<&str>, records: &[(String, JsValue)]) {
        let msg = js_sys::Object::new();
        if !records.is_empty() {
            let list: js_sys::Array = records
                .iter()
                .map(|(store, key)| {
                    let r = js_sys::Object::new();
                    let _ = js_sys::Reflect::set(&r, &"store".into(), &store.as_str().into());
                    let _ = js_sys::Reflect::set(&r, &"key".into(), key);
                    JsValue::from(r)
                })
                .collect();
            let _ = js_sys::Reflect::set(&msg, &"records".into(), &list);
        }
        let _ = js_sys::Reflect::set(&msg, &"tabId".into(), &self.tab_id.as_str().into());
        let _ = js_sys::Reflect::set(&msg, &"change".into(), &what.into());
        let _ = js_sys::Reflect::set(&msg, &"owner".into(), &owner.map_or(JsValue::NULL, JsValue::from));
        if let Some(ch) = &self.channel {
            let _ = ch.post_message(&msg);
        }
        deliver(&self.subscribers, &msg);
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
    if let Ok(f) = js_sys::Reflect::get(channel, &"unref".into()) {
        if let Some(f) = f.dyn_ref::<js_sys::Function>() {
            let _ = f.call0(channel);
        }
    }
}

fn deliver(subs: &Subscribers, msg: &JsValue) {
    let list: Vec<js_sys::Function> = subs.borrow().iter().map(|(_, f)| f.clone()).collect();
    for f in list {
        if let Err(e) = f.call1(&JsValue::NULL, msg) {
            web_sys::console::error_2(&"outbox: a subscribe callback threw".into(), &e);
        }
    }
}
