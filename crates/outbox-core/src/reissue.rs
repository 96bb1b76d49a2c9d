//! Re-issuing a row under a new operation id (SPEC §7 re-issue, §9 conflict successor):
//! the old id had no effect the new request may reuse, so the gate must see a new key.

use crate::accounts::in_scope_copied;
use crate::codec::{decode, encode, refingerprint};
use crate::plan::{ReplacePlan, Scope};
use crate::row::{Row, RowState};
use serde_json::Value;

/// A copy of `row` under `new_id`, queued and never attempted: drops `claim`, `evidence`,
/// `sentAt`, `deferredAt`, `heldAt`, `blockedAt`, `blockedCode`, `overtakenAt` and
/// `nextAttemptAt`; keeps
/// `savedAt`, `target`, `successorOf` and unknown fields. The fingerprint is recomputed.
#[must_use]
pub fn reissued(row: &Row, new_id: &str) -> Row {
    let mut r = row.clone();
    r.id = new_id.to_owned();
    r.state = RowState::Queued;
    r.claim = None;
    r.evidence = None;
    r.sent_at = None;
    r.deferred_at = None;
    r.held_at = None;
    r.blocked_at = None;
    r.blocked_code = None;
    r.overtaken_at = None;
    r.next_attempt_at = None;
    refingerprint(&mut r);
    r
}

/// One replace: remove `row`, write `successor` (its re-issue, [`reissued`]), re-point the
/// rows of its scope that waited for it. `scope_rows` are the rows read (`row` among them);
/// only `row`'s own `(owner, target)` scope is compared and changed (§11). A conflict's
/// successor (§9) and `retryBlocked` (§10) are both this: one copy of it in the wasm module
/// (issue 35).
pub fn reissue_plan(row: &Row, scope_rows: &[Value], successor: &Row) -> ReplacePlan {
    let scope = row.scope();
    let expected: Vec<Value> = in_scope_copied(&scope, scope_rows);
    let mut puts = repoint(&expected, &row.id, &successor.id, &[&row.id]);
    puts.push(encode(successor));
    ReplacePlan {
        scopes: vec![Scope::Id(row.id.clone()), scope],
        expected,
        deletes: vec![row.id.clone()],
        puts,
        ..Default::default()
    }
}

/// Puts that re-point every row of `scope_rows` whose `successorOf` is `old_id` to `new_id`.
/// `skip` lists ids the caller deletes or rewrites itself.
#[must_use]
pub fn repoint(scope_rows: &[Value], old_id: &str, new_id: &str, skip: &[&str]) -> Vec<Value> {
    let mut puts = Vec::new();
    for raw in scope_rows {
        let Ok(mut r) = decode(raw) else { continue };
        if r.successor_of.as_deref() == Some(old_id) && !skip.contains(&r.id.as_str()) {
            r.successor_of = Some(new_id.to_owned());
            puts.push(encode(&r));
        }
    }
    puts
}
