//! Claiming several sendable rows in one replace (SPEC §5, one claim per row).
//!
//! Each row's claim is its own compare-and-swap: inside the transaction the row (and its
//! predecessor) must still be exactly as read in the round, else that row is stale and
//! skipped. Claims that pass are written together, so a tab pays one transaction per batch
//! instead of one per row, and a tab that runs into rows another tab already took learns it
//! for a whole batch at once.

use super::FlushOptions;
use crate::claim::plan_claim;
use crate::codec::decode;
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
}

impl Candidate {
    pub(super) fn new(raw: Value, pred: Option<Value>) -> Option<Candidate> {
        let row = decode(&raw).ok()?;
        Some(Candidate { id: row.id, target: row.target, successor_of: row.successor_of, raw, pred })
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
}

impl ClaimBatch {
    /// The rows and predecessors to re-read.
    pub(super) fn scopes(&self) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = Vec::new();
        for c in &self.items {
            for id in std::iter::once(&c.id).chain(c.successor_of.as_ref()) {
                let s = Scope::Id(id.clone());
                if !scopes.contains(&s) {
                    scopes.push(s);
                }
            }
        }
        scopes
    }

    /// Plans the claims of the rows still as read; counts the others.
    pub(super) fn plan(&mut self, opts: &FlushOptions, current: &[Value], now: Millis) -> Option<ReplacePlan> {
        let (mut stale, mut skipped) = (0, 0);
        let mut planned = Vec::new();
        let mut plan = ReplacePlan::default();
        for c in &self.items {
            let pred_now = c.successor_of.as_deref().and_then(|p| find(current, p));
            if find(current, &c.id) != Some(&c.raw) || pred_now != c.pred.as_ref() {
                stale += 1;
                continue;
            }
            match plan_claim(&opts.owner, Some(&c.raw), c.pred.as_ref(), &opts.tab, now) {
                Ok(cp) => {
                    // The rows checked above are the claim's expected rows, as read.
                    for scope in cp.plan.scopes {
                        if !plan.scopes.contains(&scope) {
                            if let Scope::Id(id) = &scope {
                                plan.expected.extend(find(current, id).cloned());
                            }
                            plan.scopes.push(scope);
                        }
                    }
                    plan.puts.extend(cp.plan.puts);
                    let before = decode(&c.raw).ok().and_then(|r| r.evidence);
                    planned.push((cp.row, cp.ticket, before));
                }
                Err(_) => skipped += 1,
            }
        }
        (self.stale, self.skipped, self.planned) = (stale, skipped, planned);
        (!self.planned.is_empty()).then_some(plan)
    }
}
