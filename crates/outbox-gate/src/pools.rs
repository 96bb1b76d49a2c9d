//! Pools with the settings the ledger relies on. An app that already has a pool can pass
//! its own to [`crate::Gate::new`]; these say which settings matter and why.

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{PgPool, SqlitePool};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// A SQLite file (created if missing), the embedded default:
///
/// - `journal_mode = WAL`: readers do not wait for the writer;
/// - `synchronous = FULL`: a commit is on disk before the answer leaves. With `NORMAL`, a
///   power cut may lose the last commits — a forgotten completed key, so a resend would be
///   applied twice. The gate's promise needs `FULL`;
/// - `busy_timeout = lock_timeout`: a writer waits that long for the write lock, then the
///   request gets `503` + `Retry-After`.
///
/// sqlx runs each SQLite connection on a thread of its own, so waiting never blocks the
/// async runtime.
///
/// # Errors
/// The file cannot be opened or created.
pub async fn sqlite_file(path: &Path, lock_timeout: Duration) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(lock_timeout);
    SqlitePoolOptions::new().max_connections(8).connect_with(options).await
}

/// A throwaway SQLite database in memory: every key is forgotten when the process ends, so
/// a resend after a restart is applied twice. For tests only. One connection, never closed
/// (each SQLite connection to `:memory:` would be a database of its own).
///
/// # Errors
/// SQLite failed to open it.
pub async fn sqlite_in_memory() -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str("sqlite::memory:")?;
    SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await
}

/// A PostgreSQL pool; `lock_timeout` bounds how long a statement waits for a row or table
/// lock before failing (`55P03`, answered `503` + `Retry-After`).
///
/// # Errors
/// The URL is invalid or the server cannot be reached.
pub async fn postgres(url: &str, max_connections: u32, lock_timeout: Duration) -> Result<PgPool, sqlx::Error> {
    let options =
        PgConnectOptions::from_str(url)?.options([("lock_timeout", format!("{}ms", lock_timeout.as_millis()))]);
    PgPoolOptions::new().max_connections(max_connections).connect_with(options).await
}
