//! The idempotency ledger (SPEC §14): one table, `gate_idempotency`, keyed by
//! `(scope, actor, key)` (the scope is the app's: a tenant, a host; empty by default), in
//! the app's own database, so that the app's domain writes and the completion of the record
//! commit in one transaction.
//!
//! A record's life:
//!
//! ```text
//!             reserve (insert-or-nothing)          complete (fence checked by the database)
//!   (none) ─────────────────────────────▶ processing ───────────────────────────────▶ completed
//!     ▲                                     │   ▲ │                                      │
//!     │ release (handler failed,            │   │ └─ takeover after the lease: fence + 1  │
//!     │ client gone) / purge (orphaned) ◀───┘   └──── (the old holder can no longer      │
//!     │                                                complete: its fence is stale)      │
//!     └──────────────────────────────── purge (retention ended) ◀────────────────────────┘
//! ```
//!
//! [`Engine`] is implemented for [`sqlx::Sqlite`] (embedded, the default) and
//! [`sqlx::Postgres`]; each implementation is plain SQL for that engine, and both share the
//! same statements' shape (see `engine_impl!`).

use crate::answer::Answer;
use axum::http::StatusCode;
use serde_json::Value;
use sqlx::{Pool, Transaction};
use std::future::Future;

mod engines;
mod sql;

/// What an attempt to reserve `(scope, actor, key)` found.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum Reservation {
    /// This request holds the key now, under `fence`; only that fence can complete it.
    /// `recovered` when taken over from a holder whose lease ended.
    Reserved {
        /// The holder's fence (1 for a new record, one more on every takeover).
        fence: i64,
        /// True when taken over after the previous holder's lease ended.
        recovered: bool,
    },
    /// Completed with the same fingerprint: replay the stored answer.
    Replay(Answer),
    /// Known with another fingerprint: `422 PAYLOAD_CONFLICT`.
    PayloadConflict,
    /// The first request with this key is still within its lease: `409 IN_PROGRESS`.
    InProgress {
        /// Milliseconds until its lease ends (for `Retry-After`).
        retry_after_ms: i64,
    },
}

/// What the ledger holds for `(scope, actor, key)`, for a receipt lookup.
#[derive(Clone, Debug, PartialEq)]
pub enum Receipt {
    /// No record (never seen, released, or purged).
    Unknown,
    /// Still processing; its lease ends in `retry_after_ms`.
    Processing {
        /// Milliseconds until its lease ends.
        retry_after_ms: i64,
    },
    /// Completed with this answer.
    Completed(Answer),
}

/// How many records a purge removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    /// Completed records whose retention ended.
    pub completed: u64,
    /// Processing records whose lease ended with nobody taking them over (their holder
    /// crashed and the client never came back).
    pub orphaned: u64,
}

/// Which record: the ledger's primary key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordKey<'a> {
    /// The part of the app the actor acts in (a tenant, a host), as the app sets it; empty
    /// for an app with one.
    pub scope: &'a str,
    /// Who acts (from the app's authentication).
    pub actor: &'a str,
    /// The `Idempotency-Key`.
    pub key: &'a str,
}

impl<'a> RecordKey<'a> {
    /// `(actor, key)` in the empty scope.
    #[must_use]
    pub fn new(actor: &'a str, key: &'a str) -> RecordKey<'a> {
        RecordKey { scope: "", actor, key }
    }
}

/// A reservation to make.
#[derive(Clone, Copy, Debug)]
pub struct NewRecord<'a> {
    /// The app's scope (see [`RecordKey::scope`]).
    pub scope: &'a str,
    /// Who acts (from the app's authentication).
    pub actor: &'a str,
    /// The `Idempotency-Key`.
    pub key: &'a str,
    /// Method and path, kept for operators (`POST /api/records/workout`).
    pub operation: &'a str,
    /// The request's fingerprint.
    pub fingerprint: &'a str,
    /// The time now, epoch milliseconds.
    pub now_ms: i64,
    /// How long the reservation is held before another request may take it over.
    pub lease_ms: i64,
}

