//! [`Gate`]: runs an app's handler at most once per `(scope, actor, Idempotency-Key)` (SPEC §14).

use crate::answer::{error, retry_later, Answer};
use crate::caller::Caller;
use crate::ledger::{Engine, NewRecord, Purged, Receipt, RecordKey, Reservation};
use crate::request::{Idempotent, MAX_KEY_LEN};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use sqlx::{Pool, Transaction};
use std::time::{Duration, Instant};

/// How long the gate holds things.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// A processing reservation is held this long; after it, another request with the key
    /// takes it over (its holder is taken to have crashed). Longer than the slowest handler.
    /// Default 30 s.
    pub lease: Duration,
    /// Completed records are kept this long, so that a client offline for weeks still gets
    /// its answer replayed instead of a second effect. Default 30 days.
    pub retention: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config { lease: Duration::from_secs(30), retention: Duration::from_secs(30 * 24 * 3600) }
    }
}

/// The time now, epoch milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, ms)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The transaction a handler writes in; it commits with the completion of the record.
pub type Tx<DB> = Transaction<'static, DB>;

/// The idempotency gate over one database pool. Cheap to share (`Arc`) between handlers.
///
/// Methods: [`Gate::new`] (creates the ledger table), [`Gate::run`] (in a handler),
/// [`Gate::receipt`], [`Gate::purge`] (call it periodically), [`Gate::pool`].
#[derive(Debug)]
pub struct Gate<DB: Engine> {
    pool: Pool<DB>,
    config: Config,
}

impl<DB: Engine> Gate<DB> {
    /// A gate on `pool`; creates the ledger table `gate_idempotency` if missing.
    ///
    /// # Errors
    /// The database refused the migration.
    pub async fn new(pool: Pool<DB>, config: Config) -> Result<Gate<DB>, sqlx::Error> {
        DB::migrate(&pool).await?;
        Ok(Gate { pool, config })
    }

