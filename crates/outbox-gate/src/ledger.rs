//! The idempotency ledger (SPEC §14): one table, `gate_idempotency`, keyed by
//! `(actor, key)`, in the app's own database, so that the app's domain writes and the
//! completion of the record commit in one transaction.
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
use sqlx::{Pool, Postgres, Row, Sqlite, Transaction};
use std::future::Future;

/// What an attempt to reserve `(actor, key)` found.
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

/// What the ledger holds for `(actor, key)`, for a receipt lookup.
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

/// A reservation to make.
#[derive(Clone, Copy, Debug)]
pub struct NewRecord<'a> {
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

impl NewRecord<'_> {
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
        actor: &str,
        key: &str,
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
        actor: &str,
        key: &str,
        fingerprint: &str,
        fence: i64,
        lease_until_ms: i64,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;

    /// The record of `(actor, key)`.
    fn receipt(
        pool: &Pool<Self>,
        actor: &str,
        key: &str,
        now_ms: i64,
    ) -> impl Future<Output = Result<Receipt, sqlx::Error>> + Send;

    /// Removes completed records whose retention ended and processing records whose lease
    /// ended (never one still within its lease).
    fn purge(pool: &Pool<Self>, now_ms: i64) -> impl Future<Output = Result<Purged, sqlx::Error>> + Send;

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

/// The statements of one engine. Both engines use `$n` placeholders (sqlx's SQLite
/// driver accepts them too); they differ in column types and time arithmetic.
struct Sql {
    schema: &'static str,
    insert: &'static str,
    select: &'static str,
    takeover: &'static str,
    complete: &'static str,
    release: &'static str,
    purge_completed: &'static str,
    purge_orphaned: &'static str,
}

/// SQLite: times are epoch milliseconds in `INTEGER`s, the answer is JSON text.
const SQLITE: Sql = Sql {
    schema: "CREATE TABLE IF NOT EXISTS gate_idempotency (
        actor TEXT NOT NULL,
        key TEXT NOT NULL,
        operation TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('processing', 'completed')),
        fence INTEGER NOT NULL,
        lease_until INTEGER NOT NULL,
        response_status INTEGER,
        response_body TEXT,
        created_at INTEGER NOT NULL,
        completed_at INTEGER,
        expires_at INTEGER,
        PRIMARY KEY (actor, key)
    );
    CREATE INDEX IF NOT EXISTS gate_idempotency_purge ON gate_idempotency (status, expires_at)",
    insert: "INSERT INTO gate_idempotency (actor, key, operation, fingerprint, status, fence, lease_until, created_at)
        VALUES ($1, $2, $3, $4, 'processing', 1, $5, $6) ON CONFLICT (actor, key) DO NOTHING",
    select: "SELECT fingerprint, status, fence, lease_until, response_status, response_body
        FROM gate_idempotency WHERE actor = $1 AND key = $2",
    takeover: "UPDATE gate_idempotency SET fence = fence + 1, lease_until = $1
        WHERE actor = $2 AND key = $3 AND status = 'processing' AND fence = $4 AND lease_until <= $5",
    complete: "UPDATE gate_idempotency SET status = 'completed', response_status = $1, response_body = $2,
        completed_at = $3, expires_at = $4
        WHERE actor = $5 AND key = $6 AND fence = $7 AND fingerprint = $8 AND status = 'processing'",
    release: "DELETE FROM gate_idempotency
        WHERE actor = $1 AND key = $2 AND fence = $3 AND fingerprint = $4 AND lease_until = $5
          AND status = 'processing'",
    purge_completed: "DELETE FROM gate_idempotency WHERE status = 'completed' AND expires_at < $1",
    purge_orphaned: "DELETE FROM gate_idempotency WHERE status = 'processing' AND lease_until < $1",
};

