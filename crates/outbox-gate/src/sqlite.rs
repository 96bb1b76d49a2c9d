//! The SQLite ledger (embedded; a file or `:memory:`). One connection behind a mutex: SQLite
//! serialises writers anyway, and every step below is one short statement or transaction.

use crate::ledger::{Answer, DomainOp, Ledger, LedgerError, Reservation};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How long records are kept, and how long a `processing` reservation is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Completed records are kept this long (default 30 days), so a client that was
    /// offline for weeks still gets its receipt replayed instead of a second effect.
    pub completed_ms: i64,
    /// A `processing` record older than this is taken to be abandoned by a crashed worker
    /// and may be taken over (default 30 s).
    pub processing_lease_ms: i64,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention { completed_ms: 30 * 24 * 3600 * 1000, processing_lease_ms: 30_000 }
    }
}

/// Ledger and domain records in one SQLite database.
pub struct SqliteLedger {
    conn: Mutex<Connection>,
    retention: Retention,
    holders: AtomicU64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS idempotency (
    actor TEXT NOT NULL,
    op_id TEXT NOT NULL,
    op_type TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('processing', 'completed')),
    holder TEXT NOT NULL,
    lease_until INTEGER NOT NULL,
    response_status INTEGER,
    response_body TEXT,
    created_at INTEGER NOT NULL,
    completed_at INTEGER,
    expires_at INTEGER,
    PRIMARY KEY (actor, op_id)
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency (expires_at);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entity TEXT NOT NULL,
    actor TEXT NOT NULL,
    revision INTEGER NOT NULL,
    body TEXT NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS effects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    op_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    at INTEGER NOT NULL
);
";

fn err(e: rusqlite::Error) -> LedgerError {
    LedgerError(e.to_string())
}

