//! What a flush asks of its driver ([`Request`]), what `send` receives ([`SendOp`]), the
//! random draws it needs ([`Draws`]) and its options ([`FlushOptions`]).

use crate::plan::Scope;
use crate::retry::Backoff;
use crate::row::Row;
use crate::tab::Tab;
use crate::time::Millis;
use serde::Serialize;
use serde_json::Value;

/// Identifies one outstanding request of a flush.
pub type Token = u64;

/// Random inputs, drawn by the driver when the machine asks.
pub trait Draws {
    /// A draw in `[0, 1)` (backoff jitter, claim order).
    fn unit(&mut self) -> f64;
    /// A fresh operation id (UUID v4) for a conflict successor.
    fn new_id(&mut self) -> String;
}

/// The request `send(op)` receives (§15).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SendOp {
    /// Operation id: the `Idempotency-Key`.
    pub id: String,
    /// create / update / delete.
    pub kind: &'static str,
    /// Record key.
    pub target: String,
    /// Body as stored.
    pub body: Value,
    /// Base revision (`null` when none).
    pub revision: Value,
    /// Request fingerprint.
    pub fingerprint: String,
    /// Attempt number, from 1.
    pub attempt: u64,
    /// Account (for the app's own checks; the transport uses the current session).
    pub owner: String,
}

impl SendOp {
    pub(super) fn of(row: &Row) -> SendOp {
        SendOp {
            id: row.id.clone(),
            kind: row.kind.as_str(),
            target: row.target.clone(),
            body: row.body.clone(),
            revision: row.revision.clone().unwrap_or(Value::Null),
            fingerprint: row.fingerprint.clone(),
            attempt: row.evidence.as_ref().map_or(1, |e| e.attempt_count),
            owner: row.owner.clone(),
        }
    }
}

/// Something the machine needs its driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Read every stored row of `owner` (index `[owner, savedAt]`).
    ReadOwner {
        /// Hand the rows back with this token.
        token: Token,
        /// The owner.
        owner: String,
    },
    /// Read the ids of `owner`'s rows now (index `[owner, savedAt]`, keys only: no values),
    /// for [`super::Flush::handle_ids`].
    ReadIds {
        /// Hand the ids back with this token.
        token: Token,
        /// The owner.
        owner: String,
    },
    /// One readwrite transaction over `scopes`, planned by [`super::Flush::plan`] inside it.
    Write {
        /// Token for `plan` and `handle_written`.
        token: Token,
        /// Scopes to read inside the transaction.
        scopes: Vec<Scope>,
    },
    /// Send one attempt with the app's transport.
    Send {
        /// Token for `handle_sent`.
        token: Token,
        /// The request.
        op: SendOp,
    },
    /// Ask the app's `prepareSuccessor` port.
    Prepare {
        /// Token for `handle_prepared`.
        token: Token,
        /// The intent row.
        intent: Row,
        /// The create row (`None` on the vanished-predecessor path).
        predecessor: Option<Row>,
        /// The create's receipt.
        receipt: Value,
    },
    /// Wait `ms` milliseconds, then call [`super::Flush::handle_waited`]: the longest the
    /// answers waiting to share a transaction wait (§8, [`ACK_WAIT_MS`]). A driver whose
    /// flush is done need not wait for it.
    Wait {
        /// Token for `handle_waited`.
        token: Token,
        /// How long.
        ms: u32,
    },
    /// Ask the app's `findCreateReceipt` port.
    FindReceipt {
        /// Token for `handle_found`.
        token: Token,
        /// Account.
        owner: String,
        /// The vanished create's id.
        operation_id: String,
    },
}

/// Sends of distinct records one flush has outstanding at once (§8 limit) unless the app
/// sets `concurrency`; as many rows more are claimed ahead of their sends. It also
/// sets how many rows share a claim (and, answering together, an ACK) transaction, and it
/// keeps sends in flight while IndexedDB works. 16 measured about twice as fast as 4 with
/// an instant `send`, and keeps a browser's 6 connections per HTTP/1.1 host busy
/// (BENCHMARKS.md).
pub const DEFAULT_CONCURRENCY: usize = 16;

/// The longest an answer waits, unwritten, for other answers or a claim to share its
/// transaction with (§8): long beside one IndexedDB transaction, short beside a person.
pub const ACK_WAIT_MS: u32 = 50;

/// Options of one flush.
#[derive(Clone, Debug, PartialEq)]
pub struct FlushOptions {
    /// The only owner whose rows are read, claimed and changed.
    pub owner: String,
    /// This tab.
    pub tab: Tab,
    /// Retry backoff.
    pub backoff: Backoff,
    /// Stop claiming after this many sends.
    pub max_rows: Option<u64>,
    /// Claim and send nothing at or after this instant of the tab's clock (§8): a service
    /// worker's `sync` event must end within the browser's limit, so the flush stops taking
    /// rows (those claimed and not sent are released) and leaves the rest queued. Sends and
    /// answers under way still finish.
    pub deadline: Option<Millis>,
    /// Sends of different targets outstanding at once (at least 1); as many rows more may
    /// be claimed ahead of their sends.
    pub concurrency: usize,
    /// The app gave `prepareSuccessor`.
    pub has_prepare: bool,
    /// The app gave `findCreateReceipt`.
    pub has_find: bool,
    /// The network is down (§8 offline): the flush claims nothing, calls no port and
    /// changes no row.
    pub offline: bool,
    /// When the network last came back (§10): rows deferred by a network failure before it
    /// are due at once.
    pub online_since: Option<Millis>,
}

impl FlushOptions {
    /// Defaults: no row limit, no deadline, 4 concurrent sends, no ports.
    #[must_use]
    pub fn new(owner: impl Into<String>, tab: Tab) -> FlushOptions {
        FlushOptions {
            owner: owner.into(),
            tab,
            backoff: Backoff::default(),
            max_rows: None,
            deadline: None,
            concurrency: DEFAULT_CONCURRENCY,
            has_prepare: false,
            has_find: false,
            offline: false,
            online_since: None,
        }
    }
}
