//! The idempotency ledger (SPEC §14) behind a small trait, so that another engine can be
//! added beside SQLite. The domain records live in the same database as the ledger: the
//! domain write and the completion of its record commit in one transaction.

use serde_json::Value;
use std::fmt;

/// One domain change, as the HTTP layer parsed it.
#[derive(Clone, Debug, PartialEq)]
pub enum DomainOp {
    /// Create a record of `entity`.
    Create { entity: String, body: Value },
    /// Update a record; `revision` is the client's base revision (`If-Match`), if any.
    Update { entity: String, id: i64, revision: Option<i64>, body: Value },
    /// Delete a record.
    Delete { entity: String, id: i64, revision: Option<i64> },
    /// A command: append `item` to the array `field` of a record (a set logged on a
    /// workout). Every occurrence counts, so the client sends these with `merge: false`.
    Append { entity: String, id: i64, revision: Option<i64>, field: String, item: Value },
}

impl DomainOp {
    /// `create` / `update` / `delete`.
    pub fn op_type(&self) -> &'static str {
        match self {
            DomainOp::Create { .. } => "create",
            DomainOp::Update { .. } => "update",
            DomainOp::Delete { .. } => "delete",
            DomainOp::Append { .. } => "append",
        }
    }

    /// The client's base revision (`If-Match`), if any; a create has none.
    pub fn base_revision(&self) -> Option<i64> {
        match self {
            DomainOp::Create { .. } => None,
            DomainOp::Update { revision, .. }
            | DomainOp::Delete { revision, .. }
            | DomainOp::Append { revision, .. } => *revision,
        }
    }
}

/// An HTTP answer the gate gives, stored for replay once completed.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// JSON body.
    pub body: Value,
    /// True when served from the ledger (`Idempotent-Replayed: true`).
    pub replayed: bool,
}

impl Answer {
    /// A fresh answer.
    pub fn new(status: u16, body: Value) -> Answer {
        Answer { status, body, replayed: false }
    }
}

/// What an attempt to reserve `(actor, operationId)` found.
#[derive(Clone, Debug, PartialEq)]
pub enum Reservation {
    /// This request holds the key now (new, or taken over from a crashed worker whose
    /// processing lease ran out); `holder` must be shown to complete it.
    Reserved { holder: String, recovered: bool },
    /// Completed with the same fingerprint: replay the stored answer.
    Replay(Answer),
    /// The key is known with another fingerprint: `422 PAYLOAD_CONFLICT`.
    PayloadConflict,
    /// The first request with this key is still processing: `409 IN_PROGRESS`.
    InProgress,
}

/// A ledger failure (the storage engine's message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerError(pub String);

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ledger: {}", self.0)
    }
}

impl std::error::Error for LedgerError {}

/// The gate's storage: ledger and domain records together.
pub trait Ledger: Send + Sync {
    /// Reserves the key atomically (insert-or-nothing on the unique key, never select
    /// then insert); a `processing` record whose lease ended is taken over.
    ///
    /// # Errors
    /// The engine failed.
    fn reserve(
        &self,
        actor: &str,
        op_id: &str,
        op_type: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Result<Reservation, LedgerError>;

    /// Carries out the domain change and completes the record in one transaction; only
    /// the current `holder` may complete. The answer (success or domain rejection) is
    /// stored for replay.
    ///
    /// # Errors
    /// The engine failed, or `holder` no longer holds the key (nothing was written).
    fn complete(
        &self,
        actor: &str,
        op_id: &str,
        holder: &str,
        op: &DomainOp,
        now_ms: i64,
    ) -> Result<Answer, LedgerError>;

    /// Drops a reservation whose request could not be carried out (so a retry can).
    ///
    /// # Errors
    /// The engine failed.
    fn release(&self, actor: &str, op_id: &str, holder: &str) -> Result<(), LedgerError>;

    /// The stored answer of a completed operation of `actor`.
    ///
    /// # Errors
    /// The engine failed.
    fn receipt(&self, actor: &str, op_id: &str) -> Result<Option<Answer>, LedgerError>;

    /// Removes completed records whose retention ended; returns how many.
    ///
    /// # Errors
    /// The engine failed.
    fn purge_expired(&self, now_ms: i64) -> Result<usize, LedgerError>;

    /// The actor's live records, as `{serverId, revision, body}`.
    ///
    /// # Errors
    /// The engine failed.
    fn records(&self, actor: &str) -> Result<Vec<Value>, LedgerError>;

    /// Every applied effect: `{opId, actor, kind, target, count}` (for tests and the demo).
    ///
    /// # Errors
    /// The engine failed.
    fn effects(&self) -> Result<Vec<Value>, LedgerError>;
}
