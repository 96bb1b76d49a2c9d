//! Claiming several sendable rows in one replace (SPEC §5, one claim per row).
//!
//! Each row's claim is its own compare-and-swap: inside the transaction the row (and its
//! predecessor, if the round read one) must still be exactly as read in the round, else
//! that row is stale and skipped; a predecessor the round did not read is judged as found. Claims that pass are written together, so a tab pays one transaction per batch
//! instead of one per row, and a tab that runs into rows another tab already took learns it
//! for a whole batch at once.

use super::request::FlushOptions;
use super::stretch::{stretches, Place};
use crate::claim::{claim_row, Claimed};
use crate::plan::{ReplacePlan, Scope};
use crate::row::{find_stored as find, Evidence, Row, Ticket};
use crate::time::Millis;
use serde_json::Value;

/// A sendable row as read in the round, with its predecessor as read (if it has one).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Candidate {
    pub(super) raw: Value,
    pub(super) pred: Option<Value>,
    pub(super) id: String,
    pub(super) target: String,
    pub(super) successor_of: Option<String>,
    /// Where the round read the row, and its predecessor (if it read one).
    pub(super) places: (Option<Place>, Option<Place>),
}

impl Candidate {
    /// The candidate of `raw`, decoded as `row` (the round has decoded it already).
    pub(super) fn of(row: &Row, raw: Value, pred: Option<Value>) -> Candidate {
        let (id, target, successor_of) = (row.id.clone(), row.target.clone(), row.successor_of.clone());
        Candidate { id, target, successor_of, raw, pred, places: (None, None) }
    }

    #[cfg(test)]
    pub(super) fn new(raw: Value, pred: Option<Value>) -> Option<Candidate> {
        let row = crate::codec::decode(&raw).ok()?;
        Some(Candidate::of(&row, raw, pred))
    }
}

/// Claims of one batch: the rows of `items` (at most `want`, one per record), skipping the
/// ones another tab changed meanwhile (each one found stale here costs no transaction of its
/// own).
#[derive(Clone, Debug, PartialEq, Default)]
pub(super) struct ClaimBatch {
    pub(super) want: usize,
    pub(super) items: Vec<Candidate>,
    /// Rows claimed by the planned replace, with their tickets and their evidence before
    /// the claim (restored if the claim is released unsent).
    pub(super) planned: Vec<(Row, Ticket, Option<Evidence>)>,
    /// Rows changed since the round read them (another tab got there first).
    pub(super) stale: u64,
    /// Rows no longer claimable for another reason.
    pub(super) skipped: u64,
    /// A row (or a predecessor the round read) was not in its stretch: changed, gone, or
    /// pushed out by rows saved into it since ([`super::stretch`]).
    pub(super) missed: bool,
}

impl ClaimBatch {
    /// The rows and predecessors to re-read: the stretches of the owner's queue the round
    /// found them in, and by id those it did not read (a predecessor of another owner, or
    /// undecodable).
    pub(super) fn scopes(&self, owner: &str) -> Vec<Scope> {
        let mut rows = Vec::new();
        for c in &self.items {
            rows.push((&c.id, c.places.0));
            if let Some(p) = &c.successor_of {
                rows.push((p, c.places.1));
            }
        }
        stretches(owner, &rows)
    }

