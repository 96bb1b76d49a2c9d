//! The app's maintenance commands: `resumeHeld`, `retryBlocked`, `discard`, `purgeOwner`
//! (SPEC §6, §7, §3, §11).

use crate::accounts::{in_scope_copied, owns, same_owner, stored_owner};
use crate::codec::{decode, encode};
use crate::inflight::in_flight;
use crate::plan::{ReplacePlan, Scope};
use crate::reissue::{reissue_plan, reissued};
use crate::row::{find_stored, RowState};
use crate::time::Millis;
use serde_json::Value;

/// Held rows of `owner` back to queued after a new login. `owner_rows` are all stored rows
/// of that owner. Returns the plan and how many rows it resumes (`None` if none).
#[must_use]
pub fn plan_resume_held(owner: &str, owner_rows: &[Value]) -> Option<(ReplacePlan, usize)> {
    // Every row of the range is the owner's (§11): only its state is looked at.
    let mut plan = owner_range_plan(owner, owner_rows);
    for raw in &plan.expected {
        let Ok(mut row) = decode(raw) else { continue };
        if row.state != RowState::Held {
            continue;
        }
        row.state = RowState::Queued;
        row.next_attempt_at = None;
        plan.puts.push(encode(&row));
    }
    let n = plan.puts.len();
    (n > 0).then_some((plan, n))
}

/// Re-issues the blocked row `row_id` under `new_id` (§7), with `body` replacing its body
/// when given, re-pointing the rows that waited for it. `scope_rows` are the rows of its
/// `(owner, target)` scope (rows outside it are ignored). `None` when the row is not a
/// blocked row of `owner`.
#[must_use]
pub fn plan_retry_blocked(
    owner: &str,
    row_id: &str,
    body: Option<&Value>,
    scope_rows: &[Value],
    new_id: &str,
) -> Option<ReplacePlan> {
    let raw = find_stored(scope_rows, row_id)?;
    let mut row = decode(raw).ok()?;
    if !owns(owner, &row) || row.state != RowState::Blocked {
        return None;
    }
    if let Some(b) = body {
        row.body = b.clone();
    }
    // §11: only the row's own (owner, target) scope is compared and re-pointed.
    Some(reissue_plan(&row, scope_rows, &reissued(&row, new_id)))
}

/// Why `discard` removed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardSkip {
    /// No such row.
    Missing,
    /// The row belongs to another owner (or, undecodable, its owner differs).
    OtherOwner,
    /// The row is in flight; its answer must land first.
    InFlight,
}

/// Removes one row (decodable or not) of `owner`; `owner` `None` matches an undecodable
/// row whose owner cannot be read.
///
/// # Errors
/// [`DiscardSkip`] when nothing may be removed.
pub fn plan_discard(
    owner: Option<&str>,
    raw: Option<&Value>,
    now: Millis,
    lease_ms: i64,
) -> Result<ReplacePlan, DiscardSkip> {
    let raw = raw.ok_or(DiscardSkip::Missing)?;
    if let Ok(row) = decode(raw) {
        if in_flight(&row, now, lease_ms).is_in_flight() {
            return Err(DiscardSkip::InFlight);
        }
    }
    // The id and owner as stored, decodable or not (a decoded row's are these strings).
    if !same_owner(owner, stored_owner(raw)) {
        return Err(DiscardSkip::OtherOwner);
    }
    let id = raw.get("id").and_then(Value::as_str).ok_or(DiscardSkip::Missing)?.to_owned();
    Ok(ReplacePlan {
        scopes: vec![Scope::Id(id.clone())],
        expected: vec![raw.clone()],
        deletes: vec![id],
        ..Default::default()
    })
}

/// Removes every decodable row of `owner` (logout); undecodable rows are kept (§3).
#[must_use]
pub fn plan_purge_owner(owner: &str, owner_rows: &[Value]) -> Option<(ReplacePlan, usize)> {
    let mut plan = owner_range_plan(owner, owner_rows);
    for raw in &plan.expected {
        if let Ok(row) = decode(raw) {
            plan.deletes.push(row.id);
        }
    }
    let n = plan.deletes.len();
    (n > 0).then_some((plan, n))
}

/// The start of an owner-wide plan: the owner's whole range ([`Scope::Owner`]) as read,
/// every row of it expected as it is (decodable or not). A change of any of them since the
/// read makes the replace stale, and the command plans again on what it finds.
fn owner_range_plan(owner: &str, owner_rows: &[Value]) -> ReplacePlan {
    let scope = Scope::Owner(owner.to_owned());
    let expected = in_scope_copied(&scope, owner_rows);
    ReplacePlan { scopes: vec![scope], expected, ..Default::default() }
}
