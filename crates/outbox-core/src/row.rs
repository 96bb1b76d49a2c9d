//! The stored row, format v1 (SPEC §3), as typed Rust values.
//!
//! Every struct keeps the fields it does not know in `extra`, so that a newer writer's
//! fields survive a read-modify-write by this version (§3 rule 2).

pub use crate::kind::Kind;
use crate::time::Millis;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::fmt;

/// Row state as stored.
///
/// ```text
///            claim (§5)              success → row deleted
///  queued ───────────────▶ sending ──┬── transient ──▶ queued (nextAttemptAt)
///    ▲  ▲                            ├── auth ───────▶ held ──resumeHeld──▶ queued
///    │  └───── retryBlocked ─────────┼── permanent ──▶ blocked
///    │                               └── conflict ───▶ row replaced by a conflict successor
///    └── lease expiry: a `sending` row whose claim expired is claimable again
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowState {
    /// Waiting to be sent (maybe not before `nextAttemptAt`).
    Queued,
    /// Claimed by a tab that is sending it.
    Sending,
    /// Waiting for a new login (auth answer).
    Held,
    /// Quarantined: rejected permanently, or an intent that could not be converted.
    Blocked,
}

impl RowState {
    /// The stored string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RowState::Queued => "queued",
            RowState::Sending => "sending",
            RowState::Held => "held",
            RowState::Blocked => "blocked",
        }
    }

    /// Parses the stored string; unknown states give `None`.
    #[must_use]
    pub fn parse(s: &str) -> Option<RowState> {
        match s {
            "queued" => Some(RowState::Queued),
            "sending" => Some(RowState::Sending),
            "held" => Some(RowState::Held),
            "blocked" => Some(RowState::Blocked),
            _ => None,
        }
    }
}

/// `{tabId, expiresAt, fence}`: who is sending the row, until when (§5).
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// The claiming tab.
    pub tab_id: String,
    /// The claim is void at and after this instant.
    pub expires_at: Millis,
    /// Grows by one on every claim; never reset while the row lives.
    pub fence: u64,
    /// Fields this version does not know.
    pub extra: Map<String, Value>,
}

/// `{attemptCount, lastAttemptAt, lastErrorCode?}`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Evidence {
    /// Number of claims (attempts) so far.
    pub attempt_count: u64,
    /// When the last attempt was claimed.
    pub last_attempt_at: Option<Millis>,
    /// The code of the last failure, if any.
    pub last_error_code: Option<String>,
    /// Fields this version does not know.
    pub extra: Map<String, Value>,
}

/// `{bundle, at}`: which library version last claimed the row.
#[derive(Clone, Debug, PartialEq)]
pub struct Writer {
    /// Library version string.
    pub bundle: String,
    /// When it claimed.
    pub at: Millis,
    /// Fields this version does not know.
    pub extra: Map<String, Value>,
}

/// What a tab holds after claiming a row; needed to apply the answer (§6).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    /// The tab that claimed.
    pub tab_id: String,
    /// The fence its claim wrote.
    pub fence: u64,
}

/// One decoded row of the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Operation id (UUID v4), the store key.
    pub id: String,
    /// Account the row belongs to.
    pub owner: String,
    /// Record key, or `pending:<create id>`.
    pub target: String,
    /// create / update / delete.
    pub kind: Kind,
    /// Request body exactly as the app gave it.
    pub body: Value,
    /// Base revision for optimistic concurrency: a JSON number or string, opaque to the
    /// library, stored, fingerprinted and sent exactly as given ([`is_revision`]).
    pub revision: Option<Value>,
    /// See [`crate::fingerprint`].
    pub fingerprint: String,
    /// Enqueue time; send order.
    pub saved_at: Millis,
    /// Stored state.
    pub state: RowState,
    /// When the current or last attempt was claimed (dropped on an answer).
    pub sent_at: Option<Millis>,
    /// When a transient or auth answer deferred it.
    pub deferred_at: Option<Millis>,
    /// When an auth answer held it.
    pub held_at: Option<Millis>,
    /// When it was quarantined.
    pub blocked_at: Option<Millis>,
    /// Not sendable before this instant.
    pub next_attempt_at: Option<Millis>,
    /// Why it is quarantined.
    pub blocked_code: Option<String>,
    /// When a later row of its chain was claimed while this one was blocked (§5, §7): that
    /// row's fields reach the server first, so this blocked row is never absorbed or merged
    /// into a later one (its older values would come back over them).
    pub overtaken_at: Option<Millis>,
    /// The current or last claim.
    pub claim: Option<Claim>,
    /// Attempt history.
    pub evidence: Option<Evidence>,
    /// Which library version last claimed it.
    pub writer: Option<Writer>,
    /// The row this one waits for.
    pub successor_of: Option<String>,
    /// Why a conflict successor was written (§9).
    pub conflict: Option<Value>,
    /// `noMerge: true` (§7): never merged, replaced, cancelled nor absorbing; the scope's
    /// later rows queue behind it. Not a fingerprint input (§2).
    pub no_merge: bool,
    /// Fields this version does not know, kept as stored.
    pub extra: Map<String, Value>,
}

