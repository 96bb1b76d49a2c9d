//! Plans as data: what the one write primitive, replace (SPEC §4), is asked to do.

use crate::fingerprint::canonical_json;
use crate::records::{Reconcile, RecordWrite};
use serde_json::Value;

/// A set of stored rows a replace re-reads and compares.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every row with this owner and target (index `[owner, target]`).
    Target {
        /// Account.
        owner: String,
        /// Record key.
        target: String,
    },
    /// The row with this key, if it exists.
    Id(String),
    /// Every row of this owner whose `savedAt` is a number: the owner's range of the
    /// `[owner, savedAt]` index, what the owner-wide commands (`resumeHeld`, `purgeOwner`)
    /// read and change in one replace. One scope, not one per row: a replace over N rows
    /// then costs one read and work in proportion to N.
    Owner(String),
}

impl Scope {
    /// The `(owner, target)` scope.
    #[must_use]
    pub fn target(owner: &str, target: &str) -> Scope {
        Scope::Target { owner: owner.to_owned(), target: target.to_owned() }
    }

    /// True if a stored value belongs to this scope.
    #[must_use]
    pub fn contains(&self, raw: &Value) -> bool {
        match self {
            Scope::Target { owner, target } => {
                raw.get("owner").and_then(Value::as_str) == Some(owner)
                    && raw.get("target").and_then(Value::as_str) == Some(target)
            }
            Scope::Id(id) => raw.get("id").and_then(Value::as_str) == Some(id),
            Scope::Owner(owner) => {
                raw.get("owner").and_then(Value::as_str) == Some(owner)
                    && raw.get("savedAt").is_some_and(Value::is_number)
            }
        }
    }
}

/// One atomic change: if the scopes still hold exactly `expected`, apply deletes then puts.
#[derive(Clone, Debug, PartialEq, Default)]
#[must_use]
pub struct ReplacePlan {
    /// The scopes to re-read inside the transaction.
    pub scopes: Vec<Scope>,
    /// Every row of the scopes as the planner read them, as stored.
    pub expected: Vec<Value>,
    /// Keys to delete.
    pub deletes: Vec<String>,
    /// Rows to write (encoded).
    pub puts: Vec<Value>,
    /// The app's record writes that commit with it ([`crate::records`]).
    pub records: Vec<RecordWrite>,
    /// An answer whose record writes the app's `reconcile` port gives, committed with it.
    pub reconcile: Option<Reconcile>,
}

/// What a replace did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplaceOutcome {
    /// The scopes matched; every delete and put was applied.
    Committed,
    /// The scopes changed since they were read; nothing was written.
    Stale,
}

/// A stored value's key as a sortable string.
#[must_use]
pub fn key_string(raw: &Value) -> String {
    raw.get("id").map(canonical_json).unwrap_or_default()
}

/// Compares the rows a replace re-read with the rows it expected, as stored and in any
/// order (object key order does not matter, values do, unknown fields included).
#[must_use]
pub fn matches_expected(expected: &[Value], current: &[Value]) -> bool {
    if expected.len() != current.len() {
        return false;
    }
    let (a, b) = (by_key(expected), by_key(current));
    a.iter().zip(b.iter()).all(|(x, y)| x.1 == y.1)
}

/// `rows` sorted stably by key, each key built once (not once per comparison).
fn by_key(rows: &[Value]) -> Vec<(String, &Value)> {
    let mut k: Vec<(String, &Value)> = rows.iter().map(|v| (key_string(v), v)).collect();
    crate::sort::stable_by(&mut k, |x, y| x.0.cmp(&y.0));
    k
}

/// The distinct rows of `all` that fall in any of `scopes`.
#[must_use]
pub fn rows_in_scopes<'a>(all: impl IntoIterator<Item = &'a Value>, scopes: &[Scope]) -> Vec<Value> {
    all.into_iter().filter(|raw| scopes.iter().any(|s| s.contains(raw))).cloned().collect()
}

#[cfg(test)]
mod cas_tests {
    use super::*;
    use crate::memstore::MemStore;
    use serde_json::json;

    #[test]
    fn s4_expected_rows_match_as_stored_in_any_order_and_only_then() {
        let a = json!({"id": "a", "owner": "o", "target": "t", "x": {"deep": [1, 2]}});
        let b = json!({"id": "b", "owner": "o", "target": "t"});
        assert!(matches_expected(&[a.clone(), b.clone()], &[b.clone(), a.clone()]), "order does not matter");
        let a_changed = json!({"id": "a", "owner": "o", "target": "t", "x": {"deep": [1, 3]}});
        assert!(!matches_expected(&[a.clone(), b.clone()], &[a_changed, b.clone()]), "an unknown field changed");
        assert!(!matches_expected(std::slice::from_ref(&a), &[a.clone(), b.clone()]), "a row appeared");
        assert!(!matches_expected(&[a.clone(), b.clone()], std::slice::from_ref(&a)), "a row vanished");
        assert!(matches_expected(&[], &[]));
    }

    #[test]
    fn s4_a_stale_replace_writes_nothing() {
        let mut store = MemStore::new();
        let row = json!({"id": "a", "owner": "o", "target": "t", "n": 1});
        store.seed(row.clone());
        let bumped = json!({"id": "a", "owner": "o", "target": "t", "n": 2});
        let plan = |expected: Value| ReplacePlan {
            scopes: vec![Scope::target("o", "t")],
            expected: vec![expected],
            puts: vec![
                json!({"id": "a", "owner": "o", "target": "t", "n": 3}),
                json!({"id": "z", "owner": "o", "target": "t"}),
            ],
            ..Default::default()
        };
        store.seed(bumped.clone()); // another tab wrote between the read and the replace
        assert_eq!(store.replace(&plan(row)), ReplaceOutcome::Stale);
        assert_eq!(store.get("a"), Some(&bumped));
        assert_eq!(store.get("z"), None, "nothing of the plan was written");
        assert_eq!(store.replace(&plan(bumped)), ReplaceOutcome::Committed);
        assert_eq!(store.get("a").unwrap()["n"], 3);
    }
}