    /// The pool (for the app's own reads).
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.config
    }

    /// Carries out `handler` at most once for `(caller, request.key())` — `caller` is the
    /// actor, or a [`Caller`] with the app's scope (a tenant, a host):
    ///
    /// - new key: reserves it, runs `handler` in a transaction, stores its answer and
    ///   completes the record in the same commit (the completion is refused by the database
    ///   if the reservation was taken over meanwhile, and everything rolls back);
    /// - new key, an answer that is not final (`5xx`, `401`, `408`, `429`, `409 IN_PROGRESS`:
    ///   the client resends them with the same key): rolls the handler's writes back,
    ///   releases the key and gives the answer unstored; the resend runs `handler` again;
    /// - completed, same request: the stored answer with `Idempotent-Replayed: true`;
    /// - another request with the key: `422 PAYLOAD_CONFLICT`;
    /// - still processing: `409 IN_PROGRESS` + `Retry-After`;
    /// - a transient database failure (busy, lock timeout, serialization failure): `503` +
    ///   `Retry-After`, nothing committed, the reservation released;
    /// - an actor empty or longer than 255 bytes, a scope longer than 255 bytes: `400`.
    ///
    /// The actor comes from the app's authentication, the scope from what the app trusts.
    /// A domain refusal (`404`, `412`, `422`...) is a final `Ok` answer: it is stored and
    /// replayed like a success (`is_final` names the answers stored). An `Err` rolls back.
    ///
    /// The work runs in a task of its own, so a client that disconnects (axum then drops
    /// the handler's future) does not cut it off between two statements: it completes, and
    /// the client's resend gets the stored answer. A handler that panics is answered `500`
    /// and its reservation released.
    pub async fn run<'a, F>(&self, caller: impl Into<Caller<'a>>, request: Idempotent, handler: F) -> Response
    where
        F: for<'c> FnOnce(&'c mut Tx<DB>) -> BoxFuture<'c, Result<Answer, sqlx::Error>> + Send + 'static,
    {
        let caller = caller.into();
        if let Some(refusal) = refused(caller) {
            return refusal;
        }
        let worker = Gate { pool: self.pool.clone(), config: self.config };
        let (scope, actor) = (caller.scope.to_owned(), caller.actor.to_owned());
        match tokio::spawn(async move { worker.carry_out(Caller::scoped(&scope, &actor), request, handler).await })
            .await
        {
            Ok(response) => response,
            Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "the request failed; nothing was applied"),
        }
    }

    async fn carry_out<F>(&self, caller: Caller<'_>, request: Idempotent, handler: F) -> Response
    where
        F: for<'c> FnOnce(&'c mut Tx<DB>) -> BoxFuture<'c, Result<Answer, sqlx::Error>> + Send,
    {
        let key = request.key();
        // Taken before the lease the ledger writes (from `now_ms` below), so that this
        // side's end of it is never later than the ledger's.
        let reserving = Instant::now();
        let record = NewRecord {
            scope: caller.scope,
            actor: caller.actor,
            key,
            operation: request.operation(),
            fingerprint: request.fingerprint(),
            now_ms: now_ms(),
            lease_ms: ms(self.config.lease),
        };
        let fence = match DB::reserve(&self.pool, record).await {
            Ok(Reservation::Reserved { fence, .. }) => fence,
            Ok(Reservation::Replay(answer)) => return answer.into_response(),
            Ok(Reservation::PayloadConflict) => {
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "PAYLOAD_CONFLICT",
                    "this Idempotency-Key was used with another request",
                )
            }
            Ok(Reservation::InProgress { retry_after_ms }) => return in_progress(retry_after_ms),
            Err(e) => return self.failure(&e),
        };
        // If this future is dropped before it finishes (the handler panicked, the runtime
        // shuts down), the guard releases the reservation so that a retry need not wait
        // for the lease.
        let held = Held {
            scope: caller.scope.to_owned(),
            actor: caller.actor.to_owned(),
            key: key.to_owned(),
            fingerprint: request.fingerprint().to_owned(),
            fence,
            lease_until_ms: record.lease_until_ms(),
            lease_ends: reserving + self.config.lease,
        };
        let mut guard = ReleaseOnDrop { pool: Some(self.pool.clone()), held: held.clone() };
        let outcome = self.attempt(record.id(), request.fingerprint(), fence, handler).await;
        guard.pool = None;
        match outcome {
            Ok(Attempt::Stored(answer)) => answer.into_response(),
            // Taken over while we worked: the new holder answers; a retry gets its answer.
            Ok(Attempt::TakenOver) => in_progress(ms(self.config.lease)),
            // Rolled back: the resend with this key runs the handler again.
            Ok(Attempt::NotFinal(answer)) => {
                self.release(held).await;
                answer.into_response()
            }
            Err(e) => {
                // Nothing was committed (or, if the commit's answer was lost, the record is
                // completed and this release does nothing).
                self.release(held).await;
                self.failure(&e)
            }
        }
    }

    /// Drops a reservation whose request was not carried out. A release the database
    /// refuses (busy, say) is tried again in the background until it holds: otherwise every
    /// resend would be answered `409` until the lease ends.
    async fn release(&self, held: Held) {
        if let Err(e) = DB::release(&self.pool, held.id(), &held.fingerprint, held.fence, held.lease_until_ms).await {
            eprintln!("outbox-gate: cannot release {} yet ({e}); trying again", held.key);
            release_in_background(self.pool.clone(), held, RELEASE_RETRY_FIRST);
        }
    }

    async fn attempt<F>(
        &self,
        id: RecordKey<'_>,
        fingerprint: &str,
        fence: i64,
        handler: F,
    ) -> Result<Attempt, sqlx::Error>
    where
        F: for<'c> FnOnce(&'c mut Tx<DB>) -> BoxFuture<'c, Result<Answer, sqlx::Error>> + Send,
    {
        let mut tx = DB::begin(&self.pool).await?;
        let mut answer = handler(&mut tx).await?;
        answer.replayed = false;
        if !is_final(&answer) {
            tx.rollback().await?;
            return Ok(Attempt::NotFinal(answer));
        }
        let now = now_ms();
        let expires = now.saturating_add(ms(self.config.retention));
        if !DB::complete(&mut tx, id, fingerprint, fence, &answer, now, expires).await? {
            tx.rollback().await?;
            return Ok(Attempt::TakenOver);
        }
        tx.commit().await?;
        Ok(Attempt::Stored(answer))
    }

    fn failure(&self, e: &sqlx::Error) -> Response {
        // The database's text stays in the server's log, never in an answer.
        eprintln!("outbox-gate: database: {e}");
        if DB::is_transient(e) {
            retry_later(
                StatusCode::SERVICE_UNAVAILABLE,
                "BUSY",
                "the server is busy; retry later",
                Duration::from_secs(1),
            )
        } else {
            error(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", "the request failed; nothing was applied")
        }
    }

    /// The answer of `(caller, key)` for a client that lost it: `200` with the stored body
    /// of a completed 2xx answer; `409 IN_PROGRESS` + `Retry-After` while processing (not
    /// yet known either way); `404 NOT_FOUND` when unknown or completed without effect —
    /// also when another scope or actor has a record under the key. `caller` as in
    /// [`Gate::run`] (`400` for one it refuses).
    pub async fn receipt<'a>(&self, caller: impl Into<Caller<'a>>, key: &str) -> Response {
        let caller = caller.into();
        if let Some(refusal) = refused(caller) {
            return refusal;
        }
        let id = RecordKey { scope: caller.scope, actor: caller.actor, key };
        match DB::receipt(&self.pool, id, now_ms()).await {
            Ok(Receipt::Completed(a)) if a.status.is_success() => Answer::new(StatusCode::OK, a.body).into_response(),
            Ok(Receipt::Processing { retry_after_ms }) => in_progress(retry_after_ms),
            Ok(_) => error(StatusCode::NOT_FOUND, "NOT_FOUND", "no completed operation with this id"),
            Err(e) => self.failure(&e),
        }
    }

    /// Removes completed records whose retention ended before `now_ms` and processing
    /// records whose lease ended (their holder crashed and nobody resent), in batches of
    /// [`PURGE_BATCH`] rows with a pause of [`PURGE_PAUSE`] between two: on SQLite a
    /// statement holds the database's one write lock, and one `DELETE` of every expired row
    /// kept the requests waiting for it (500,000 rows: 7.6 s, 7 % of writes answered `503`).
    ///
    /// A batch refused for a passing reason (the lock timeout ran out while requests held
    /// the write lock, a busy database) is tried again after a longer pause, up to
    /// [`PURGE_RETRIES`] times in a row: the purge yields to the requests, never the other
    /// way round, and a busy hour does not leave the ledger unpurged until the next run.
    ///
    /// # Errors
    /// The database failed, or stayed busy through every retry (what earlier batches
    /// removed stays removed).
    pub async fn purge(&self, now_ms: i64) -> Result<Purged, sqlx::Error> {
        let mut total = Purged::default();
        let mut refused = 0;
        loop {
            let batch = match DB::purge(&self.pool, now_ms, PURGE_BATCH).await {
                Ok(batch) => batch,
                Err(e) if DB::is_transient(&e) && refused < PURGE_RETRIES => {
                    refused += 1;
                    tokio::time::sleep(PURGE_PAUSE * refused).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            refused = 0;
            total.completed += batch.completed;
            total.orphaned += batch.orphaned;
            let full = |n: u64| n >= PURGE_BATCH.unsigned_abs();
            if !full(batch.completed) && !full(batch.orphaned) {
                return Ok(total);
            }
            tokio::time::sleep(PURGE_PAUSE).await;
        }
    }
}

/// The most rows one purge statement removes (of each kind).
pub const PURGE_BATCH: i64 = 500;

/// The pause between two purge batches, in which waiting writers get the lock.
pub const PURGE_PAUSE: Duration = Duration::from_millis(20);

/// How many times in a row a purge batch refused for a passing reason is tried again, the
/// `n`th after `n` × [`PURGE_PAUSE`].
pub const PURGE_RETRIES: u32 = 10;

/// How a handler's run ended.
enum Attempt {
    /// Committed with the completed record.
    Stored(Answer),
    /// Not final: rolled back, the reservation still to release.
    NotFinal(Answer),
    /// The reservation was taken over meanwhile: rolled back.
    TakenOver,
}

/// True for a final answer, which the gate stores and replays to every resend with the key:
/// `2xx` and the refusals `4xx` but `401`, `408`, `429` and `409 IN_PROGRESS`. The client
/// resends the others with the same key (contract §10: transient, or held until a new
/// login); stored, they would be replayed forever and the operation could never apply, so
/// the gate gives them unstored (§14).
fn is_final(answer: &Answer) -> bool {
    match answer.status.as_u16() {
        200..=299 => true,
        401 | 408 | 429 => false,
        409 => answer.body["code"] != "IN_PROGRESS",
        400..=499 => true,
        _ => false, // 1xx, 3xx, 5xx
    }
}

/// `409 IN_PROGRESS`. `Retry-After` is the rest of the holder's lease, at most one second:
/// a holder that is alive finishes in about the time a request takes, and a client told to
/// wait for the whole lease would wait for nothing; the lease only matters after a crash.
fn in_progress(retry_after_ms: i64) -> Response {
    let after = Duration::from_millis(u64::try_from(retry_after_ms.min(1_000)).unwrap_or(0));
    retry_later(StatusCode::CONFLICT, "IN_PROGRESS", "the first request with this key is still running", after)
}

/// `400` for an actor empty or over 255 bytes and a scope over 255 bytes.
fn refused(caller: Caller<'_>) -> Option<Response> {
    if caller.actor.is_empty() || caller.actor.len() > MAX_KEY_LEN {
        return Some(error(StatusCode::BAD_REQUEST, "INVALID_ACTOR", "the actor must be 1 to 255 characters"));
    }
    if caller.scope.len() > MAX_KEY_LEN {
        return Some(error(StatusCode::BAD_REQUEST, "INVALID_SCOPE", "the scope must be at most 255 characters"));
    }
    None
}

/// A reservation this gate holds: what releasing it names.
#[derive(Clone)]
struct Held {
    scope: String,
    actor: String,
    key: String,
    fingerprint: String,
    fence: i64,
    /// Its lease end in the ledger: a later reservation of the same request has another.
    lease_until_ms: i64,
    /// When another request may take it over (no release is tried after it).
    lease_ends: Instant,
}

impl Held {
    fn id(&self) -> RecordKey<'_> {
        RecordKey { scope: &self.scope, actor: &self.actor, key: &self.key }
    }
}