/// PostgreSQL: times are `TIMESTAMPTZ` (epoch milliseconds cross the wire and are
/// converted in SQL), the answer is JSON text. Not `JSONB`: it refuses a string holding
/// U+0000 (an app echoing user input), which failed every attempt's commit — the operation
/// was never applied, never blocked, sent again for ever — and it reorders keys, so a
/// replay's bytes differed from the first answer's.
const POSTGRES: Sql = Sql {
    schema: "CREATE TABLE IF NOT EXISTS gate_idempotency (
        actor TEXT NOT NULL,
        key TEXT NOT NULL,
        operation TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('processing', 'completed')),
        fence BIGINT NOT NULL,
        lease_until TIMESTAMPTZ NOT NULL,
        response_status INTEGER,
        response_body TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        completed_at TIMESTAMPTZ,
        expires_at TIMESTAMPTZ,
        PRIMARY KEY (actor, key)
    );
    CREATE INDEX IF NOT EXISTS gate_idempotency_purge ON gate_idempotency (status, expires_at)",
    insert: "INSERT INTO gate_idempotency (actor, key, operation, fingerprint, status, fence, lease_until, created_at)
        VALUES ($1, $2, $3, $4, 'processing', 1, to_timestamp($5::float8 / 1000), to_timestamp($6::float8 / 1000))
        ON CONFLICT (actor, key) DO NOTHING",
    select: "SELECT fingerprint, status, fence, (extract(epoch FROM lease_until) * 1000)::bigint,
        response_status::bigint, response_body::text
        FROM gate_idempotency WHERE actor = $1 AND key = $2",
    takeover: "UPDATE gate_idempotency SET fence = fence + 1, lease_until = to_timestamp($1::float8 / 1000)
        WHERE actor = $2 AND key = $3 AND status = 'processing' AND fence = $4
          AND lease_until <= to_timestamp($5::float8 / 1000)",
    complete: "UPDATE gate_idempotency SET status = 'completed', response_status = $1::bigint::int,
        response_body = $2, completed_at = to_timestamp($3::float8 / 1000),
        expires_at = to_timestamp($4::float8 / 1000)
        WHERE actor = $5 AND key = $6 AND fence = $7 AND fingerprint = $8 AND status = 'processing'",
    release: "DELETE FROM gate_idempotency
        WHERE actor = $1 AND key = $2 AND fence = $3 AND fingerprint = $4
          AND lease_until = to_timestamp($5::float8 / 1000) AND status = 'processing'",
    purge_completed: "DELETE FROM gate_idempotency WHERE status = 'completed'
        AND expires_at < to_timestamp($1::float8 / 1000)",
    purge_orphaned: "DELETE FROM gate_idempotency WHERE status = 'processing'
        AND lease_until < to_timestamp($1::float8 / 1000)",
};

/// The statements' order and checks are the same on both engines; only the SQL text and
/// the migration differ. A macro keeps one copy of them with each engine's concrete types
/// (generic sqlx code over `Database` needs a wall of higher-ranked bounds instead).
macro_rules! engine_impl {
    ($db:ty, $sql:expr) => {
        impl Engine for $db {
            async fn migrate(pool: &Pool<Self>) -> Result<(), sqlx::Error> {
                migrate_schema(pool, $sql.schema).await
            }

            async fn reserve(pool: &Pool<Self>, r: NewRecord<'_>) -> Result<Reservation, sqlx::Error> {
                let lease_until = r.lease_until_ms();
                // A record can vanish between the insert and the select (released or
                // purged meanwhile): then try again, a few times.
                for _ in 0..3 {
                    let inserted = sqlx::query($sql.insert)
                        .bind(r.actor)
                        .bind(r.key)
                        .bind(r.operation)
                        .bind(r.fingerprint)
                        .bind(lease_until)
                        .bind(r.now_ms)
                        .execute(pool)
                        .await?
                        .rows_affected();
                    if inserted == 1 {
                        return Ok(Reservation::Reserved { fence: 1, recovered: false });
                    }
                    let Some(row) = sqlx::query($sql.select).bind(r.actor).bind(r.key).fetch_optional(pool).await?
                    else {
                        continue;
                    };
                    let (fingerprint, status, fence, lease): (String, String, i64, i64) =
                        (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                    if fingerprint != r.fingerprint {
                        return Ok(Reservation::PayloadConflict);
                    }
                    if status == "completed" {
                        return Ok(Reservation::Replay(answer_of(row.try_get(4)?, row.try_get(5)?)));
                    }
                    if lease > r.now_ms {
                        return Ok(Reservation::InProgress { retry_after_ms: lease - r.now_ms });
                    }
                    let taken = sqlx::query($sql.takeover)
                        .bind(lease_until)
                        .bind(r.actor)
                        .bind(r.key)
                        .bind(fence)
                        .bind(r.now_ms)
                        .execute(pool)
                        .await?
                        .rows_affected();
                    return Ok(if taken == 1 {
                        Reservation::Reserved { fence: fence + 1, recovered: true }
                    } else {
                        // Someone else took it over first.
                        Reservation::InProgress { retry_after_ms: r.lease_ms }
                    });
                }
                Ok(Reservation::InProgress { retry_after_ms: 1_000 })
            }

            async fn begin(pool: &Pool<Self>) -> Result<Transaction<'static, Self>, sqlx::Error> {
                begin_write(pool).await
            }

            async fn complete(
                tx: &mut Transaction<'static, Self>,
                actor: &str,
                key: &str,
                fingerprint: &str,
                fence: i64,
                answer: &Answer,
                now_ms: i64,
                expires_ms: i64,
            ) -> Result<bool, sqlx::Error> {
                let done = sqlx::query($sql.complete)
                    .bind(i64::from(answer.status.as_u16()))
                    .bind(answer.body.to_string())
                    .bind(now_ms)
                    .bind(expires_ms)
                    .bind(actor)
                    .bind(key)
                    .bind(fence)
                    .bind(fingerprint)
                    .execute(&mut **tx)
                    .await?
                    .rows_affected();
                Ok(done == 1)
            }

            async fn release(
                pool: &Pool<Self>,
                actor: &str,
                key: &str,
                fingerprint: &str,
                fence: i64,
                lease_until_ms: i64,
            ) -> Result<(), sqlx::Error> {
                sqlx::query($sql.release)
                    .bind(actor)
                    .bind(key)
                    .bind(fence)
                    .bind(fingerprint)
                    .bind(lease_until_ms)
                    .execute(pool)
                    .await?;
                Ok(())
            }

            async fn receipt(pool: &Pool<Self>, actor: &str, key: &str, now_ms: i64) -> Result<Receipt, sqlx::Error> {
                let Some(row) = sqlx::query($sql.select).bind(actor).bind(key).fetch_optional(pool).await? else {
                    return Ok(Receipt::Unknown);
                };
                let (status, lease): (String, i64) = (row.try_get(1)?, row.try_get(3)?);
                Ok(if status == "completed" {
                    Receipt::Completed(answer_of(row.try_get(4)?, row.try_get(5)?))
                } else {
                    Receipt::Processing { retry_after_ms: (lease - now_ms).max(0) }
                })
            }

            async fn purge(pool: &Pool<Self>, now_ms: i64) -> Result<Purged, sqlx::Error> {
                let completed = sqlx::query($sql.purge_completed).bind(now_ms).execute(pool).await?.rows_affected();
                let orphaned = sqlx::query($sql.purge_orphaned).bind(now_ms).execute(pool).await?.rows_affected();
                Ok(Purged { completed, orphaned })
            }

            fn is_transient(error: &sqlx::Error) -> bool {
                transient_common(error).unwrap_or_else(|| is_transient_code::<$db>(error))
            }
        }
    };
}