impl<'a> NewRecord<'a> {
    /// The record it makes.
    #[must_use]
    pub fn id(&self) -> RecordKey<'a> {
        RecordKey { scope: self.scope, actor: self.actor, key: self.key }
    }

    /// The lease end `reserve` writes, for a new record and a takeover alike; a release
    /// names it (see [`Engine::release`]).
    #[must_use]
    pub fn lease_until_ms(&self) -> i64 {
        self.now_ms.saturating_add(self.lease_ms)
    }
}

/// A database the ledger runs on. The methods are the ledger's statements; the gate
/// ([`crate::Gate`]) calls them in order: `reserve`, `begin`, (the app's handler),
/// `complete` and commit, or `release`.
pub trait Engine: sqlx::Database {
    /// Creates the ledger table if missing (safe when several processes start at once).
    fn migrate(pool: &Pool<Self>) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// Reserves the key atomically (insert-or-nothing on the primary key, never select
    /// then insert); a processing record whose lease ended is taken over (fence + 1, a
    /// compare-and-swap on the old fence).
    fn reserve(
        pool: &Pool<Self>,
        record: NewRecord<'_>,
    ) -> impl Future<Output = Result<Reservation, sqlx::Error>> + Send;

    /// Begins the transaction the app's handler writes in (SQLite: `BEGIN IMMEDIATE`, so
    /// that a read-then-write handler waits for the write lock instead of failing).
    fn begin(pool: &Pool<Self>) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;

    /// Stores the answer and completes the record inside `tx`, only if `fence` still holds
    /// it for this `fingerprint`: returns false (and the caller rolls back) when it was taken
    /// over or purged. The fingerprint is checked too because a fence starts again at 1 on
    /// a record inserted after a release or a purge: a holder that outlived its lease must
    /// never complete another request's record under the same key with its own answer.
    #[allow(clippy::too_many_arguments)] // the record's identity, its answer and its times
    fn complete(
        tx: &mut Transaction<'static, Self>,
        id: RecordKey<'_>,
        fingerprint: &str,
        fence: i64,
        answer: &Answer,
        now_ms: i64,
        expires_ms: i64,
    ) -> impl Future<Output = Result<bool, sqlx::Error>> + Send;

    /// Drops a processing reservation held by `fence` for `fingerprint` until
    /// `lease_until_ms` (as its reservation wrote it: `now_ms + lease_ms`), because its
    /// request could not be carried out, so that a retry can; does nothing if it completed,
    /// was taken over, or is another request's record now. The lease end tells this
    /// reservation from a later one of the same request: after a release or a purge the
    /// key's next record starts again at fence 1 with the same fingerprint, and a late
    /// release (retried, or queued behind a lock) must not drop it.
    fn release(
        pool: &Pool<Self>,
        id: RecordKey<'_>,
        fingerprint: &str,
        fence: i64,
        lease_until_ms: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// The record of `id`.
    fn receipt(
        pool: &Pool<Self>,
        id: RecordKey<'_>,
        now_ms: i64,
    ) -> impl Future<Output = Result<Receipt, sqlx::Error>> + Send;

    /// Removes completed records whose retention ended and processing records whose lease
    /// ended (never one still within its lease): at most `limit` of each in one statement
    /// each, so that other writers wait for one batch at most. [`crate::Gate::purge`] calls
    /// it until a batch comes back short.
    fn purge(pool: &Pool<Self>, now_ms: i64, limit: i64) -> impl Future<Output = Result<Purged, sqlx::Error>> + Send;

    /// True for a failure that a retry may cure (busy, lock timeout, serialization
    /// failure, deadlock, pool exhausted, connection lost): answered `503` + `Retry-After`.
    fn is_transient(error: &sqlx::Error) -> bool;
}

fn answer_of(status: Option<i64>, body: Option<String>) -> Answer {
    Answer {
        status: status
            .and_then(|s| u16::try_from(s).ok())
            .and_then(|s| StatusCode::from_u16(s).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body: body.and_then(|b| serde_json::from_str(&b).ok()).unwrap_or(Value::Null),
        replayed: true,
    }
}

fn transient_common(error: &sqlx::Error) -> Option<bool> {
    match error {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::WorkerCrashed => Some(true),
        sqlx::Error::Database(_) => None,
        _ => Some(false),
    }
}