/// The first wait before a refused release is tried again; each later one doubles, up to
/// [`RELEASE_RETRY_MAX`].
const RELEASE_RETRY_FIRST: Duration = Duration::from_millis(100);
const RELEASE_RETRY_MAX: Duration = Duration::from_secs(5);

/// Releases `held` in a task of its own after `wait`, and again with backoff while the
/// database refuses, until it holds or the lease has ended (a takeover frees the key then;
/// a release after it could drop the next holder's reservation).
fn release_in_background<DB: Engine>(pool: Pool<DB>, held: Held, mut wait: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    runtime.spawn(async move {
        loop {
            if Instant::now() + wait >= held.lease_ends {
                eprintln!("outbox-gate: {} stays reserved until its lease ends", held.key);
                return;
            }
            tokio::time::sleep(wait).await;
            if DB::release(&pool, held.id(), &held.fingerprint, held.fence, held.lease_until_ms).await.is_ok() {
                return;
            }
            wait = (wait * 2).max(RELEASE_RETRY_FIRST).min(RELEASE_RETRY_MAX);
        }
    });
}

/// Releases a reservation when the request's future is dropped before it finished.
struct ReleaseOnDrop<DB: Engine> {
    /// `None` once the request finished (its own path releases what it must).
    pool: Option<Pool<DB>>,
    held: Held,
}

impl<DB: Engine> Drop for ReleaseOnDrop<DB> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            release_in_background(pool, self.held.clone(), Duration::ZERO);
        }
    }
}
