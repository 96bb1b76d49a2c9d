//! The [`Engine`] implementations: one copy of the statements' order and checks for both
//! engines, and what differs between them beyond the SQL text (migration, write transactions,
//! transient error codes).

use super::sql::{POSTGRES, SQLITE};
use super::{answer_of, transient_common, Engine, NewRecord, Purged, Receipt, RecordKey, Reservation};
use crate::answer::Answer;
use sqlx::{Pool, Postgres, Row, Sqlite, Transaction};
use std::future::Future;

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
                        .bind(r.scope)
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
                    let Some(row) =
                        sqlx::query($sql.select).bind(r.scope).bind(r.actor).bind(r.key).fetch_optional(pool).await?
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
                        .bind(r.scope)
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
                id: RecordKey<'_>,
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
                    .bind(id.scope)
                    .bind(id.actor)
                    .bind(id.key)
                    .bind(fence)
                    .bind(fingerprint)
                    .execute(&mut **tx)
                    .await?
                    .rows_affected();
                Ok(done == 1)
            }

            async fn release(
                pool: &Pool<Self>,
                id: RecordKey<'_>,
                fingerprint: &str,
                fence: i64,
                lease_until_ms: i64,
            ) -> Result<(), sqlx::Error> {
                sqlx::query($sql.release)
                    .bind(id.scope)
                    .bind(id.actor)
                    .bind(id.key)
                    .bind(fence)
                    .bind(fingerprint)
                    .bind(lease_until_ms)
                    .execute(pool)
                    .await?;
                Ok(())
            }

            async fn receipt(pool: &Pool<Self>, id: RecordKey<'_>, now_ms: i64) -> Result<Receipt, sqlx::Error> {
                let query = sqlx::query($sql.select).bind(id.scope).bind(id.actor).bind(id.key);
                let Some(row) = query.fetch_optional(pool).await? else {
                    return Ok(Receipt::Unknown);
                };
                let (status, lease): (String, i64) = (row.try_get(1)?, row.try_get(3)?);
                Ok(if status == "completed" {
                    Receipt::Completed(answer_of(row.try_get(4)?, row.try_get(5)?))
                } else {
                    Receipt::Processing { retry_after_ms: (lease - now_ms).max(0) }
                })
            }

            async fn purge(pool: &Pool<Self>, now_ms: i64, limit: i64) -> Result<Purged, sqlx::Error> {
                let completed =
                    sqlx::query($sql.purge_completed).bind(now_ms).bind(limit).execute(pool).await?.rows_affected();
                let orphaned =
                    sqlx::query($sql.purge_orphaned).bind(now_ms).bind(limit).execute(pool).await?.rows_affected();
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

/// The statements of a schema text.
fn statements(schema: &'static str) -> impl Iterator<Item = &'static str> {
    schema.split(';').filter(|s| !s.trim().is_empty())
}

/// The columns of a ledger made before scopes, copied as they are.
const UNSCOPED_COLUMNS: &str = "actor, key, operation, fingerprint, status, fence, lease_until, response_status, \
    response_body, created_at, completed_at, expires_at";

/// What differs between the engines beyond the SQL text.
trait EngineExtra: sqlx::Database {
    fn migrate_locked(pool: &Pool<Self>, schema: &'static str) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
    fn begin_write(pool: &Pool<Self>) -> impl Future<Output = Result<Transaction<'static, Self>, sqlx::Error>> + Send;
    fn transient_code(code: &str) -> bool;
}

impl EngineExtra for Sqlite {
    async fn migrate_locked(pool: &Pool<Self>, schema: &'static str) -> Result<(), sqlx::Error> {
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        for statement in statements(schema) {
            sqlx::query(statement).execute(&mut *tx).await?;
        }
        // A ledger made before scopes (keyed by `(actor, key)`): SQLite cannot change a
        // primary key, so the table is made again with the scope and its records copied
        // into the empty scope, where every lookup of the unchanged API finds them.
        let scoped: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM pragma_table_info('gate_idempotency') WHERE name = 'scope'")
                .fetch_one(&mut *tx)
                .await?;
        if scoped == 0 {
            let moved = [
                "ALTER TABLE gate_idempotency RENAME TO gate_idempotency_unscoped",
                "DROP INDEX IF EXISTS gate_idempotency_purge",
            ];
            for statement in moved.into_iter().chain(statements(schema)) {
                sqlx::query(statement).execute(&mut *tx).await?;
            }
            sqlx::query(&format!(
                "INSERT INTO gate_idempotency (scope, {UNSCOPED_COLUMNS}) SELECT '', {UNSCOPED_COLUMNS}
                 FROM gate_idempotency_unscoped"
            ))
            .execute(&mut *tx)
            .await?;
            sqlx::query("DROP TABLE gate_idempotency_unscoped").execute(&mut *tx).await?;
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
        for statement in statements(schema) {
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
        // A ledger made before scopes (keyed by `(actor, key)`): its records go to the
        // empty scope, where every lookup of the unchanged API finds them, and the primary
        // key becomes `(scope, actor, key)`.
        let scoped: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name = 'gate_idempotency' AND column_name = 'scope'",
        )
        .fetch_optional(&mut *tx)
        .await?;
        if scoped.is_none() {
            sqlx::query("ALTER TABLE gate_idempotency ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
                .execute(&mut *tx)
                .await?;
            let key: String = sqlx::query_scalar(
                "SELECT conname::text FROM pg_constraint WHERE conrelid = 'gate_idempotency'::regclass AND contype = 'p'",
            )
            .fetch_one(&mut *tx)
            .await?;
            sqlx::query(&format!(
                "ALTER TABLE gate_idempotency DROP CONSTRAINT \"{}\", ADD PRIMARY KEY (scope, actor, key)",
                key.replace('"', "\"\"")
            ))
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