    /// Plans the claims of the rows still as read; counts the others.
    pub(super) fn plan(&mut self, opts: &FlushOptions, current: &[Value], now: Millis) -> Option<ReplacePlan> {
        let (mut stale, mut skipped) = (0, 0);
        let mut planned = Vec::new();
        let mut plan = ReplacePlan::default();
        for c in &self.items {
            let pred_now = c.successor_of.as_deref().and_then(|p| find(current, p));
            // A predecessor the round did not read (another owner's row, or an undecodable
            // one outside the owner's queue) is no change by another tab: the claim below
            // decides with it as it is. Counted stale, it would start the round again, and
            // again, for as long as it stays.
            let changed = c.pred.is_some() && pred_now != c.pred.as_ref();
            let row_now = find(current, &c.id);
            self.missed |=
                row_now.is_none() && c.places.0.is_some() || changed && pred_now.is_none() && c.places.1.is_some();
            if row_now != Some(&c.raw) || changed {
                stale += 1;
                continue;
            }
            match claim_row(&opts.owner, &c.raw, pred_now, &opts.tab, now, opts.online_since) {
                Ok(Claimed { row, ticket, scopes, puts, before }) => {
                    // The rows checked above are the claim's expected rows, as read.
                    for scope in scopes {
                        if !plan.scopes.contains(&scope) {
                            if let Scope::Id(id) = &scope {
                                if let Some(raw) = find(current, id) {
                                    plan.expected.push(raw.clone());
                                }
                            }
                            plan.scopes.push(scope);
                        }
                    }
                    plan.puts.extend(puts);
                    planned.push((row, ticket, before));
                }
                Err(_) => skipped += 1,
            }
        }
        (self.stale, self.skipped, self.planned) = (stale, skipped, planned);
        (!self.planned.is_empty()).then_some(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tab::Tab;
    use serde_json::json;

    fn raw(id: &str, target: &str, successor_of: Option<&str>) -> Value {
        let mut r = json!({"id": id, "owner": "alice", "target": target, "kind": "update", "body": {},
                           "savedAt": 1, "state": "queued"});
        if let Some(p) = successor_of {
            r["successorOf"] = json!(p);
        }
        r
    }

    #[test]
    fn s5_a_batch_compares_every_claimed_row_and_predecessor_once_as_read() {
        // `b` waits for `p`, which is blocked (so `b` is sendable) — both are compared.
        let mut p = raw("p", "w:2", None);
        p["state"] = json!("blocked");
        let (a, b) = (raw("a", "w:1", None), raw("b", "w:2", Some("p")));
        let items = vec![Candidate::new(a.clone(), None).unwrap(), Candidate::new(b.clone(), Some(p.clone())).unwrap()];
        let mut batch = ClaimBatch { want: 2, items, ..ClaimBatch::default() };
        let opts = super::super::FlushOptions::new("alice", Tab::new("tab-a"));
        let current = vec![a.clone(), b.clone(), p.clone()];
        let plan = batch.plan(&opts, &current, crate::time::Millis(5)).expect("both claimed");
        let ids = |s: &[Scope]| s.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>();
        assert_eq!(ids(&plan.scopes), ids(&[Scope::Id("a".into()), Scope::Id("b".into()), Scope::Id("p".into())]));
        assert_eq!(plan.expected, vec![a, b, p]);
        // The two claims, and `p` marked overtaken by `b` (§7: its fields never come back).
        assert_eq!(plan.puts.len(), 3);
        assert!(plan.puts[2]["id"] == json!("p") && plan.puts[2]["overtakenAt"] == json!(5));
        assert_eq!((batch.planned.len(), batch.stale, batch.skipped), (2, 0, 0));
    }

    fn batch_of(c: Candidate) -> ClaimBatch {
        ClaimBatch { want: 1, items: vec![c], ..ClaimBatch::default() }
    }

    fn claim(batch: &mut ClaimBatch, current: &[Value]) -> Option<ReplacePlan> {
        let opts = super::super::FlushOptions::new("alice", Tab::new("tab-a"));
        batch.plan(&opts, current, crate::time::Millis(5))
    }

    #[test]
    fn s8_a_predecessor_the_round_did_not_read_holds_its_successor_and_is_no_stale_claim() {
        // `p` is undecodable (its `savedAt` is text), so the owner's queue read by `savedAt`
        // did not list it; the claim's own read finds it.
        let mut p = raw("p", "w:1", None);
        p["savedAt"] = json!("2024-01-01");
        let s = raw("s", "w:1", Some("p"));
        let mut batch = batch_of(Candidate::new(s.clone(), None).unwrap());
        assert_eq!(claim(&mut batch, &[s, p]), None, "an undecodable predecessor holds its successor");
        assert_eq!((batch.planned.len(), batch.stale, batch.skipped), (0, 0, 1));
    }

    #[test]
    fn s11_another_owners_predecessor_is_invisible_to_the_claim() {
        let mut p = raw("p", "w:1", None);
        p["owner"] = json!("bob");
        let s = raw("s", "w:1", Some("p"));
        let mut batch = batch_of(Candidate::new(s.clone(), None).unwrap());
        let plan = claim(&mut batch, &[s.clone(), p.clone()]).expect("claimed: bob's row is not alice's predecessor");
        assert_eq!(plan.expected, vec![s, p], "both rows are still compared as read");
        assert_eq!((batch.planned.len(), batch.stale, batch.skipped), (1, 0, 0));
    }

    #[test]
    fn s5_a_predecessor_gone_or_changed_since_the_round_read_it_is_a_stale_claim() {
        let p = raw("p", "w:1", None);
        let mut p_blocked = p.clone();
        p_blocked["state"] = json!("blocked");
        let s = raw("s", "w:1", Some("p"));
        for now in [vec![s.clone()], vec![s.clone(), p.clone()]] {
            let mut batch = batch_of(Candidate::new(s.clone(), Some(p_blocked.clone())).unwrap());
            assert_eq!(claim(&mut batch, &now), None);
            assert_eq!((batch.planned.len(), batch.stale, batch.skipped), (0, 1, 0));
        }
    }
}
