//! An in-memory store implementing the replace contract of SPEC §4: scopes re-read,
//! compared as stored, all or nothing. Used by the tests; usable by anyone who wants to run
//! the planner without a browser.

use crate::accounts::stored_is_owned;
use crate::plan::{matches_expected, rows_in_scopes, ReplaceOutcome, ReplacePlan, Scope};
use crate::row::stored_order_key;
use serde_json::Value;
use std::collections::BTreeMap;

/// Rows keyed by id, as stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemStore {
    rows: BTreeMap<String, Value>,
}

impl MemStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// Every stored value, in key order.
    pub fn all(&self) -> impl Iterator<Item = &Value> {
        self.rows.values()
    }

    /// The stored value with this key.
    #[must_use]
    pub fn get(&self, id: &str) -> Option<&Value> {
        self.rows.get(id)
    }

    /// Number of stored values.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when nothing is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Stores a value as it is, bypassing the planner (to seed older-writer or broken rows
    /// in tests). Values without a string `id` are refused.
    pub fn seed(&mut self, raw: Value) -> bool {
        match raw.get("id").and_then(Value::as_str) {
            Some(id) => {
                self.rows.insert(id.to_owned(), raw);
                true
            }
            None => false,
        }
    }

    /// Every row of `owner`, in `(savedAt, id)` order (the `[owner, savedAt]` index).
    #[must_use]
    pub fn read_owner(&self, owner: &str) -> Vec<Value> {
        let mut out: Vec<Value> = self.rows.values().filter(|r| stored_is_owned(owner, r)).cloned().collect();
        out.sort_by_key(stored_order_key);
        out
    }

    /// The distinct rows of the scopes.
    #[must_use]
    pub fn read(&self, scopes: &[Scope]) -> Vec<Value> {
        rows_in_scopes(self.rows.values(), scopes)
    }

    /// Replace (§4): re-read the plan's scopes, compare with `expected`, apply or refuse.
    pub fn replace(&mut self, plan: &ReplacePlan) -> ReplaceOutcome {
        if !matches_expected(&plan.expected, &self.read(&plan.scopes)) {
            return ReplaceOutcome::Stale;
        }
        for id in &plan.deletes {
            self.rows.remove(id);
        }
        for put in &plan.puts {
            self.seed(put.clone());
        }
        ReplaceOutcome::Committed
    }

    /// One transaction as the binding runs it: read `scopes`, plan from what was read, then
    /// replace. `None` when the planner planned nothing.
    pub fn transact(
        &mut self,
        scopes: &[Scope],
        plan: impl FnOnce(&[Value]) -> Option<ReplacePlan>,
    ) -> Option<ReplaceOutcome> {
        let current = self.read(scopes);
        let plan = plan(&current)?;
        Some(self.replace(&plan))
    }
}