/// True for a value that can be a base revision (§3): a JSON number or a string (an ETag,
/// `"7"`). The library never interprets it; it is stored, fingerprinted and sent as given.
/// `null` means "no revision"; objects, arrays and booleans are not revisions.
#[must_use]
pub fn is_revision(value: &Value) -> bool {
    value.is_number() || value.is_string()
}

/// Prefix of targets naming a record the server has not created yet.
pub const PENDING_PREFIX: &str = "pending:";

impl Row {
    /// The create id a `pending:` target names, if it is one.
    #[must_use]
    pub fn pending_create_id(&self) -> Option<&str> {
        self.target.strip_prefix(PENDING_PREFIX)
    }

    /// An intent row (§7): an update or delete of a record not created yet.
    #[must_use]
    pub fn is_intent(&self) -> bool {
        self.kind != Kind::Create && self.pending_create_id().is_some()
    }

    /// True if no attempt of this row was ever made (no claim, no evidence, no answer).
    #[must_use]
    pub fn never_attempted(&self) -> bool {
        self.state == RowState::Queued
            && self.evidence.is_none()
            && self.claim.is_none()
            && self.sent_at.is_none()
            && self.deferred_at.is_none()
            && self.held_at.is_none()
    }

    /// The ticket matching this row's claim, if it has one.
    #[must_use]
    pub fn ticket(&self) -> Option<Ticket> {
        self.claim.as_ref().map(|c| Ticket { tab_id: c.tab_id.clone(), fence: c.fence })
    }

    /// The scope this row lives in.
    #[must_use]
    pub fn scope(&self) -> crate::scope::Scope {
        crate::scope::Scope::target(&self.owner, &self.target)
    }

    /// This row's place in the send order, `(savedAt, id)` (§8).
    #[must_use]
    pub fn order_key(&self) -> (Millis, &str) {
        (self.saved_at, &self.id)
    }
}

/// Compares two rows in the send order `(savedAt, id)` (§8): the order rows are listed,
/// selected, coalesced (§7) and their intents converted in.
#[must_use]
pub fn send_order(a: &Row, b: &Row) -> Ordering {
    a.order_key().cmp(&b.order_key())
}

/// Orders rows as a chain is sent: by `(savedAt, id)` ([`send_order`]), except that a row
/// never comes before the row it waits for (`successorOf`) among them. Tabs' clocks differ,
/// so a successor written by a tab whose clock is behind can carry an earlier `savedAt`
/// than its predecessor; its place in the chain is still after it (§7, §8). A cycle, which
/// no planner writes, falls back to plain order.
#[must_use]
pub fn chain_order<T>(mut items: Vec<T>, row: impl Fn(&T) -> &Row) -> Vec<T> {
    crate::sort::stable_by(&mut items, |a, b| send_order(row(a), row(b)));
    let mut ordered = Vec::with_capacity(items.len());
    while !items.is_empty() {
        let waits = |r: &Row| r.successor_of.as_ref().is_some_and(|p| items.iter().any(|w| &row(w).id == p));
        let next = items.iter().position(|t| !waits(row(t))).unwrap_or(0);
        ordered.push(items.remove(next));
    }
    ordered
}

/// [`chain_order`] of rows themselves: one copy in the module for the planners that order
/// rows alone (each generic copy, its sort's closure with it, is inlined whole where it is
/// called, issue 35).
#[must_use]
pub fn chain_order_rows(rows: Vec<Row>) -> Vec<Row> {
    chain_order(rows, |r| r)
}

/// The send order of a stored value, decodable or not: its `savedAt` (unreadable first)
/// then its `id` (a non-string id by its canonical JSON). Agrees with [`send_order`] on
/// decodable rows.
#[must_use]
pub fn stored_order_key(raw: &Value) -> (Option<Millis>, String) {
    let saved_at = raw.get("savedAt").and_then(Millis::from_json);
    let id = match raw.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => crate::scope::key_string(raw),
    };
    (saved_at, id)
}

/// The stored value with this `id` among `rows`, as stored (plans compare rows as stored, §4).
#[must_use]
pub fn find_stored<'a>(rows: &'a [Value], id: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r.get("id").and_then(Value::as_str) == Some(id))
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ({})", self.kind.as_str(), self.target, self.id, self.state.as_str())
    }
}

/// True if `row` carries exactly this ticket's claim.
#[must_use]
pub fn claim_is_mine(row: &Row, ticket: &Ticket) -> bool {
    row.claim.as_ref().is_some_and(|c| c.tab_id == ticket.tab_id && c.fence == ticket.fence)
}
