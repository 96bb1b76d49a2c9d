//! An in-memory store implementing the replace contract of SPEC §4: scopes re-read,
//! compared as stored, all or nothing. Used by the tests; usable by anyone who wants to run
//! the planner without a browser.

use crate::accounts::stored_is_owned;
use crate::fingerprint::canonical_json;
use crate::plan::{matches_expected, rows_in_scopes, ReplaceOutcome, ReplacePlan, Scope};
use crate::records::{forward, is_key, patched, rekeyed, set_at_path, stub, Landing, Reconcile, RecordWrite};
use crate::row::stored_order_key;
use serde_json::Value;
use std::collections::BTreeMap;

fn without_spans(scopes: &[Scope]) -> Vec<Scope> {
    scopes.iter().filter(|s| !matches!(s, Scope::Span { .. })).cloned().collect()
}

/// Rows keyed by id, as stored; and the app's records, keyed by store and key (records
/// keep their key at the key path `id`, like an app store declared with `keyPath: "id"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemStore {
    rows: BTreeMap<String, Value>,
    records: BTreeMap<(String, String), Value>,
}

/// The app's `reconcile` port as the in-memory store calls it.
pub type ReconcilePort<'a> = &'a mut dyn FnMut(&Reconcile) -> Vec<RecordWrite>;

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
        // As the index orders them: `savedAt` exactly as stored (a fraction too), then key.
        let saved = |r: &Value| r.get("savedAt").and_then(Value::as_f64);
        crate::sort::stable_by(&mut out, |a, b| {
            let by_time = match (saved(a), saved(b)) {
                (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                (x, y) => x.is_some().cmp(&y.is_some()),
            };
            by_time.then_with(|| stored_order_key(a).1.cmp(&stored_order_key(b).1))
        });
        out
    }

    /// The distinct rows of the scopes (a [`Scope::Span`]'s first `count` rows only, as the
    /// index gives them).
    #[must_use]
    pub fn read(&self, scopes: &[Scope]) -> Vec<Value> {
        let mut out = rows_in_scopes(self.rows.values(), &without_spans(scopes));
        for s in scopes {
            if let Scope::Span { owner, count, .. } = s {
                let mut stretch: Vec<Value> = self.read_owner(owner).into_iter().filter(|r| s.contains(r)).collect();
                stretch.truncate(*count as usize);
                for r in stretch {
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
            }
        }
        out
    }

    /// Replace (§4): re-read the plan's scopes, compare with `expected`, apply or refuse.
    /// A plan asking for reconciliation gets none (no port): see [`MemStore::replace_with`].
    pub fn replace(&mut self, plan: &ReplacePlan) -> ReplaceOutcome {
        self.replace_with(plan, &mut |_| Vec::new())
    }

    /// Replace (§4) with the app's `reconcile` port: when the plan commits, its record
    /// writes and those the port gives for its answer are applied with it; when it is stale,
    /// nothing is written and the port is not asked.
    pub fn replace_with(&mut self, plan: &ReplacePlan, port: ReconcilePort<'_>) -> ReplaceOutcome {
        if !matches_expected(&plan.expected, &self.read(&plan.scopes)) {
            return ReplaceOutcome::Stale;
        }
        for id in &plan.deletes {
            self.rows.remove(id);
        }
        for put in &plan.puts {
            self.seed(put.clone());
        }
        let reconciled = plan.reconcile.as_ref().map(port).unwrap_or_default();
        for w in plan.records.iter().chain(&reconciled) {
            self.write_record(w);
        }
        ReplaceOutcome::Committed
    }

    /// The app record under `key` in `store` (a forwarding stub is no record).
    #[must_use]
    pub fn record(&self, store: &str, key: &Value) -> Option<&Value> {
        self.records.get(&(store.to_owned(), canonical_json(key))).filter(|v| forward(Some(v)).is_none())
    }

    /// Every record of `store`, in key order of their JSON text (forwarding stubs left out).
    pub fn records(&self, store: &str) -> impl Iterator<Item = &Value> {
        let store = store.to_owned();
        self.records.iter().filter(move |((s, _), v)| *s == store && forward(Some(v)).is_none()).map(|(_, v)| v)
    }

    /// The key a write naming `key` lands on: `key`, or where its stubs forward to (stubs in
    /// a cycle: the key whose stub turns back, as the binding does).
    fn landing(&self, store: &str, key: &Value) -> Value {
        let mut landing = Landing::new(key.clone());
        while let Some(to) = forward(self.records.get(&(store.to_owned(), canonical_json(landing.key())))) {
            if !landing.follow(to.clone()) {
                break;
            }
        }
        landing.key().clone()
    }

    fn write_record(&mut self, w: &RecordWrite) {
        let at = |store: &str, key: &Value| (store.to_owned(), canonical_json(key));
        match w {
            RecordWrite::Put { store, value, key } => {
                let Some(k) = key.clone().or_else(|| value.get("id").cloned()).filter(is_key) else { return };
                // A put by a key a rekey left behind lands on the moved record.
                let k = self.landing(store, &k);
                let mut value = value.clone();
                set_at_path(&mut value, "id", k.clone());
                self.records.insert(at(store, &k), value);
            }
            RecordWrite::Delete { store, key } => {
                let key = self.landing(store, key);
                self.records.remove(&at(store, &key));
            }
            RecordWrite::Patch { store, key, set } => {
                let key = self.landing(store, key);
                if let Some(v) = patched(self.records.get(&at(store, &key)), set) {
                    self.records.insert(at(store, &key), v);
                }
            }
            RecordWrite::Rekey { store, from, to, set } => {
                let from = self.landing(store, from);
                if let Some(v) = rekeyed(self.records.get(&at(store, &from)), Some("id"), to, set) {
                    self.records.insert(at(store, &from), stub(&Value::from("id"), &from, to));
                    self.records.insert(at(store, to), v);
                }
            }
        }
    }

    /// One transaction as the binding runs it: read `scopes`, plan from what was read, then
    /// replace. `None` when the planner planned nothing.
    pub fn transact(
        &mut self,
        scopes: &[Scope],
        plan: impl FnOnce(&[Value]) -> Option<ReplacePlan>,
    ) -> Option<ReplaceOutcome> {
        self.transact_with(scopes, plan, &mut |_| Vec::new())
    }

    /// [`MemStore::transact`] with the app's `reconcile` port.
    pub fn transact_with(
        &mut self,
        scopes: &[Scope],
        plan: impl FnOnce(&[Value]) -> Option<ReplacePlan>,
        port: ReconcilePort<'_>,
    ) -> Option<ReplaceOutcome> {
        let current = self.read(scopes);
        let plan = plan(&current)?;
        Some(self.replace_with(&plan, port))
    }
}
