//! Accounts (SPEC §11): every row carries `owner`, and whatever the planner does for one
//! owner reads, claims and changes that owner's rows only. Another account's rows with the
//! same target are invisible to it: a claim refuses them, an ACK never rewrites, re-points
//! or converts them, and the admin commands (`resumeHeld`, `retryBlocked`, `discard`,
//! `purgeOwner`) never change them.
//!
//! Callers normally pass rows already read for one owner (the `[owner, target]` and
//! `[owner, savedAt]` indexes, §3). The planner does not count on it: a caller that passes
//! more rows than it was asked for cannot make it touch another account's data. Every
//! owner test of the planner goes through this module, so the rule reads in one place.

use crate::plan::Scope;
use crate::row::Row;
use serde_json::Value;

/// True if `row` belongs to `owner`.
#[must_use]
pub fn owns(owner: &str, row: &Row) -> bool {
    row.owner == owner
}

/// The owner of a stored value as stored, when it is a string (undecodable values too).
#[must_use]
pub fn stored_owner(raw: &Value) -> Option<&str> {
    raw.get("owner").and_then(Value::as_str)
}

/// True if a stored value, decodable or not, names `owner` as its owner.
#[must_use]
pub fn stored_is_owned(owner: &str, raw: &Value) -> bool {
    stored_owner(raw) == Some(owner)
}

/// The stored values of `rows` inside `scope`, in their order: all a planner working on
/// that `(owner, target)` scope may compare or change, whatever else the caller read.
#[must_use]
pub fn in_scope<'a>(scope: &Scope, rows: &'a [Value]) -> Vec<&'a Value> {
    let mut out = Vec::new();
    for raw in rows {
        if scope.contains(raw) {
            out.push(raw);
        }
    }
    out
}

/// [`in_scope`]'s values copied: what a replace over the scope expects to find. A loop, not
/// `in_scope(..).into_iter().cloned().collect()` at each caller (issue 35).
#[must_use]
pub fn in_scope_copied(scope: &Scope, rows: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for raw in rows {
        if scope.contains(raw) {
            out.push(raw.clone());
        }
    }
    out
}

/// The owner a command names matches the owner a stored value names. `None` on either
/// side is an owner that is absent or cannot be read: `discard(null, id)` removes only a
/// row whose owner cannot be read (§3 rule 3), and a named owner never matches it.
#[must_use]
pub fn same_owner(asked: Option<&str>, stored: Option<&str>) -> bool {
    asked == stored
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_named_owner_matches() {
        let rows = [json!({"id": "a", "owner": "alice"}), json!({"id": "b", "owner": "bob"}), json!({"id": "c"})];
        let ids: Vec<&Value> = rows.iter().filter(|r| stored_is_owned("alice", r)).map(|r| &r["id"]).collect();
        assert_eq!(ids, vec![&json!("a")]);
        assert!(!stored_is_owned("alice", &rows[2]));
        assert!(same_owner(None, None) && !same_owner(Some("alice"), None) && !same_owner(None, Some("alice")));
    }
}