impl SqliteLedger {
    /// Opens (creating) the database at `path` (`:memory:` for a throwaway one).
    ///
    /// # Errors
    /// SQLite could not open or initialise it.
    pub fn open(path: &str, retention: Retention) -> Result<SqliteLedger, LedgerError> {
        let conn = Connection::open(path).map_err(err)?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        Ok(SqliteLedger { conn: Mutex::new(conn), retention, holders: AtomicU64::new(0) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn new_holder(&self, now_ms: i64) -> String {
        format!("h{now_ms}-{}", self.holders.fetch_add(1, Ordering::Relaxed))
    }
}

fn answer_of(status: Option<i64>, body: Option<String>) -> Answer {
    Answer {
        status: status.unwrap_or(500) as u16,
        body: body.and_then(|b| serde_json::from_str(&b).ok()).unwrap_or(Value::Null),
        replayed: true,
    }
}

/// The domain write itself; runs inside the completing transaction.
fn apply(
    tx: &rusqlite::Transaction<'_>,
    actor: &str,
    op_id: &str,
    op: &DomainOp,
    now_ms: i64,
) -> rusqlite::Result<Answer> {
    let effect = |kind: &str, target: &str| {
        tx.execute(
            "INSERT INTO effects (op_id, actor, kind, target, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![op_id, actor, kind, target, now_ms],
        )
    };
    match op {
        DomainOp::Create { entity, body } => {
            tx.execute(
                "INSERT INTO records (entity, actor, revision, body) VALUES (?1, ?2, 1, ?3)",
                params![entity, actor, body.to_string()],
            )?;
            let server_id = format!("{entity}:{}", tx.last_insert_rowid());
            effect("create", &server_id)?;
            Ok(Answer::new(201, json!({"serverId": server_id, "revision": 1})))
        }
        DomainOp::Update { entity, id, revision, .. }
        | DomainOp::Delete { entity, id, revision }
        | DomainOp::Append { entity, id, revision, .. } => {
            let found: Option<(String, String, i64, String, bool)> = tx
                .query_row(
                    "SELECT entity, actor, revision, body, deleted FROM records WHERE id = ?1",
                    params![id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, i64>(4)? != 0)),
                )
                .optional()?;
            let server_id = format!("{entity}:{id}");
            let Some((_, owner, current, stored, _)) = found.filter(|f| f.0 == *entity && !f.4) else {
                return Ok(Answer::new(404, json!({"code": "NOT_FOUND", "serverId": server_id})));
            };
            if owner != actor {
                return Ok(Answer::new(403, json!({"code": "FORBIDDEN"})));
            }
            if revision.is_some_and(|r| r != current) {
                return Ok(Answer::new(412, json!({"code": "REVISION_CONFLICT", "actualRevision": current})));
            }
            let next = current + 1;
            if let DomainOp::Delete { .. } = op {
                tx.execute("UPDATE records SET deleted = 1, revision = ?1 WHERE id = ?2", params![next, id])?;
                effect("delete", &server_id)?;
                return Ok(Answer::new(200, json!({"serverId": server_id, "revision": next, "deleted": true})));
            }
            let mut record: Value = serde_json::from_str(&stored).unwrap_or(json!({}));
            let mut extra = json!({});
            match op {
                DomainOp::Update { body, .. } => {
                    if let (Some(m), Some(b)) = (record.as_object_mut(), body.as_object()) {
                        for (k, v) in b {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                }
                DomainOp::Append { field, item, .. } => {
                    let Some(m) = record.as_object_mut() else {
                        return Ok(Answer::new(422, json!({"code": "INVALID", "message": "record is not an object"})));
                    };
                    let list = m.entry(field.clone()).or_insert_with(|| json!([]));
                    let Some(list) = list.as_array_mut() else {
                        return Ok(Answer::new(
                            422,
                            json!({"code": "INVALID", "message": format!("{field} is not a list")}),
                        ));
                    };
                    list.push(item.clone());
                    extra = json!({"count": list.len()});
                }
                DomainOp::Delete { .. } | DomainOp::Create { .. } => {} // handled above
            }
            tx.execute(
                "UPDATE records SET body = ?1, revision = ?2 WHERE id = ?3",
                params![record.to_string(), next, id],
            )?;
            effect(op.op_type(), &server_id)?;
            let mut answer = json!({"serverId": server_id, "revision": next});
            if let (Some(a), Some(e)) = (answer.as_object_mut(), extra.as_object()) {
                a.extend(e.clone());
            }
            Ok(Answer::new(200, answer))
        }
    }
}

impl Ledger for SqliteLedger {
    fn reserve(
        &self,
        actor: &str,
        op_id: &str,
        op_type: &str,
        fingerprint: &str,
        now_ms: i64,
    ) -> Result<Reservation, LedgerError> {
        let conn = self.lock();
        let holder = self.new_holder(now_ms);
        let lease_until = now_ms + self.retention.processing_lease_ms;
        let inserted = conn
            .execute(
                "INSERT INTO idempotency (actor, op_id, op_type, fingerprint, status, holder, lease_until, created_at)
                 VALUES (?1, ?2, ?3, ?4, 'processing', ?5, ?6, ?7)
                 ON CONFLICT (actor, op_id) DO NOTHING",
                params![actor, op_id, op_type, fingerprint, holder, lease_until, now_ms],
            )
            .map_err(err)?;
        if inserted == 1 {
            return Ok(Reservation::Reserved { holder, recovered: false });
        }
        let (fp, status, old_holder, old_lease, rs, rb): (String, String, String, i64, Option<i64>, Option<String>) =
            conn.query_row(
                "SELECT fingerprint, status, holder, lease_until, response_status, response_body
                 FROM idempotency WHERE actor = ?1 AND op_id = ?2",
                params![actor, op_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .map_err(err)?;
        if fp != fingerprint {
            return Ok(Reservation::PayloadConflict);
        }
        if status == "completed" {
            return Ok(Reservation::Replay(answer_of(rs, rb)));
        }
        if old_lease > now_ms {
            return Ok(Reservation::InProgress);
        }
        // Abandoned by a crashed worker: take it over, compare-and-swap on the holder.
        let taken = conn
            .execute(
                "UPDATE idempotency SET holder = ?1, lease_until = ?2
                 WHERE actor = ?3 AND op_id = ?4 AND status = 'processing' AND holder = ?5",
                params![holder, lease_until, actor, op_id, old_holder],
            )
            .map_err(err)?;
        Ok(if taken == 1 { Reservation::Reserved { holder, recovered: true } } else { Reservation::InProgress })
    }

    fn complete(
        &self,
        actor: &str,
        op_id: &str,
        holder: &str,
        op: &DomainOp,
        now_ms: i64,
    ) -> Result<Answer, LedgerError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
        let still_mine: bool = tx
            .query_row(
                "SELECT COUNT(*) FROM idempotency WHERE actor = ?1 AND op_id = ?2 AND holder = ?3 AND status = 'processing'",
                params![actor, op_id, holder],
                |r| r.get::<_, i64>(0),
            )
            .map_err(err)?
            == 1;
        if !still_mine {
            return Err(LedgerError(format!("{op_id} is no longer held by this request")));
        }
        let answer = apply(&tx, actor, op_id, op, now_ms).map_err(err)?;
        tx.execute(
            "UPDATE idempotency SET status = 'completed', response_status = ?1, response_body = ?2,
                 completed_at = ?3, expires_at = ?4
             WHERE actor = ?5 AND op_id = ?6 AND holder = ?7",
            params![
                answer.status,
                answer.body.to_string(),
                now_ms,
                now_ms + self.retention.completed_ms,
                actor,
                op_id,
                holder
            ],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(answer)
    }

    fn release(&self, actor: &str, op_id: &str, holder: &str) -> Result<(), LedgerError> {
        self.lock()
            .execute(
                "DELETE FROM idempotency WHERE actor = ?1 AND op_id = ?2 AND holder = ?3 AND status = 'processing'",
                params![actor, op_id, holder],
            )
            .map_err(err)?;
        Ok(())
    }

    fn receipt(&self, actor: &str, op_id: &str) -> Result<Option<Answer>, LedgerError> {
        let found: Option<(Option<i64>, Option<String>)> = self
            .lock()
            .query_row(
                "SELECT response_status, response_body FROM idempotency
                 WHERE actor = ?1 AND op_id = ?2 AND status = 'completed'",
                params![actor, op_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(err)?;
        Ok(found.map(|(s, b)| answer_of(s, b)))
    }

    fn purge_expired(&self, now_ms: i64) -> Result<usize, LedgerError> {
        self.lock()
            .execute("DELETE FROM idempotency WHERE status = 'completed' AND expires_at < ?1", params![now_ms])
            .map_err(err)
    }

    fn records(&self, actor: &str) -> Result<Vec<Value>, LedgerError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare("SELECT entity, id, revision, body FROM records WHERE actor = ?1 AND deleted = 0 ORDER BY id")
            .map_err(err)?;
        let rows = stmt
            .query_map(params![actor], |r| {
                let (entity, id, revision, body): (String, i64, i64, String) =
                    (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
                Ok(json!({"serverId": format!("{entity}:{id}"), "revision": revision,
                          "body": serde_json::from_str::<Value>(&body).unwrap_or(Value::Null)}))
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }

    fn effects(&self) -> Result<Vec<Value>, LedgerError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(
                "SELECT op_id, actor, kind, target, COUNT(*) FROM effects GROUP BY op_id, actor, kind, target ORDER BY MIN(seq)",
            )
            .map_err(err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(json!({"opId": r.get::<_, String>(0)?, "actor": r.get::<_, String>(1)?,
                          "kind": r.get::<_, String>(2)?, "target": r.get::<_, String>(3)?,
                          "count": r.get::<_, i64>(4)?}))
            })
            .map_err(err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(err)
    }
}
