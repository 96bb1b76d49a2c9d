//! Handing back a claim that was never used (SPEC §6).
//!
//! An auth answer ends the flush for its owner: nothing more is sent with the session that
//! just expired. Rows this tab claimed but has not sent yet (a claim batch that was being
//! written when the auth answer arrived) go back to `queued` — not `held`: they were never
//! refused, and `resumeHeld` is for rows the server did refuse.
//!
//! A release is an answer of this tab's own, so it follows the ACK rule: it changes a row
//! only while the claim is still this ticket's. The claim is expired, never removed (the
//! fence only grows); the row's `evidence` goes back to what it was before the claim,
//! because no attempt was made. The kept claim means §7 no longer counts the row as "never
//! attempted", so a later edit of a released create waits as an intent instead of merging
//! into it: less compact, never unsafe.

use crate::codec::{decode, encode};
use crate::plan::{ReplacePlan, Scope};
use crate::row::claim_is_mine;
use crate::row::{find_stored, Evidence, Row, RowState, Ticket};
use crate::time::Millis;
use serde_json::Value;

/// A row this tab claimed and will not send.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsent {
    /// The row's id.
    pub id: String,
    /// The row's target.
    pub target: String,
    /// The ticket of the claim.
    pub ticket: Ticket,
    /// The row's `evidence` before the claim.
    pub evidence_before: Option<Evidence>,
}

impl Unsent {
    /// The release of `claimed` (the row as the claim wrote it), whose evidence before the
    /// claim was `before`.
    #[must_use]
    pub fn of(claimed: &Row, ticket: Ticket, before: Option<Evidence>) -> Unsent {
        Unsent { id: claimed.id.clone(), target: claimed.target.clone(), ticket, evidence_before: before }
    }
}

/// The scopes a release of `rows` reads.
#[must_use]
pub fn release_scopes(rows: &[Unsent]) -> Vec<Scope> {
    let mut scopes = Vec::with_capacity(rows.len());
    for u in rows {
        scopes.push(Scope::Id(u.id.clone()));
    }
    scopes
}

/// Plans the release of `rows`; `current` are the rows of [`release_scopes`] as read inside
/// the transaction. Rows whose claim is no longer this ticket's are left alone. `None` when
/// nothing is left to release.
#[must_use]
pub fn plan_release(rows: &[Unsent], current: &[Value], now: Millis) -> Option<ReplacePlan> {
    let mut plan = ReplacePlan::default();
    for u in rows {
        let Some(raw) = find_stored(current, &u.id) else {
            continue;
        };
        let Ok(mut row) = decode(raw) else { continue };
        if !claim_is_mine(&row, &u.ticket) {
            continue;
        }
        row.state = RowState::Queued;
        row.sent_at = None;
        row.evidence = u.evidence_before.clone();
        if let Some(c) = row.claim.as_mut() {
            c.expires_at = now;
        }
        plan.scopes.push(Scope::Id(u.id.clone()));
        plan.expected.push(raw.clone());
        plan.puts.push(encode(&row));
    }
    (!plan.puts.is_empty()).then_some(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::apply_claim;
    use crate::inflight::in_flight;
    use crate::tab::Tab;
    use serde_json::json;

    fn claimed(tab: &Tab, now: Millis) -> (Row, Option<Evidence>) {
        let raw = json!({"id": "r1", "owner": "alice", "target": "pending:r1", "kind": "create",
                         "body": {"n": 1}, "savedAt": 1, "state": "queued", "claim": {"tabId": "old", "expiresAt": 5, "fence": 3}});
        let mut row = decode(&raw).unwrap();
        let before = row.evidence.clone();
        apply_claim(&mut row, tab, now);
        (row, before)
    }

    #[test]
    fn a_released_row_is_queued_unclaimed_and_never_attempted_with_its_fence_kept() {
        let tab = Tab::new("tab-a");
        let now = Millis(1_000);
        let (row, before) = claimed(&tab, now);
        let ticket = row.ticket().unwrap();
        assert_eq!(ticket.fence, 4);
        let stored = encode(&row);
        let plan =
            plan_release(&[Unsent::of(&row, ticket, before)], std::slice::from_ref(&stored), now.plus(5)).unwrap();
        assert_eq!(plan.expected, vec![stored]);
        let back = decode(&plan.puts[0]).unwrap();
        assert_eq!(back.state, RowState::Queued);
        assert_eq!(back.sent_at, None);
        assert_eq!(back.evidence, None, "no attempt was made");
        assert_eq!(back.claim.as_ref().map(|c| (c.fence, c.expires_at)), Some((4, now.plus(5))));
        assert!(!in_flight(&back, now.plus(5), tab.lease_ms).is_in_flight());
    }

    #[test]
    fn a_claim_no_longer_mine_is_not_released() {
        let tab = Tab::new("tab-a");
        let (row, before) = claimed(&tab, Millis(1_000));
        let ticket = row.ticket().unwrap();
        let mut other = row.clone();
        apply_claim(&mut other, &Tab::new("tab-b"), Millis(20_000));
        let u = Unsent::of(&row, ticket, before);
        assert_eq!(plan_release(std::slice::from_ref(&u), &[encode(&other)], Millis(20_001)), None);
        assert_eq!(plan_release(&[u], &[], Millis(20_001)), None, "row gone");
    }
}