engine_impl!(Sqlite, SQLITE);
engine_impl!(Postgres, POSTGRES);

async fn migrate_schema<DB: EngineExtra>(pool: &Pool<DB>, schema: &'static str) -> Result<(), sqlx::Error> {
    DB::migrate_locked(pool, schema).await
}

async fn begin_write<DB: EngineExtra>(pool: &Pool<DB>) -> Result<Transaction<'static, DB>, sqlx::Error> {
    DB::begin_write(pool).await
}

fn is_transient_code<DB: EngineExtra>(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(e) => e.code().is_some_and(|c| DB::transient_code(&c)),
        _ => false,
    }
}

/// What differs between the engines beyond the SQL text.
trait EngineExtra: sqlx::Database {
    fn migrate_locked(pool: &Pool<Self>, schema: &'static str) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
    fn begin_write(pool: &Pool<Self>) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;
    fn transient_code(code: &str) -> bool;
}

impl EngineExtra for Sqlite {
    async fn migrate_locked(pool: &Pool<Self>, schema: &'static str) -> Result<(), sqlx::Error> {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        for statement in schema.split(';').filter(|s| !s.trim().is_empty()) {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    async fn begin_write(pool: &Pool<Self>) -> Result<Transaction<'static, Self>, sqlx::Error> {
        pool.begin_with("BEGIN IMMEDIATE").await
    }

    /// `SQLITE_BUSY` (5) and `SQLITE_LOCKED` (6), with their extended codes.
    fn transient_code(code: &str) -> bool {
        code.parse::<i32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6))
    }
}

impl EngineExtra for Postgres {
    async fn migrate_locked(pool: &Pool<Self>, schema: &'static str) -> Result<(), sqlx::Error> {
        // Several gate processes may start at once: `CREATE ... IF NOT EXISTS` races on the
        // catalog, so the migration runs under a transaction-scoped advisory lock.
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock(7262960341)").execute(&mut *tx).await?;
        for statement in schema.split(';').filter(|s| !s.trim().is_empty()) {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        // A ledger made by an earlier version keeps its answers as `JSONB`: turned into
        // text once (the stored answers stay the same JSON).
        let jsonb: Option<String> = sqlx::query_scalar(
            "SELECT data_type::text FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name = 'gate_idempotency' AND column_name = 'response_body' AND data_type = 'jsonb'",
        )
        .fetch_optional(&mut *tx)
        .await?;
        if jsonb.is_some() {
            sqlx::query("ALTER TABLE gate_idempotency ALTER COLUMN response_body TYPE TEXT USING response_body::text")
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await
    }

    async fn begin_write(pool: &Pool<Self>) -> Result<Transaction<'static, Self>, sqlx::Error> {
        pool.begin().await
    }

    /// Serialization failure, deadlock, lock timeout, statement timeout, too many
    /// connections, server shutting down.
    fn transient_code(code: &str) -> bool {
        matches!(code, "40001" | "40P01" | "55P03" | "57014" | "53300" | "57P01")
    }
}
