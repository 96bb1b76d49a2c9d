//! Claim: who is sending what, until when (SPEC §5).

use crate::accounts::owns;
use crate::codec::{decode, encode, DecodeError, Stored};
use crate::inflight::in_flight;
use crate::plan::{ReplacePlan, Scope};
use crate::row::{Claim, Evidence, Row, RowState, Ticket, Writer};
use crate::select::{check_sendable, predecessor_holds, Unsendable};
use crate::tab::Tab;
use crate::time::Millis;
use serde_json::Value;

/// Why a row is not claimed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClaimSkip {
    /// No such row.
    Missing,
    /// The row belongs to another owner.
    OtherOwner,
    /// The stored value cannot be decoded; it is never claimed.
    Undecodable(DecodeError),
    /// In flight (by any tab, this one included: one tab never has two attempts outstanding).
    InFlight,
    /// Not sendable now (§8).
    NotSendable(Unsendable),
    /// A flush of this tab is sending a row of its record (a send that outlived its lease,
    /// say): the app's own claim would be a second attempt from one tab (§8).
    SentByThisTab,
}

/// A claim ready to be written.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub struct ClaimPlan {
    /// The replace to carry out.
    pub plan: ReplacePlan,
    /// The ticket the tab holds if the replace commits.
    pub ticket: Ticket,
    /// The row as it will be stored.
    pub row: Row,
}

/// Plans the claim of `raw` (as read) for `owner` by `tab`. `predecessor` is the row its
/// `successorOf` names, as read (`None` when absent); it joins the compared scopes so the
/// claim commits only if the predecessor is still as seen. `online_since`: when the network
/// last came back, as the flush was told (§10; `None` for the app's own claim).
///
/// # Errors
/// [`ClaimSkip`] when the row must not be claimed now.
pub fn plan_claim(
    owner: &str,
    raw: Option<&Value>,
    predecessor: Option<&Value>,
    tab: &Tab,
    now: Millis,
    online_since: Option<Millis>,
) -> Result<ClaimPlan, ClaimSkip> {
    let raw = raw.ok_or(ClaimSkip::Missing)?;
    let Claimed { row, ticket, scopes, puts, .. } = claim_row(owner, raw, predecessor, tab, now, online_since)?;
    let mut expected = vec![raw.clone()];
    if let (Some(_), Some(p)) = (&row.successor_of, predecessor) {
        expected.push(p.clone());
    }
    Ok(ClaimPlan { plan: ReplacePlan { scopes, expected, puts, ..Default::default() }, ticket, row })
}

/// A claim as [`plan_claim`] plans it, less the expected rows: a claim batch compares the
/// rows as its round read them, and needs no copy of them per claim.
pub(crate) struct Claimed {
    /// The row as it will be stored.
    pub(crate) row: Row,
    /// The ticket the tab holds if the replace commits.
    pub(crate) ticket: Ticket,
    /// The row's key, then its predecessor's (if it names one).
    pub(crate) scopes: Vec<Scope>,
    /// The claimed row, then its predecessor marked overtaken (if it is).
    pub(crate) puts: Vec<Value>,
    /// The row's evidence before the claim (restored if the claim is released unsent).
    pub(crate) before: Option<Evidence>,
}

/// [`plan_claim`] of a row that was found.
pub(crate) fn claim_row(
    owner: &str,
    raw: &Value,
    predecessor: Option<&Value>,
    tab: &Tab,
    now: Millis,
    online_since: Option<Millis>,
) -> Result<Claimed, ClaimSkip> {
    let mut row = decode(raw).map_err(ClaimSkip::Undecodable)?;
    if !owns(owner, &row) {
        return Err(ClaimSkip::OtherOwner); // §11: another account's row is never claimed
    }
    if in_flight(&row, now, tab.lease_ms).is_in_flight() {
        return Err(ClaimSkip::InFlight);
    }
    let pred_stored = predecessor.map(Stored::from_value);
    let pred_holds = |id: &str| -> Option<bool> {
        let p = pred_stored.as_ref().filter(|p| stored_id(p) == Some(id))?;
        predecessor_holds(owner, p)
    };
    check_sendable(&row, &tab.tab_id, now, tab.lease_ms, online_since, pred_holds).map_err(ClaimSkip::NotSendable)?;

    let mut scopes = vec![Scope::Id(row.id.clone())];
    let mut puts = Vec::new();
    if let Some(pred) = &row.successor_of {
        scopes.push(Scope::Id(pred.clone()));
        // §5, §7: this row overtakes its blocked predecessor; the predecessor learns it, so
        // that a later edit never carries its older fields over this row's.
        if let (Some(false), Some(Stored::Row(p))) = (pred_holds(pred), &pred_stored) {
            if p.overtaken_at.is_none() {
                let mut p = p.clone();
                p.overtaken_at = Some(now);
                puts.push(encode(&p));
            }
        }
    }
    let before = row.evidence.clone();
    apply_claim(&mut row, tab, now);
    puts.insert(0, encode(&row));
    let ticket = row.ticket().expect("claim just written");
    Ok(Claimed { row, ticket, scopes, puts, before })
}

/// Writes the §5 claim fields onto a row.
pub fn apply_claim(row: &mut Row, tab: &Tab, now: Millis) {
    let fence = row.claim.as_ref().map_or(0, |c| c.fence) + 1;
    let extra = row.claim.take().map(|c| c.extra).unwrap_or_default();
    row.claim = Some(Claim { tab_id: tab.tab_id.clone(), expires_at: now.plus(tab.lease_ms), fence, extra });
    row.state = RowState::Sending;
    row.sent_at = Some(now);
    let mut ev = row.evidence.take().unwrap_or_default();
    ev.attempt_count += 1;
    ev.last_attempt_at = Some(now);
    row.evidence = Some(ev);
    let extra = row.writer.take().map(|w| w.extra).unwrap_or_default();
    row.writer = Some(Writer { bundle: tab.bundle.clone(), at: now, extra });
}

/// The key of a stored value, decodable or not.
fn stored_id(s: &Stored) -> Option<&str> {
    match s {
        Stored::Row(r) => Some(&r.id),
        Stored::Undecodable(u) => u.id.as_deref(),
    }
}
