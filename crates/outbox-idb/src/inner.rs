//! The state of one open outbox: its store, its tab, its injected clock and random source,
//! its counters and its cross-tab notifier.

use crate::error::{OutboxError, Result};
use crate::idb::app_schema::AppSchema;
use crate::idb::Store;
use crate::notify::Notifier;
use js_sys::Function;
use outbox_core::metrics::Counters;
use outbox_core::retry::Backoff;
use outbox_core::{Draws, Millis, SharedOutstanding, Tab};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// By default a flush waits for another's turn while it sees that one change the owner's
/// rows at least once a second (a draining tab tells others every 50 ms, `notify.rs`).
pub const DEFAULT_TURN_WAIT_MS: u32 = 1_000;

/// The owners whose turn a tab (one open outbox) holds, with the number of the flush's turn
/// holding it (a flush that ends takes out its own entry, never a later one's).
pub type Held = Rc<RefCell<Vec<(u64, String)>>>;

/// What `Outbox.open` was given.
pub struct Options {
    pub db_name: String,
    pub tab_id: Option<String>,
    pub lease_ms: Option<i64>,
    pub now: Option<Function>,
    pub random: Option<Function>,
    pub backoff: Backoff,
    pub concurrency: usize,
    /// How long a flush waits for another flush of its owner while that one makes no change
    /// (`turnWaitMs`; 0: flushes never take turns). See `turn.rs`.
    pub turn_wait_ms: u32,
    /// How long opening (and a lazy reopen) may wait for other tabs before `BLOCKED`.
    pub open_timeout_ms: u32,
    /// The app's own stores in the same database (`records`).
    pub records: Option<AppSchema>,
}

/// An option the app gives: a read that throws is `INVALID_ARGUMENT` (`args::field`).
fn get(obj: &JsValue, key: &str) -> Result<JsValue> {
    crate::args::field(obj, key)
}

