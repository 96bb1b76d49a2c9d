//! Revision conflicts (SPEC §9).
//!
//! The server answered "your base revision is stale, the record is at R". While the claim
//! is still this tab's, one replace removes the original row and writes a successor under
//! a **new** operation id with revision R, a new fingerprint and a
//! `conflict: {previousId, actualRevision, at}` note, and re-points the rows that waited for
//! the original to the successor. The old id cannot be reused: the gate's ledger would
//! refuse it with a different fingerprint (§14).

use crate::codec::encode;
use crate::plan::{ReplacePlan, Scope};
use crate::reissue::{reissued, repoint};
use crate::row::Row;
use crate::time::Millis;
use serde_json::{json, Value};

/// §9: the original under a new id, with the server's revision and a `conflict` note.
#[must_use]
pub fn conflict_successor(row: &Row, actual_revision: &Value, now: Millis, new_id: &str) -> Row {
    let mut with_rev = row.clone();
    with_rev.revision = (!actual_revision.is_null()).then(|| actual_revision.clone());
    let mut s = reissued(&with_rev, new_id);
    s.conflict = Some(json!({"previousId": row.id, "actualRevision": actual_revision, "at": now.0}));
    s
}

/// One replace: remove the original (`raw` as read), write its successor, re-point the rows
/// of its scope that waited for it. `scope_rows` may hold more than the scope; only the
/// original and its own `(owner, target)` scope are compared and changed (§11).
pub fn conflict_plan(row: &Row, raw: &Value, scope_rows: &[Value], successor: &Row) -> ReplacePlan {
    let scope = row.scope();
    let expected: Vec<Value> = scope_rows.iter().filter(|r| scope.contains(r) || *r == raw).cloned().collect();
    let mut puts = repoint(&expected, &row.id, &successor.id, &[&row.id]);
    puts.push(encode(successor));
    ReplacePlan { scopes: vec![Scope::Id(row.id.clone()), scope], expected, deletes: vec![row.id.clone()], puts }
}
