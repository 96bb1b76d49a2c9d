//! What one replace transaction knows of the queue: the rows it read, as changed by the
//! plans made so far in it, and the rows it wrote **early**, with its reads.
//!
//! An early row is a guess, written so that IndexedDB stores it while the reads are still
//! on their way: an enqueue plans its new row against an empty scope before the
//! transaction (what almost every enqueue meets) and puts it with the scope's read, instead
//! of a round trip later. The guess is invisible to the plans: they see the store as it was
//! before it (a later read that returns the row does not add it), and when the writes are
//! issued an early row that no plan wrote as it is gets rewritten or deleted in the same
//! transaction. So the transaction commits exactly what the plans asked for (SPEC §4).

use outbox_core::plan::rows_in_scopes;
use outbox_core::{ReplacePlan, Scope};
use serde_json::Value;

/// The key of a stored row: its id, or, for a key that is not a string (another writer's
/// row), the planner's string of it after a NUL, which no string id read with it can equal:
/// `5` and `"5"` are two rows (a stretch of the index reads rows beside the ones asked
/// for, and a row must not stand in for another).
pub fn key(row: &Value) -> String {
    row.get("id")
        .and_then(Value::as_str)
        .map_or_else(|| outbox_core::text::concat(&["\0", &outbox_core::plan::key_string(row)]), str::to_owned)
}

/// A row written as deleted in [`View`]'s writes (a stored row is always an object).
const DELETED: Value = Value::Null;

/// Keyed by row key, in insertion order: every look-up is a hash look-up, so a replace
/// over N rows (an owner-wide command) costs work in proportion to N, not N².
/// (`serde_json::Map` is the module's one ordered map: no second one is built in.)
type Keyed = serde_json::Map<String, Value>;

#[derive(Default)]
pub struct View {
    rows: Keyed,
    /// Final write per key, in first-touched order ([`DELETED`]: delete).
    writes: Keyed,
    /// Rows put with the reads, before any plan: not rows of the store as read.
    early: Vec<(String, Value)>,
}

impl View {
    /// Notes `row`, put before the reads' results arrived: no plan sees it.
    pub fn early(&mut self, row: &Value) {
        self.early.push((key(row), row.clone()));
    }

    /// Adds rows read from the store, unless this transaction already wrote their key.
    pub fn load(&mut self, rows: Vec<Value>) {
        for r in rows {
            let k = key(&r);
            let written = self.writes.contains_key(k.as_str()) || self.early.iter().any(|(e, _)| *e == k);
            if !written && !self.rows.contains_key(k.as_str()) {
                self.rows.insert(k, r);
            }
        }
    }

    /// True when `scope` is one row's id and this transaction has read or written that row:
    /// the view then holds it exactly as it is now. (An early row's id is read: the row the
    /// read returns is not loaded.)
    pub fn knows(&self, scope: &Scope) -> bool {
        match scope {
            Scope::Id(id) => self.rows.contains_key(id.as_str()) || self.writes.contains_key(id.as_str()),
            Scope::Target { .. } | Scope::Owner(_) | Scope::Span { .. } => false,
        }
    }

    pub fn rows(&self, scopes: &[Scope]) -> Vec<Value> {
        rows_in_scopes(self.rows.values(), scopes)
    }

    fn set(&mut self, k: String, value: Value) {
        if value.is_null() {
            self.rows.remove(k.as_str());
        } else {
            self.rows.insert(k.clone(), value.clone());
        }
        self.writes.insert(k, value);
    }

    pub fn apply(&mut self, plan: &ReplacePlan) {
        for id in &plan.deletes {
            self.set(id.clone(), DELETED);
        }
        for put in &plan.puts {
            self.set(key(put), put.clone());
        }
    }

    /// The writes still to issue, in order (`null`: delete), and the keys of the early rows
    /// that stand as they were put. An early row the plans wrote otherwise is written again;
    /// one they did not write at all is deleted (the store had no row by that key when it
    /// was read: a fresh id).
    pub fn finish(self) -> (serde_json::Map<String, Value>, Vec<String>) {
        let mut writes = self.writes;
        let mut stand = Vec::new();
        for (k, row) in self.early {
            match writes.get(k.as_str()) {
                Some(w) if *w == row => {
                    writes.remove(k.as_str());
                    stand.push(k);
                }
                Some(_) => {}
                None => {
                    writes.insert(k, DELETED);
                }
            }
        }
        (writes, stand)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_key_that_is_not_a_string_never_stands_for_a_string_id() {
        let (number, text) = (json!({"id": 5, "owner": "o", "savedAt": 1}), json!({"id": "5", "owner": "o"}));
        assert_ne!(key(&number), key(&text));
        assert_eq!(key(&text), "5");
        let mut view = View::default();
        view.load(vec![number.clone(), text.clone()]);
        assert!(view.knows(&Scope::Id("5".into())));
        assert_eq!(view.rows(&[Scope::Id("5".into())]), [text]);
        let span = Scope::Span { owner: "o".into(), from: 1.0, to: 1.0, count: 1 };
        assert_eq!(view.rows(&[span]), [number]);
    }
}