/// An optional function option `key` of `obj` (absent when `obj` is no object).
pub(crate) fn optional_fn(obj: &JsValue, key: &str) -> Result<Option<Function>> {
    let v = get(obj, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.dyn_into::<Function>().map(Some).map_err(|_| OutboxError::invalid_key(key, "` must be a function"))
}

fn optional_number(obj: &JsValue, key: &str, min: u8) -> Result<Option<f64>> {
    let v = get(obj, key)?;
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    match v.as_f64() {
        Some(n) if n.is_finite() && n >= f64::from(min) => Ok(Some(n)),
        _ => {
            let mut e = OutboxError::invalid_key(key, "` must be a number ≥ ");
            crate::js::push_decimal(&mut e.message, usize::from(min));
            Err(e)
        }
    }
}

/// The longest `leaseMs` and backoff delays (about 24.8 days, the longest a browser timer
/// waits). Longer ones would put instants past what a row can hold into claims and
/// `nextAttemptAt`, and the rows would become undecodable.
const MAX_DELAY_MS: f64 = 2_147_483_647.0;

/// An optional duration option: a number from `min` to [`MAX_DELAY_MS`].
fn optional_ms(obj: &JsValue, key: &str, min: u8) -> Result<Option<f64>> {
    match optional_number(obj, key, min)? {
        // The bound is written out: formatting a float would link Rust's float printing.
        Some(n) if n > MAX_DELAY_MS => {
            let mut e = OutboxError::invalid_key(key, "` must be a number from ");
            crate::js::push_decimal(&mut e.message, usize::from(min));
            e.message.push_str(" to 2147483647");
            Err(e)
        }
        n => Ok(n),
    }
}

/// The furthest instant from 1970, either way, that a JavaScript `Date` holds (ms).
const DATE_RANGE_MS: f64 = 8.64e15;

impl Options {
    /// Reads and checks the options object.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming the first bad option.
    pub fn parse(v: &JsValue) -> Result<Options> {
        if !v.is_object() {
            return Err(OutboxError::invalid("Outbox.open needs an options object with `dbName`"));
        }
        let db_name = crate::args::exact_string(&get(v, "dbName")?).ok_or_else(|| {
            OutboxError::invalid("`dbName` must be a non-empty string, well-formed (no lone surrogate)")
        })?;
        let tab_id = match get(v, "tabId")? {
            t if t.is_undefined() || t.is_null() => None,
            t => Some(crate::args::exact_string(&t).ok_or_else(|| {
                OutboxError::invalid("`tabId` must be a non-empty string, well-formed (no lone surrogate)")
            })?),
        };
        let lease_ms = optional_ms(v, "leaseMs", 1)?.map(|n| n as i64);
        // §5: a lease ends at most one hour after the claim; other tabs do not honour a
        // lease end further than that from their own clock.
        if lease_ms.is_some_and(|l| l > outbox_core::inflight::MAX_LEASE_MS) {
            return Err(OutboxError::invalid("`leaseMs` must be a number from 1 to 3600000 (one hour)"));
        }
        let mut backoff = Backoff::default();
        let b = get(v, "backoff")?;
        if b.is_object() {
            if let Some(base) = optional_ms(&b, "baseMs", 0)? {
                backoff.base_ms = base as i64;
            }
            if let Some(cap) = optional_ms(&b, "capMs", 0)? {
                backoff.cap_ms = cap as i64;
            }
        }
        let concurrency =
            optional_number(v, "concurrency", 1)?.map_or(outbox_core::flush::DEFAULT_CONCURRENCY, |n| n as usize);
        let turn_wait_ms =
            optional_number(v, "turnWaitMs", 0)?.map_or(DEFAULT_TURN_WAIT_MS, |n| n.min(f64::from(u32::MAX)) as u32);
        let open_timeout_ms = optional_number(v, "openTimeoutMs", 1)?
            .map_or(crate::idb::schema::DEFAULT_OPEN_TIMEOUT_MS, |n| n.min(f64::from(u32::MAX)) as u32);
        let records = match get(v, "records")? {
            r if r.is_undefined() || r.is_null() => None,
            r => AppSchema::parse(&crate::convert::from_js(&r, "records")?)?,
        };
        Ok(Options {
            records,
            db_name,
            tab_id,
            lease_ms,
            now: optional_fn(v, "now")?,
            random: optional_fn(v, "random")?,
            backoff,
            concurrency,
            turn_wait_ms,
            open_timeout_ms,
        })
    }
}

/// One open outbox.
pub struct Inner {
    pub store: Rc<Store>,
    pub tab: Tab,
    pub backoff: Backoff,
    pub concurrency: usize,
    /// See [`Options::turn_wait_ms`].
    pub turn_wait_ms: u32,
    pub counters: RefCell<Counters>,
    /// What this tab's flushes have outstanding (SPEC §8: one attempt of a row, and one row
    /// of a target, at a time in a tab, across overlapping flushes).
    pub outstanding: SharedOutstanding,
    pub notifier: Notifier,
    /// The owners whose turn this tab's flushes hold (`turn.rs`).
    pub turns: Held,
    now: Option<Function>,
    random: Option<Function>,
}

impl Inner {
    pub fn new(store: Rc<Store>, opts: Options) -> Inner {
        let tab_id = opts.tab_id.unwrap_or_else(crate::ids::new_id);
        let mut tab = Tab::new(tab_id).with_lease(opts.lease_ms.unwrap_or(outbox_core::inflight::DEFAULT_LEASE_MS));
        tab.bundle = concat!("outbox-idb@", env!("CARGO_PKG_VERSION")).to_owned();
        let notifier = Notifier::new(store.name(), &tab.tab_id);
        Inner {
            store,
            tab,
            backoff: opts.backoff,
            concurrency: opts.concurrency,
            turn_wait_ms: opts.turn_wait_ms,
            counters: RefCell::new(Counters::default()),
            outstanding: SharedOutstanding::default(),
            notifier,
            turns: Default::default(),
            now: opts.now,
            random: opts.random,
        }
    }

    /// The injected clock (`Date.now()` by default). A reading that is not an instant (the
    /// clock threw, or gave something other than a number a `Date` can hold: `NaN`,
    /// `Infinity`, 1e19) is replaced by `Date.now()`: cast to a row's instant it would become
    /// 1970 (every claim long expired: other tabs would send the row again) or a time no
    /// row can hold (undecodable rows).
    pub fn now(&self) -> Millis {
        let t = number_from(&self.now);
        Millis(t.filter(|t| t.abs() <= DATE_RANGE_MS).unwrap_or_else(js_sys::Date::now) as i64)
    }

    /// Fails with `CLOSED` after `close()`.
    pub fn check_open(&self) -> Result<()> {
        if self.store.is_closed() {
            Err(OutboxError::closed())
        } else {
            Ok(())
        }
    }
}

impl Draws for &Inner {
    fn unit(&mut self) -> f64 {
        number_from(&self.random).unwrap_or_else(js_sys::Math::random)
    }

    fn new_id(&mut self) -> String {
        crate::ids::new_id()
    }
}

/// What the injected function `f` (`now`, `random`) returns, if it is a number: `None` when
/// there is none, it throws or it returns anything else. One body for both (issue 35).
fn number_from(f: &Option<Function>) -> Option<f64> {
    f.as_ref().and_then(|f| f.call0(&JsValue::NULL).ok()).and_then(|v| v.as_f64())
}
