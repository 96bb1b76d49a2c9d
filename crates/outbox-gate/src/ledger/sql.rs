//! The ledger's SQL text, one set of statements per engine.

/// The statements of one engine. Both engines use `$n` placeholders (sqlx's SQLite
/// driver accepts them too); they differ in column types and time arithmetic.
pub(super) struct Sql {
    pub(super) schema: &'static str,
    pub(super) insert: &'static str,
    pub(super) select: &'static str,
    pub(super) takeover: &'static str,
    pub(super) complete: &'static str,
    pub(super) release: &'static str,
    pub(super) purge_completed: &'static str,
    pub(super) purge_orphaned: &'static str,
}

/// SQLite: times are epoch milliseconds in `INTEGER`s, the answer is JSON text.
pub(super) const SQLITE: Sql = Sql {
    schema: "CREATE TABLE IF NOT EXISTS gate_idempotency (
        scope TEXT NOT NULL DEFAULT '',
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
        PRIMARY KEY (scope, actor, key)
    );
    CREATE INDEX IF NOT EXISTS gate_idempotency_purge ON gate_idempotency (status, expires_at)",
    insert: "INSERT INTO gate_idempotency (scope, actor, key, operation, fingerprint, status, fence, lease_until,
        created_at) VALUES ($1, $2, $3, $4, $5, 'processing', 1, $6, $7) ON CONFLICT (scope, actor, key) DO NOTHING",
    select: "SELECT fingerprint, status, fence, lease_until, response_status, response_body
        FROM gate_idempotency WHERE scope = $1 AND actor = $2 AND key = $3",
    takeover: "UPDATE gate_idempotency SET fence = fence + 1, lease_until = $1
        WHERE scope = $2 AND actor = $3 AND key = $4 AND status = 'processing' AND fence = $5 AND lease_until <= $6",
    complete: "UPDATE gate_idempotency SET status = 'completed', response_status = $1, response_body = $2,
        completed_at = $3, expires_at = $4
        WHERE scope = $5 AND actor = $6 AND key = $7 AND fence = $8 AND fingerprint = $9 AND status = 'processing'",
    release: "DELETE FROM gate_idempotency
        WHERE scope = $1 AND actor = $2 AND key = $3 AND fence = $4 AND fingerprint = $5 AND lease_until = $6
          AND status = 'processing'",
    // At most $2 rows per statement: one `DELETE` of every expired row held SQLite's write
    // lock for seconds (500,000 rows: 7.6 s, writes answered 503 meanwhile).
    purge_completed: "DELETE FROM gate_idempotency WHERE rowid IN (SELECT rowid FROM gate_idempotency
        WHERE status = 'completed' AND expires_at < $1 LIMIT $2)",
    purge_orphaned: "DELETE FROM gate_idempotency WHERE rowid IN (SELECT rowid FROM gate_idempotency
        WHERE status = 'processing' AND lease_until < $1 LIMIT $2)",
};

/// PostgreSQL: times are `TIMESTAMPTZ` (epoch milliseconds cross the wire and are
/// converted in SQL), the answer is JSON text. Not `JSONB`: it refuses a string holding
/// U+0000 (an app echoing user input), which failed every attempt's commit — the operation
/// was never applied, never blocked, sent again for ever — and it reorders keys, so a
/// replay's bytes differed from the first answer's.
pub(super) const POSTGRES: Sql = Sql {
    schema: "CREATE TABLE IF NOT EXISTS gate_idempotency (
        scope TEXT NOT NULL DEFAULT '',
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
        PRIMARY KEY (scope, actor, key)
    );
    CREATE INDEX IF NOT EXISTS gate_idempotency_purge ON gate_idempotency (status, expires_at)",
    insert: "INSERT INTO gate_idempotency (scope, actor, key, operation, fingerprint, status, fence, lease_until,
        created_at) VALUES ($1, $2, $3, $4, $5, 'processing', 1, to_timestamp($6::float8 / 1000),
        to_timestamp($7::float8 / 1000)) ON CONFLICT (scope, actor, key) DO NOTHING",
    select: "SELECT fingerprint, status, fence, (extract(epoch FROM lease_until) * 1000)::bigint,
        response_status::bigint, response_body::text
        FROM gate_idempotency WHERE scope = $1 AND actor = $2 AND key = $3",
    takeover: "UPDATE gate_idempotency SET fence = fence + 1, lease_until = to_timestamp($1::float8 / 1000)
        WHERE scope = $2 AND actor = $3 AND key = $4 AND status = 'processing' AND fence = $5
          AND lease_until <= to_timestamp($6::float8 / 1000)",
    complete: "UPDATE gate_idempotency SET status = 'completed', response_status = $1::bigint::int,
        response_body = $2, completed_at = to_timestamp($3::float8 / 1000),
        expires_at = to_timestamp($4::float8 / 1000)
        WHERE scope = $5 AND actor = $6 AND key = $7 AND fence = $8 AND fingerprint = $9 AND status = 'processing'",
    release: "DELETE FROM gate_idempotency
        WHERE scope = $1 AND actor = $2 AND key = $3 AND fence = $4 AND fingerprint = $5
          AND lease_until = to_timestamp($6::float8 / 1000) AND status = 'processing'",
    // At most $2 rows per statement. The outer conditions are checked again on the row the
    // `DELETE` locks: a record taken over (or completed) between the sub-select and the
    // delete no longer matches them and stays.
    purge_completed: "DELETE FROM gate_idempotency WHERE status = 'completed'
        AND expires_at < to_timestamp($1::float8 / 1000)
        AND (scope, actor, key) IN (SELECT scope, actor, key FROM gate_idempotency WHERE status = 'completed'
          AND expires_at < to_timestamp($1::float8 / 1000) LIMIT $2)",
    purge_orphaned: "DELETE FROM gate_idempotency WHERE status = 'processing'
        AND lease_until < to_timestamp($1::float8 / 1000)
        AND (scope, actor, key) IN (SELECT scope, actor, key FROM gate_idempotency WHERE status = 'processing'
          AND lease_until < to_timestamp($1::float8 / 1000) LIMIT $2)",
};
