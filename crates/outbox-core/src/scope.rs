//! The sets of stored rows a replace reads and compares (SPEC §4 step 1), and the key
//! order rows are compared in.

use crate::fingerprint::canonical_json;
use serde_json::Value;

/// A set of stored rows a replace re-reads and compares.
#[derive(Clone, Debug, PartialEq)]
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
    /// The first `count` rows, in the `[owner, savedAt]` index's order (`savedAt`, then
    /// key), of this owner's rows whose `savedAt` is in `from..=to`: a stretch of the queue
    /// a flush read in its round, re-read in one request instead of one per row (issue 35).
    /// A row of the stretch not among them has changed (its `savedAt`, or rows saved since
    /// pushed it past `count`) or is gone: a claim finds it stale, as a read by key would.
    /// [`Scope::contains`] ignores `count`: it says which rows may be among them.
    Span {
        /// Account.
        owner: String,
        /// The first row's `savedAt`.
        from: f64,
        /// The last row's `savedAt`.
        to: f64,
        /// How many rows the stretch holds, counted from the first with `savedAt` `from`.
        count: u32,
    },
}

impl Scope {
    /// The `(owner, target)` scope.
    #[must_use]
    pub fn target(owner: &str, target: &str) -> Scope {
        Scope::Target { owner: owner.to_owned(), target: target.to_owned() }
    }

    /// True if a stored value belongs to this scope.
    ///
    /// The field that tells rows of one owner apart is looked up first: a transaction's
    /// rows are mostly of one owner, and each look-up hashes its key (issue 35).
    #[must_use]
    pub fn contains(&self, raw: &Value) -> bool {
        match self {
            Scope::Target { owner, target } => {
                raw.get("target").and_then(Value::as_str) == Some(target)
                    && raw.get("owner").and_then(Value::as_str) == Some(owner)
            }
            Scope::Id(id) => raw.get("id").and_then(Value::as_str) == Some(id),
            Scope::Owner(owner) => {
                raw.get("owner").and_then(Value::as_str) == Some(owner)
                    && raw.get("savedAt").is_some_and(Value::is_number)
            }
            Scope::Span { owner, from, to, .. } => {
                raw.get("savedAt").and_then(Value::as_f64).is_some_and(|t| *from <= t && t <= *to)
                    && raw.get("owner").and_then(Value::as_str) == Some(owner)
            }
        }
    }
}

/// A stored value's key as a sortable string.
#[must_use]
pub fn key_string(raw: &Value) -> String {
    raw.get("id").map(canonical_json).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_span_may_hold_its_owners_rows_whose_saved_at_is_in_its_bounds() {
        let span = Scope::Span { owner: "o".into(), from: 2.0, to: 3.5, count: 1 };
        for (row, inside) in [
            (json!({"owner": "o", "savedAt": 2}), true),
            (json!({"owner": "o", "savedAt": 3.5}), true),
            (json!({"owner": "o", "savedAt": 1.9}), false),
            (json!({"owner": "o", "savedAt": 3.6}), false),
            (json!({"owner": "o", "savedAt": "2"}), false),
            (json!({"owner": "p", "savedAt": 3}), false),
            (json!({"savedAt": 3}), false),
        ] {
            assert_eq!(span.contains(&row), inside, "{row}");
        }
    }
}
