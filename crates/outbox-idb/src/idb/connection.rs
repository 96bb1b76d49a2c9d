//! The one connection of a [`super::Store`], opened lazily and shared.
//!
//! ```text
//!            get()                    open ok
//!   Idle ───────────▶ Opening(shared) ────────▶ Open(db)
//!    ▲                     │ open fails             │ forget(db): a transaction found db
//!    └─────────────────────┴────────────────────────┘ closed under us (another tab's
//!                                                      versionchange, a forced close)
//!   any ──close() / drop──▶ Closed   (final)
//! ```
//!
//! Calls that need the connection while it is being (re)opened await the same open, so a
//! reopen after another tab's upgrade happens once however many calls race. A `versionchange`
//! closes the connection from a handler without Rust state (`open.rs`), so that a freed or
//! collected outbox still lets other tabs upgrade; the state keeps `Open(db)` until a
//! transaction on `db` fails and calls [`Connection::forget`].
//!
//! `Closed` is final (SPEC §15: after `close()` calls throw `CLOSED`): an open still pending
//! when `close()` runs closes its connection when it arrives, and the calls waiting for it
//! fail with `CLOSED`. Dropped (the outbox freed without `close()`), the connection is
//! closed the same way.

use super::app_schema::AppSchema;
use super::schema::open;
use crate::error::{OutboxError, Result};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use web_sys::IdbDatabase;

enum State {
    Idle,
    Opening(PendingOpen),
    Open(IdbDatabase),
    Closed,
}

/// The connection to database `name` and its state.
pub(super) struct Connection {
    name: String,
    open_timeout_ms: u32,
    app: Option<Rc<AppSchema>>,
    state: RefCell<State>,
}

impl Connection {
    pub(super) fn new(name: &str, open_timeout_ms: u32, app: Option<Rc<AppSchema>>) -> Rc<Connection> {
        Rc::new(Connection { name: name.to_owned(), open_timeout_ms, app, state: RefCell::new(State::Idle) })
    }

    /// The open connection, opening it (once for all callers) if needed.
    ///
    /// # Errors
    /// `CLOSED` after [`Connection::close`] (also when it ran while this call waited);
    /// `BLOCKED`, `STORAGE`, `QUOTA` from opening.
    pub(super) async fn get(self: &Rc<Self>) -> Result<IdbDatabase> {
        let pending = match &*self.state.borrow() {
            State::Closed => return Err(OutboxError::closed()),
            State::Open(db) => return Ok(db.clone()),
            State::Opening(pending) => Some(pending.clone()),
            State::Idle => None,
        };
        let pending = pending.unwrap_or_else(|| {
            let pending = self.start_open();
            *self.state.borrow_mut() = State::Opening(pending.clone());
            pending
        });
        pending.await
    }

    /// The open itself, shared by every caller. It settles the state when it completes,
    /// whichever caller polls it then ([`Connection::settle`]).
    fn start_open(self: &Rc<Self>) -> PendingOpen {
        PendingOpen(Rc::new(Opening {
            // `schema::open`'s future itself: no wrapper future around it (issue 35).
            fut: RefCell::new(Some(Box::pin(open(self.name.clone(), self.open_timeout_ms, self.app.clone())))),
            conn: Rc::downgrade(self),
            out: RefCell::new(None),
            waiting: Arc::new(Waiting(Mutex::new(Vec::new()))),
        }))
    }

    /// The state once the open of `this` completed with `opened`, and what its callers get.
    fn settle(this: &Weak<Connection>, opened: Result<IdbDatabase>) -> Result<IdbDatabase> {
        let Some(this) = this.upgrade() else {
            // Nobody can use it any more.
            if let Ok(db) = &opened {
                db.close();
            }
            return Err(OutboxError::closed());
        };
        let mut state = this.state.borrow_mut();
        match (opened, &*state) {
            (Ok(db), State::Closed) => {
                // close() ran while we opened: do not resurrect the connection.
                db.close();
                Err(OutboxError::closed())
            }
            (Err(_), State::Closed) => Err(OutboxError::closed()),
            (Ok(db), _) => {
                *state = State::Open(db.clone());
                Ok(db)
            }
            (Err(e), _) => {
                // The next call tries again (e.g. once the blocking tab is gone).
                *state = State::Idle;
                Err(e)
            }
        }
    }

    /// `db` was found closed: the next [`Connection::get`] reopens. A newer connection (a
    /// racing call already reopened) is kept.
    pub(super) fn forget(&self, db: &IdbDatabase) {
        let mut state = self.state.borrow_mut();
        if matches!(&*state, State::Open(current) if current == db) {
            *state = State::Idle;
        }
    }

    /// Closes the connection for good.
    pub(super) fn close(&self) {
        if let State::Open(db) = self.state.replace(State::Closed) {
            db.close();
        }
        // An `Opening` open closes its connection when it arrives (see `Connection::settle`), or,
        // if no call awaits it any more, its request was abandoned and closes it (`open.rs`).
    }

    pub(super) fn is_closed(&self) -> bool {
        matches!(&*self.state.borrow(), State::Closed)
    }
}

impl Drop for Connection {
    /// An outbox freed (or collected) without `close()` must not hold the database open:
    /// its connection would otherwise stay until another tab's `versionchange` closes it.
    fn drop(&mut self) {
        self.close();
    }
}

/// The open, awaited by every call that needs the connection meanwhile: whichever call
/// polls it drives it, and its wake-up wakes them all. What `futures`' `Shared` does, in the
/// lines this one case needs (`Shared`, its slab of wakers and its notifier were about
/// 3 KB of the wasm module, issue 35).
#[derive(Clone)]
struct PendingOpen(Rc<Opening>);

/// What opening yields.
type Open = Pin<Box<dyn Future<Output = Result<IdbDatabase>>>>;

struct Opening {
    /// The open, until it completes.
    fut: RefCell<Option<Open>>,
    /// The connection it opens, settled when it completes.
    conn: Weak<Connection>,
    /// Its result, once it completed.
    out: RefCell<Option<Result<IdbDatabase>>>,
    waiting: Arc<Waiting>,
}

/// The calls waiting for the open.
struct Waiting(Mutex<Vec<Waker>>);

impl Wake for Waiting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let wakers = self.0.lock().map(|mut w| std::mem::take(&mut *w)).unwrap_or_default();
        for w in wakers {
            w.wake();
        }
    }
}

impl Future for PendingOpen {
    type Output = Result<IdbDatabase>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let opening = &self.0;
        if let Some(out) = &*opening.out.borrow() {
            return Poll::Ready(out.clone());
        }
        if let Ok(mut wakers) = opening.waiting.0.lock() {
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        // Being polled further up this stack (it cannot be: nothing the open runs awaits
        // the connection), or done: the wake-up comes from the call that polls it.
        let Ok(mut fut) = opening.fut.try_borrow_mut() else { return Poll::Pending };
        let Some(open) = fut.as_mut() else { return Poll::Pending };
        let waker = Waker::from(opening.waiting.clone());
        let Poll::Ready(opened) = open.as_mut().poll(&mut Context::from_waker(&waker)) else { return Poll::Pending };
        *fut = None;
        let out = Connection::settle(&opening.conn, opened);
        *opening.out.borrow_mut() = Some(out.clone());
        opening.waiting.wake_by_ref();
        Poll::Ready(out)
    }
}
