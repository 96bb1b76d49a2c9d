//! Plans as data: what the one write primitive, replace (SPEC §4), is asked to do.

use crate::codec::encode;
use crate::record_write::{Reconcile, RecordWrite};
use crate::row::Row;
pub use crate::scope::{key_string, Scope};
use serde_json::Value;

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

/// Compares the rows a replace re-read with the rows it expected, as stored and in any
/// order (object key order does not matter, values do, unknown fields included).
#[must_use]
pub fn matches_expected(expected: &[Value], current: &[Value]) -> bool {
    if expected.len() != current.len() {
        return false;
    }
    let (ka, kb) = (keys(expected), keys(current));
    let (a, b) = (by_key(&ka), by_key(&kb));
    for i in 0..a.len() {
        if expected[a[i].1] != current[b[i].1] {
            return false;
        }
    }
    true
}

/// The key of each row, built once (not once per comparison).
fn keys(rows: &[Value]) -> Vec<String> {
    let mut k = Vec::with_capacity(rows.len());
    for v in rows {
        k.push(key_string(v));
    }
    k
}

/// `(key, place)` of each key, sorted stably by key: through the sort [`Lookup`] uses, not
/// one more copy of the sort's closure (issue 35).
///
/// [`Lookup`]: crate::names::Lookup
fn by_key(keys: &[String]) -> Vec<(&str, usize)> {
    let mut k = Vec::with_capacity(keys.len());
    for (at, key) in keys.iter().enumerate() {
        k.push((key.as_str(), at));
    }
    crate::names::sort_by_key(&mut k);
    k
}

/// The replace that rewrites one stored row, `raw` as read, as `row` (same id): its id's
/// scope, the row as read, its new encoding. One function for the planners that rewrite a
/// row alone (an ACK's failure, an intent's quarantine), not one copy each (issue 35).
pub fn rewrite(row: &Row, raw: &Value) -> ReplacePlan {
    ReplacePlan {
        scopes: vec![Scope::Id(row.id.clone())],
        expected: vec![raw.clone()],
        puts: vec![encode(row)],
        ..Default::default()
    }
}

/// The distinct rows of `all` that fall in any of `scopes`.
#[must_use]
pub fn rows_in_scopes<'a>(all: impl IntoIterator<Item = &'a Value>, scopes: &[Scope]) -> Vec<Value> {
    let mut out = Vec::new();
    for raw in all {
        if scopes.iter().any(|s| s.contains(raw)) {
            out.push(raw.clone());
        }
    }
    out
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
